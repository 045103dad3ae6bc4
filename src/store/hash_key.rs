//! The key of keyed hashes, kept outside the database so that a copy of the
//! database alone is no oracle for guessing short secrets: in `<db>.key`
//! beside it (created with mode 0600 on first use, written atomically), or
//! in a file the user names (a mounted Kubernetes Secret), which is only
//! ever read. The database records each key's id (see
//! [`crate::canon::keyed_hash`]) with every run, so a run with another key
//! fails unless it says it starts a new one, and with every revision that
//! holds keyed hashes, so comparisons across keys know they are none.
//!
//! Only runs hash new values: every other command reads a database without
//! its key.

use super::recorder::HashKeyLoad;
use super::sql::Sql;
use super::StoreError;
use crate::canon::keyed_hash::{HashKey, KEY_LEN};
use std::cell::OnceCell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a run finds its key, and whether it starts a new one.
#[derive(Clone, Debug, Default)]
pub struct HashKeyOptions {
    /// A key file to read (never written); `None`: `<db>.key`.
    pub file: Option<PathBuf>,
    /// Start a new key: a new random one in `<db>.key`, or the one a named
    /// file holds, which must differ from the database's.
    pub new: bool,
}

/// What loading the key did that a user should hear of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyNotice {
    /// An older database's key moved out of it into `file`.
    Moved { db: PathBuf, file: PathBuf },
    /// `--new-hash-key` started key `id`.
    Started { file: PathBuf, id: String },
}

impl std::fmt::Display for KeyNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyNotice::Moved { db, file } => write!(
                f,
                "moved the hash key out of database {} into {}: keep that file with the database (runs need it)",
                db.display(),
                file.display()
            ),
            KeyNotice::Started { file, id } => write!(
                f,
                "started hash key {id} ({}): hashes of secrets taken before it do not compare with later ones",
                file.display()
            ),
        }
    }
}

/// Why a run has no key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the hash key file {file} of database {db} is missing: restore it (from the database's backup), or pass --new-hash-key to start a new key")]
    Missing { db: PathBuf, file: PathBuf },
    #[error("hash key file {file} does not exist (a named key file is only read: create it with `openssl rand -hex 32 > {file}`)")]
    NamedAbsent { file: PathBuf },
    #[error("hash key file {file} does not exist and database {db} still holds its key (written by an older version): run once without --hash-key-file to move the key into {db}.key, then put that file at {file}")]
    NamedAbsentLegacy { db: PathBuf, file: PathBuf },
    #[error("hash key file {file} is damaged: it holds {bytes} bytes, neither {KEY_LEN} raw bytes nor {} hex digits", 2 * KEY_LEN)]
    Damaged { file: PathBuf, bytes: usize },
    #[error("hash key file {file} holds key {found}, but database {db} was last hashed with key {expected}: restore that key's file, or pass --new-hash-key to start a new key")]
    Mismatch {
        db: PathBuf,
        file: PathBuf,
        found: String,
        expected: String,
    },
    #[error("database {db} still holds its hash key (written by an older version) and {file} holds another one; not overwriting it: move {file} away and run again to move the database's key there")]
    Conflict { db: PathBuf, file: PathBuf },
    #[error("--new-hash-key: hash key file {file} holds key {id}, which database {db} already uses; put a new key in it (`openssl rand -hex 32`)")]
    NotNew { db: PathBuf, file: PathBuf, id: String },
    #[error("hash key file {file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
    #[error("a run needs the hash key: load it before the run begins")]
    NotLoaded,
}

/// What [`load`] asks a backend besides its [`Sql`].
pub(super) trait KeyRecords: Sql {
    /// The key file when none is named.
    fn default_file(&self) -> PathBuf;
    /// Where the loaded key is kept for this handle.
    fn loaded_key(&self) -> &OnceCell<HashKey>;
    /// The key an older version kept in the database.
    fn legacy_key(&self) -> Result<Option<HashKey>, StoreError> {
        Ok(None)
    }
    /// Moves the legacy key out of the database for good.
    fn drop_legacy_key(&self, _legacy: &HashKey) -> Result<(), StoreError> {
        Ok(())
    }
}

impl<T: KeyRecords + ?Sized> HashKeyLoad for T {
    fn load_hash_key(&self, options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError> {
        let (key, notice) = load(self, options)?;
        // A second load of one handle keeps the first key.
        let _ = self.loaded_key().set(key);
        Ok(notice)
    }

    fn hash_key(&self) -> Result<&HashKey, StoreError> {
        self.loaded_key()
            .get()
            .ok_or(StoreError::Key(KeyError::NotLoaded))
    }
}

/// The id of the key the newest run that recorded one hashed with.
fn newest_key_id<T: Sql + ?Sized>(db: &T) -> Result<Option<String>, StoreError> {
    let rows = db.rows(
        "runs",
        "SELECT hash_key FROM runs WHERE hash_key IS NOT NULL ORDER BY id DESC LIMIT 1",
        &[],
    )?;
    rows.first()
        .map(|row| db.typed("runs").text(&row[0], "hash_key"))
        .transpose()
}

fn random_key<T: KeyRecords + ?Sized>(db: &T) -> Result<HashKey, StoreError> {
    HashKey::random().map_err(|e| crate::store::StoreError::Io {
        path: db.location().to_path_buf(),
        source: std::io::Error::other(format!("no randomness for the hash key: {e}")),
    })
}

/// The key a run of `db` hashes with, as `options` say, and what a user
/// should hear of it. An older database's key moves out first: into the
/// default file (or a named file already holding it), then its row is
/// deleted and overwritten.
fn load<T: KeyRecords + ?Sized>(
    db: &T,
    options: &HashKeyOptions,
) -> Result<(HashKey, Option<KeyNotice>), StoreError> {
    let file = options.file.clone().unwrap_or_else(|| db.default_file());
    let named = options.file.is_some();
    let location = db.location().to_path_buf();
    // The database first, then the file: a run records its key only after
    // its file exists, so a key the database names is on disk by now,
    // even when another first run (into the same server) made it since.
    let expected = newest_key_id(db)?;
    let mut on_disk = read(&file)?;
    let mut notice = None;
    if let Some(legacy) = db.legacy_key()? {
        match &on_disk {
            Some(k) if *k == legacy => {}
            Some(_) => return Err(KeyError::Conflict { db: location, file }.into()),
            None if named => return Err(KeyError::NamedAbsentLegacy { db: location, file }.into()),
            None => write(&file, &legacy)?,
        }
        db.drop_legacy_key(&legacy)?;
        on_disk = Some(legacy);
        notice = Some(KeyNotice::Moved {
            db: location.clone(),
            file: file.clone(),
        });
    }
    let key = match (options.new, on_disk) {
        (true, Some(k)) if named => {
            if expected.as_deref() == Some(&k.id()) {
                return Err(KeyError::NotNew {
                    db: location,
                    file,
                    id: k.id(),
                }
                .into());
            }
            k
        }
        (_, None) if named => return Err(KeyError::NamedAbsent { file }.into()),
        (true, _) => {
            let k = random_key(db)?;
            write(&file, &k)?;
            k
        }
        (false, Some(k)) => match expected {
            Some(expected) if expected != k.id() => {
                return Err(KeyError::Mismatch {
                    db: location,
                    file,
                    found: k.id(),
                    expected,
                }
                .into())
            }
            _ => k,
        },
        (false, None) if expected.is_some() => return Err(KeyError::Missing { db: location, file }.into()),
        // The first run: a new key, unless another first run (of another
        // cluster, into the same server) wrote one meanwhile.
        (false, None) => {
            let k = random_key(db)?;
            match create(&file, &k)? {
                true => k,
                false => read(&file)?.ok_or_else(|| KeyError::NamedAbsent { file: file.clone() })?,
            }
        }
    };
    if options.new {
        notice = Some(KeyNotice::Started { file, id: key.id() });
    }
    Ok((key, notice))
}

/// `<db>.key`.
pub fn beside(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The key in `file`; `None` when there is no such file.
pub(super) fn read(file: &Path) -> Result<Option<HashKey>, KeyError> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(KeyError::Io {
                file: file.into(),
                source,
            })
        }
    };
    HashKey::from_file(&bytes)
        .map(Some)
        .map_err(|bytes| KeyError::Damaged {
            file: file.into(),
            bytes,
        })
}

/// Writes `key` to `file` (mode 0600): a temporary file beside it, synced,
/// renamed over it, and the folder synced, so the file is never half a key.
pub(super) fn write(file: &Path, key: &HashKey) -> Result<(), KeyError> {
    put(file, key, true).map(|_| ())
}

/// Writes `key` into `file` unless a file is there: whether it wrote.
fn create(file: &Path, key: &HashKey) -> Result<bool, KeyError> {
    put(file, key, false)
}

/// Writes `key` into `file` atomically (temporary file, fsync, then a
/// rename that replaces, or a link that does not): whether it wrote.
fn put(file: &Path, key: &HashKey, replace: bool) -> Result<bool, KeyError> {
    let io = |source| KeyError::Io {
        file: file.into(),
        source,
    };
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp_name = file.file_name().unwrap_or(file.as_os_str()).to_owned();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(&tmp)?;
        f.write_all(key.file_text().as_bytes())?;
        f.sync_all()?;
        if replace {
            std::fs::rename(&tmp, file)?;
        } else {
            let linked = std::fs::hard_link(&tmp, file);
            std::fs::remove_file(&tmp)?;
            match linked {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
                other => other?,
            }
        }
        std::fs::File::open(dir)?.sync_all()?;
        Ok(true)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

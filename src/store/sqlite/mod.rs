//! The SQLite backend: one file holds any number of runs against any number
//! of clusters; the schema changes only through `migrations/`. Every SQL
//! statement, PRAGMA and rusqlite type of the store lives in this module.

mod cells;
mod hash_key;
mod legacy_paths;
mod shortfall;
mod sql;

use super::StoreError;
use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{Migrations, M};
use std::fs::File;
use std::path::{Path, PathBuf};

fn missing(path: &Path) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such database (run `etcd-inspector snapshot` first)",
        ),
    }
}

// `MIGRATION_FILES`: `migrations/*.sql` in the order applied.
include!(concat!(env!("OUT_DIR"), "/sqlite_migrations.rs"));

/// How many migrations there are: the schema version (SQLite's
/// `user_version`) of a database this binary has upgraded.
const MIGRATION_COUNT: usize = MIGRATION_FILES.len();

/// The migrations, applied in order when a database is opened; the one
/// that interns field paths rewrites the paths stored before it.
fn migrations() -> Migrations<'static> {
    let step = |&(name, sql): &(&str, &'static str)| match name {
        "0014_field_paths.sql" => M::up_with_hook(sql, legacy_paths::rewrite),
        _ => M::up(sql),
    };
    Migrations::new(MIGRATION_FILES.iter().map(step).collect())
}

/// An open database.
pub struct Store {
    pub(in crate::store) conn: Connection,
    pub(in crate::store) path: PathBuf,
    /// Held while this process writes runs; released on drop.
    _lock: Option<File>,
    /// The key this handle's runs hash with, once loaded.
    hash_key: std::cell::OnceCell<crate::canon::keyed_hash::HashKey>,
}

impl Store {
    /// Runs `f` in one write transaction: committed when it succeeds,
    /// rolled back when it fails, so the database keeps all of it or none.
    fn in_transaction<T, E: From<StoreError>>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))?;
        match f() {
            Ok(value) => {
                self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// The error for a stored value that cannot be what its column holds:
    /// the database is damaged (`column` is `table.column`).
    fn damaged(&self, column: &str, problem: impl std::fmt::Display) -> StoreError {
        StoreError::Damaged {
            path: self.path.clone(),
            what: format!("{column}: {problem}"),
        }
    }

    pub(in crate::store) fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Backend {
            path: self.path.clone(),
            source: Box::new(source),
        }
    }

    /// Opens (creating with mode 0600 if needed) and upgrades the database.
    fn open_inner(path: &Path, lock: Option<File>, migrate: bool) -> Result<Store, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        if !path.exists() {
            let mut opts = std::fs::OpenOptions::new();
            opts.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
            match opts.open(path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
        let sql = |source: rusqlite::Error| StoreError::Backend {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(sql)?;
        // Only the connection that upgrades the schema sets the journal
        // mode (a database remembers it): switching a database a starting
        // writer is creating takes the writer's lock, and the two can
        // deadlock, failing the writer with "database is locked".
        if migrate {
            conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        // 32 MiB of page cache (negative: KiB): batches of inserts into
        // indexed tables otherwise re-read pages from the file.
        conn.pragma_update(None, "cache_size", -32768).map_err(sql)?;
        // Checkpoint the WAL every 64 MiB instead of every 4 MiB: pages a
        // snapshot rewrites often (index interiors) are copied back once.
        conn.pragma_update(None, "wal_autocheckpoint", 16384)
            .map_err(sql)?;
        let found: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        if found > MIGRATION_COUNT as i64 {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                known: MIGRATION_COUNT as i64,
            });
        }
        if migrate {
            migrations()
                .to_latest(&mut conn)
                .map_err(|source| StoreError::Migrate {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                })?;
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            _lock: lock,
            hash_key: std::cell::OnceCell::new(),
        })
    }

    /// Opens the database to write a run, holding `<db>.lock` so that a
    /// second writer fails clearly instead of interleaving.
    pub fn open_for_writing(path: &Path) -> Result<Store, StoreError> {
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let lock = opts.open(&lock_path).map_err(|source| StoreError::Io {
            path: lock_path.clone(),
            source,
        })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Busy {
                    path: path.to_path_buf(),
                    lock: lock_path,
                })
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StoreError::Io {
                    path: lock_path,
                    source,
                })
            }
        }
        let store = Store::open_inner(path, Some(lock), true)?;
        store.abandon_stale_runs()?;
        Ok(store)
    }

    /// Opens an existing database to change it (`analyze`, `prune`): a
    /// missing file is an error, not a new empty database.
    pub fn open_existing_for_writing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(missing(path));
        }
        Store::open_for_writing(path)
    }

    /// Opens an existing database to read it. A database of this tool's
    /// schema is opened read-only, so that a copy kept as evidence in a
    /// read-only directory reads as well as the original; an older one is
    /// upgraded first, which needs write access.
    pub fn open_for_reading(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(missing(path));
        }
        if let Some(store) = Store::open_read_only(path)? {
            return Ok(store);
        }
        // A writer upgrades the schema itself; a reader upgrades it only when
        // no writer holds the lock (both doing it at once would collide).
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let writer_active = std::fs::File::open(&lock_path)
            .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)));
        Store::open_inner(path, None, !writer_active)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The database opened read-only, or `None` when its schema is older
    /// than this tool's. SQLite reads a WAL-mode database read-only through
    /// its `-shm` file, which it must be able to create; where it cannot
    /// (a read-only directory) and no `-wal` file holds writes not yet in
    /// the database, the file is read as immutable, as nothing can be
    /// writing it.
    fn open_read_only(path: &Path) -> Result<Option<Store>, StoreError> {
        let sql = |source: rusqlite::Error| StoreError::Backend {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        let flags =
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let version = |conn: &Connection| conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
        let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
        let (conn, found) = match version(&conn) {
            Ok(found) => (conn, found),
            Err(first) => {
                let wal = std::fs::metadata(format!("{}-wal", path.display()));
                if wal.is_ok_and(|m| m.len() > 0) {
                    return Err(sql(first));
                }
                let conn = Connection::open_with_flags(immutable_uri(path), flags).map_err(sql)?;
                let found = version(&conn).map_err(sql)?;
                (conn, found)
            }
        };
        if found > MIGRATION_COUNT as i64 {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                known: MIGRATION_COUNT as i64,
            });
        }
        if found < MIGRATION_COUNT as i64 {
            return Ok(None);
        }
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        conn.pragma_update(None, "cache_size", -32768).map_err(sql)?;
        Ok(Some(Store {
            conn,
            path: path.to_path_buf(),
            _lock: None,
            hash_key: std::cell::OnceCell::new(),
        }))
    }
}

/// The SQLite URI that opens `path` as a file nothing changes.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() => uri.push(*b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri + "?immutable=1"
}

/// Writes `sql` into the database file at `path` through a connection of
/// its own with CHECK constraints off: damage as a file can hold it.
#[cfg(test)]
pub(in crate::store) fn damage(path: &Path, sql: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(&format!("PRAGMA ignore_check_constraints = ON; {sql}"))
        .unwrap();
}

impl crate::store::reader::Located for Store {
    fn location(&self) -> &Path {
        self.path()
    }
}

#[cfg(test)]
use crate::source::Record;

/// A test's record of `object` as JSON under `key`, in generation
/// `create_revision`.
#[cfg(test)]
pub(in crate::store) fn test_record(
    key: &str,
    mod_revision: i64,
    create_revision: i64,
    object: &serde_json::Value,
) -> Record {
    Record {
        key: key.as_bytes().to_vec(),
        mod_revision: crate::source::Revision(mod_revision),
        create_revision: crate::source::Revision(create_revision),
        version: mod_revision - create_revision + 1,
        lease: 0,
        value: serde_json::to_vec(object).unwrap(),
        deleted: false,
    }
}

/// A test's own run: every resource, the default field settings, a new
/// hash key; the cluster's row id, the run and the field settings.
#[cfg(test)]
pub(in crate::store) fn test_run(
    store: &Store,
) -> (
    crate::store::ClusterId,
    crate::store::RunId,
    crate::canon::semantic::FieldConfig,
) {
    let store: &dyn crate::store::RunRecorder = store;
    store.load_hash_key(&Default::default()).unwrap();
    let run = store
        .begin_run(crate::store::RunKind::Live, "test", "/registry/", "")
        .unwrap();
    let (cluster, _) = store.cluster("test", None).unwrap();
    (cluster, run, store.field_config(None, &[]).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reader::RunReads;

    #[test]
    fn creates_private_file_and_refuses_a_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let first = Store::open_for_writing(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let second = Store::open_for_writing(&path)
            .err()
            .expect("second writer refused");
        assert!(matches!(second, StoreError::Busy { .. }), "{second}");
        drop(first);
        Store::open_for_writing(&path).unwrap();
    }

    #[test]
    fn a_reader_leaves_a_database_being_created_to_its_writer() {
        // `follow` creating its database while `history` polls it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let lock = File::create(dir.path().join("db.sqlite.lock")).unwrap();
        lock.try_lock().unwrap();
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("BEGIN IMMEDIATE; CREATE TABLE migrating (x)")
            .unwrap();
        // Switching the file to WAL would wait for the writer's transaction.
        let reader = Store::open_for_reading(&path).unwrap();
        writer.execute_batch("COMMIT").unwrap();
        let tables: i64 = reader
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'migrating'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 1);
    }

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    #[test]
    fn a_database_from_an_older_version_upgrades_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            // What the first release wrote: only the first migration.
            let mut conn = Connection::open(&path).unwrap();
            Migrations::new(vec![M::up(include_str!(
                "../../../migrations/0001_runs_keys_revisions.sql"
            ))])
            .to_latest(&mut conn)
            .unwrap();
            conn.execute(
                "INSERT INTO runs (source, prefix, started_at, status, tool_version, pid) \
                 VALUES ('http://old:2379', '/registry/', '2026-01-01T00:00:00Z', 'complete', '0.0.1', 1)",
                [],
            )
            .unwrap();
        }
        let store = Store::open_for_reading(&path).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(
            (runs.len(), runs[0].source.as_str(), runs[0].file.is_none()),
            (1, "http://old:2379", true)
        );
        let version: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATION_COUNT);
    }

    #[test]
    fn a_database_from_a_newer_version_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.sqlite");
        drop(Store::open_for_writing(&path).unwrap());
        let newer = MIGRATION_COUNT + 1;
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", newer)
            .unwrap();
        for opened in [Store::open_for_reading(&path), Store::open_for_writing(&path)] {
            let message = opened.err().expect("refused").to_string();
            assert_eq!(
                message,
                format!(
                    "database {} was written by a newer etcd-inspector (schema version {newer}; this one knows up to {MIGRATION_COUNT}): use that version or newer",
                    path.display()
                )
            );
        }
    }
}

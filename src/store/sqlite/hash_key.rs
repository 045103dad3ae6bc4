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

use super::Store;
use crate::canon::keyed_hash::{HashKey, KEY_LEN};
use crate::store::hash_key::{beside, KeyRecords};
use crate::store::StoreError;
use rusqlite::OptionalExtension;
use std::path::PathBuf;

/// The `settings` row where versions before the key file kept the key.
const LEGACY_ROW: &str = "value_hmac_key";

impl KeyRecords for Store {
    fn default_file(&self) -> PathBuf {
        beside(&self.path)
    }

    fn loaded_key(&self) -> &std::cell::OnceCell<HashKey> {
        &self.hash_key
    }

    /// The key an older version kept in the database.
    fn legacy_key(&self) -> Result<Option<HashKey>, StoreError> {
        let stored: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT value FROM settings WHERE name = ?1", [LEGACY_ROW], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        stored
            .map(|bytes| {
                HashKey::from_bytes(&bytes).map_err(|n| {
                    self.damaged(
                        "settings.value_hmac_key",
                        format!("a hash key of {n} bytes, not {KEY_LEN}"),
                    )
                })
            })
            .transpose()
    }

    /// Records the legacy key's id where earlier runs and their keyed
    /// revisions need it, deletes its row with the deleted bytes zeroed,
    /// and checkpoints the WAL into the file and empties it, so the key's
    /// bytes are in neither file.
    fn drop_legacy_key(&self, legacy: &HashKey) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let id = legacy.id();
        self.conn
            .pragma_update(None, "secure_delete", true)
            .map_err(err)?;
        let dropped = self.in_transaction(|| {
            self.conn
                .execute("UPDATE runs SET hash_key = ?1 WHERE hash_key IS NULL", [&id])
                .map_err(err)?;
            self.conn
                .execute(
                    "UPDATE revisions SET hash_key = ?1 WHERE hash_key IS NULL AND (value_hash = 'hmac-sha256' \
                     OR semantic_sha256 IN (SELECT hash FROM semantic_values WHERE keyed = 1))",
                    [&id],
                )
                .map_err(err)?;
            self.conn
                .execute("DELETE FROM settings WHERE name = ?1", [LEGACY_ROW])
                .map_err(err)?;
            Ok::<_, StoreError>(())
        });
        self.conn
            .pragma_update(None, "secure_delete", false)
            .map_err(err)?;
        dropped?;
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::hash_key::{read, HashKeyOptions, KeyError, KeyNotice};
    use crate::store::recorder::HashKeyLoad;
    use crate::store::recorder::RunWrites;
    use std::path::{Path, PathBuf};

    fn open(dir: &tempfile::TempDir) -> (Store, PathBuf) {
        let db = dir.path().join("db.sqlite");
        (Store::open_for_writing(&db).unwrap(), db)
    }

    /// Loads the key with `options` and begins a run with it.
    fn run(db: &Path, options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError> {
        let store = Store::open_for_writing(db)?;
        let notice = store.load_hash_key(options)?;
        store.begin_run(crate::store::RunKind::Live, "test", "/registry/", "")?;
        Ok(notice)
    }

    fn key_error(r: Result<Option<KeyNotice>, StoreError>) -> KeyError {
        match r {
            Err(StoreError::Key(e)) => e,
            other => panic!("a key error expected: {other:?}"),
        }
    }

    #[test]
    fn the_first_run_creates_a_private_key_file_and_later_runs_reuse_it() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = open(&dir);
        assert_eq!(store.load_hash_key(&HashKeyOptions::default()).unwrap(), None);
        let key = store.hash_key().unwrap().clone();
        let file = beside(&db);
        assert_eq!(read(&file).unwrap(), Some(key.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store
            .begin_run(crate::store::RunKind::Live, "test", "/registry/", "")
            .unwrap();
        drop(store);
        let again = Store::open_for_writing(&db).unwrap();
        again.load_hash_key(&HashKeyOptions::default()).unwrap();
        assert_eq!(again.hash_key().unwrap(), &key);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_missing_or_foreign_key_file_refuses_a_run_until_a_new_key_is_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let (_, db) = open(&dir);
        run(&db, &HashKeyOptions::default()).unwrap();
        let file = beside(&db);
        std::fs::remove_file(&file).unwrap();
        let e = key_error(run(&db, &HashKeyOptions::default()));
        assert!(matches!(e, KeyError::Missing { .. }), "{e}");
        assert!(!file.exists(), "no key is made up in its place");
        std::fs::write(&file, HashKey::random().unwrap().file_text()).unwrap();
        let e = key_error(run(&db, &HashKeyOptions::default()));
        assert!(matches!(e, KeyError::Mismatch { .. }), "{e}");
        let new = HashKeyOptions {
            file: None,
            new: true,
        };
        let notice = run(&db, &new).unwrap();
        assert!(matches!(notice, Some(KeyNotice::Started { .. })), "{notice:?}");
        run(&db, &HashKeyOptions::default()).unwrap();
    }

    #[test]
    fn a_named_file_is_only_read() {
        let dir = tempfile::tempdir().unwrap();
        let (_, db) = open(&dir);
        let file = dir.path().join("secret/hash.key");
        let named = |new| HashKeyOptions {
            file: Some(file.clone()),
            new,
        };
        let e = key_error(run(&db, &named(false)));
        assert!(matches!(e, KeyError::NamedAbsent { .. }), "{e}");
        let e = key_error(run(&db, &named(true)));
        assert!(matches!(e, KeyError::NamedAbsent { .. }), "{e}");
        std::fs::create_dir(file.parent().unwrap()).unwrap();
        let key = HashKey::random().unwrap();
        std::fs::write(&file, key.file_text().trim()).unwrap();
        run(&db, &named(false)).unwrap();
        assert!(!beside(&db).exists());
        let e = key_error(run(&db, &named(true)));
        assert!(matches!(e, KeyError::NotNew { .. }), "{e}");
        // A rotated Secret: its key starts anew only when asked to.
        std::fs::write(&file, HashKey::random().unwrap().file_text()).unwrap();
        let e = key_error(run(&db, &named(false)));
        assert!(matches!(e, KeyError::Mismatch { .. }), "{e}");
        run(&db, &named(true)).unwrap();
    }

    #[test]
    fn a_key_of_the_wrong_length_is_damage_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let (_, db) = open(&dir);
        let file = beside(&db);
        std::fs::write(&file, "abc\n").unwrap();
        let e = key_error(run(&db, &HashKeyOptions::default()));
        assert!(matches!(e, KeyError::Damaged { bytes: 4, .. }), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"abc\n", "left as it was");
        std::fs::remove_file(&file).unwrap();
        super::super::damage(
            &db,
            "INSERT INTO settings (name, value) VALUES ('value_hmac_key', x'0102')",
        );
        let e = run(&db, &HashKeyOptions::default()).unwrap_err().to_string();
        assert!(
            e.contains("damaged: settings.value_hmac_key: a hash key of 2 bytes, not 32"),
            "{e}"
        );
        assert!(!file.exists());
    }

    #[test]
    fn an_older_database_s_key_moves_out_and_its_bytes_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (store, db) = open(&dir);
        let legacy = [0x5a_u8; 32].map(|b| b ^ 0x33);
        super::super::damage(
            &db,
            &format!(
                "INSERT INTO settings (name, value) VALUES ('value_hmac_key', x'{}'); \
                 INSERT INTO runs (source, prefix, started_at, status, tool_version, pid) \
                 VALUES ('old', '/registry/', 1767225600000000, 'complete', '0.1.0', 1)",
                crate::hex::hex(&legacy)
            ),
        );
        drop(store);
        let found = |bytes: &[u8]| bytes.windows(32).any(|w| w == legacy);
        assert!(
            found(&std::fs::read(&db).unwrap())
                || found(&std::fs::read(dir.path().join("db.sqlite-wal")).unwrap())
        );
        let notice = run(&db, &HashKeyOptions::default()).unwrap();
        assert!(matches!(notice, Some(KeyNotice::Moved { .. })), "{notice:?}");
        let key = HashKey::from_bytes(&legacy).unwrap();
        assert_eq!(read(&beside(&db)).unwrap(), Some(key.clone()));
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path != beside(&db) {
                assert!(
                    !found(&std::fs::read(&path).unwrap()),
                    "the key is in {}",
                    path.display()
                );
            }
        }
        let store = Store::open_for_reading(&db).unwrap();
        let ids: Vec<Option<String>> = store
            .conn
            .prepare("SELECT hash_key FROM runs ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            ids,
            [Some(key.id()), Some(key.id())],
            "the old run and the new one"
        );
    }

    #[test]
    fn an_older_database_s_key_never_overwrites_another_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let (_, db) = open(&dir);
        super::super::damage(
            &db,
            &format!(
                "INSERT INTO settings (name, value) VALUES ('value_hmac_key', x'{}')",
                "11".repeat(32)
            ),
        );
        let other = HashKey::random().unwrap().file_text();
        std::fs::write(beside(&db), &other).unwrap();
        let e = key_error(run(&db, &HashKeyOptions::default()));
        assert!(matches!(e, KeyError::Conflict { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(beside(&db)).unwrap(), other);
    }
}

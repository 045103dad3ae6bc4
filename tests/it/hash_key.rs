//! The key of keyed hashes lives outside the database, through the binary:
//! `<db>.key` created private on the first run and reused; a run without
//! it refuses in one line while reading commands go on; `--new-hash-key`
//! starts a new key and the break shows in `runs`, `history` and `diff`;
//! `--hash-key-file` is only read; an older database's key moves out.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::secret;
use crate::util::{
    history, inspector, json, ok, one_line_error, postgres_backend, runs, snapshot, sqlite_only, stderr,
    temp_db,
};
use std::path::{Path, PathBuf};

const KEY: &str = "/registry/secrets/shop/db";

/// `(change_class, change_cause)` of each stored revision of the Secret.
fn classes(db: &Path) -> Vec<(String, Option<String>)> {
    history(db, KEY)
        .iter()
        .map(|h| {
            (
                h["change_class"].as_str().unwrap().to_string(),
                h["change_cause"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// Each run's hash key id.
fn run_keys(db: &Path) -> Vec<String> {
    runs(db)
        .iter()
        .map(|r| r["hash_key"].as_str().unwrap().to_string())
        .collect()
}

/// Whether the 32 bytes of the key in `key_file` are in any file of the
/// database other than the key file.
fn key_bytes_in_database(db: &Path, key_file: &Path) -> bool {
    let text = std::fs::read_to_string(key_file).unwrap();
    let key = etcd_inspector::hex::unhex(text.trim()).unwrap();
    assert_eq!(key.len(), 32);
    let name = db.file_name().unwrap().to_str().unwrap();
    std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != key_file && p.file_name().unwrap().to_str().unwrap().starts_with(name))
        .any(|p| std::fs::read(&p).unwrap().windows(32).any(|w| w == key))
}

/// A Secret written and a first run of a new database recording it: the
/// etcd, the database's folder and path, and the stored Secret.
fn first_run() -> (TestEtcd, tempfile::TempDir, PathBuf, Vec<u8>) {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let value = secret("shop", "db", "uid-s", "hunter2");
    etcd.put(KEY, &value);
    ok(snapshot(&etcd, &db, &[]));
    (etcd, dir, db, value)
}

#[test]
fn a_run_keeps_its_key_beside_the_database_and_a_new_key_marks_the_break() {
    if sqlite_only("the key file is <db>.key beside a SQLite file") {
        return;
    }
    let (etcd, dir, db, value) = first_run();
    let key_file = dir.path().join("db.sqlite.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let first_key = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(first_key.len(), 65, "64 hex digits and a newline");
    assert!(!key_bytes_in_database(&db, &key_file));

    // The same bytes again: the second run's key compares with the first's.
    etcd.put(KEY, &value);
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), first_key);
    assert_eq!(
        classes(&db),
        [("create".to_string(), None), ("rewrite".to_string(), None)]
    );

    // Without its key a run refuses, and makes up no key; reading goes on.
    std::fs::remove_file(&key_file).unwrap();
    etcd.put(KEY, &secret("shop", "db", "uid-s", "hunter3"));
    let err = one_line_error(&snapshot(&etcd, &db, &[]));
    assert!(
        err.contains(&format!(
            "the hash key file {} of database {} is missing: restore it",
            key_file.display(),
            db.display()
        )) && err.contains("or pass --new-hash-key to start a new key"),
        "{err}"
    );
    assert!(!key_file.exists());
    assert_eq!(runs(&db).len(), 2, "no run is recorded");
    for read in [
        &["history", KEY][..],
        &["findings"],
        &["stats"],
        &["report"],
        &["diff", "1", "2"],
    ] {
        ok(inspector(&db, read));
    }

    // A new key: the break is recorded, and nothing across it compares.
    let out = ok(snapshot(&etcd, &db, &["--new-hash-key"]));
    assert!(stderr(&out).contains("started hash key"), "{}", stderr(&out));
    let second_key = std::fs::read_to_string(&key_file).unwrap();
    assert_ne!(second_key, first_key);
    let keys = run_keys(&db);
    assert_eq!(
        (keys.len(), keys[0] == keys[1], keys[1] == keys[2]),
        (3, true, false)
    );
    assert_eq!(
        classes(&db)[2],
        ("unknown".to_string(), Some("hash-key".to_string()))
    );
    let diff = json(inspector(&db, &["diff", "2", "3", "-o", "json"]));
    let objects = diff["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "{diff}");
    assert_eq!(objects[0]["change"], "not-comparable");
    assert_eq!(diff["summary"]["secrets"]["not_comparable"], 1);
    let table = ok(inspector(&db, &["diff", "2", "3"]));
    assert!(
        String::from_utf8_lossy(&table.stdout)
            .contains("not comparable Secret shop/db: its secrets are hashed under another hash key"),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );
    // The next run compares with this one again.
    etcd.put(KEY, &secret("shop", "db", "uid-s", "hunter3"));
    ok(snapshot(&etcd, &db, &[]));
    assert_eq!(classes(&db)[3], ("rewrite".to_string(), None));
}

#[test]
fn a_named_key_file_is_read_never_created_and_must_hold_a_key() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    etcd.put(KEY, &secret("shop", "db", "uid-s", "hunter2"));
    let named = dir.path().join("hash.key");
    let flag = format!("--hash-key-file={}", named.display());
    let err = one_line_error(&snapshot(&etcd, &db, &[&flag]));
    assert!(
        err.contains(&format!("hash key file {} does not exist", named.display())),
        "{err}"
    );
    assert!(!named.exists());
    std::fs::write(&named, "not a key\n").unwrap();
    let err = one_line_error(&snapshot(&etcd, &db, &[&flag]));
    assert!(
        err.contains("is damaged: it holds 10 bytes, neither 32 raw bytes nor 64 hex digits"),
        "{err}"
    );
    // As `openssl rand -hex 32` writes it, and set through the environment.
    std::fs::write(&named, format!("{}\n", "ab".repeat(32))).unwrap();
    ok(crate::util::snapshot_with_env(
        &etcd,
        &db,
        &[("ETCD_INSPECTOR_HASH_KEY_FILE", named.as_os_str())],
        &[],
    ));
    if !postgres_backend() {
        assert!(!dir.path().join("db.sqlite.key").exists());
    }
    assert_eq!(
        std::fs::read_to_string(&named).unwrap(),
        format!("{}\n", "ab".repeat(32))
    );
    // The database's key is that file's: the default file is not it.
    let err = one_line_error(&snapshot(&etcd, &db, &[]));
    assert!(err.contains("is missing"), "{err}");
}

#[test]
fn an_older_database_s_key_moves_out_of_it_on_the_first_run() {
    if sqlite_only("older releases wrote only SQLite databases") {
        return;
    }
    let (etcd, dir, db, value) = first_run();
    let key_file = dir.path().join("db.sqlite.key");
    // What an older version left: the key in `settings`, no ids, no file.
    let text = std::fs::read_to_string(&key_file).unwrap();
    let key = etcd_inspector::hex::unhex(text.trim()).unwrap();
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO settings (name, value) VALUES ('value_hmac_key', ?1)",
            [&key],
        )
        .unwrap();
        conn.execute_batch("UPDATE runs SET hash_key = NULL; UPDATE revisions SET hash_key = NULL")
            .unwrap();
    }
    std::fs::remove_file(&key_file).unwrap();
    assert!(key_bytes_in_database(&db, &{
        std::fs::write(&key_file, &text).unwrap();
        key_file.clone()
    }));
    std::fs::remove_file(&key_file).unwrap();

    etcd.put(KEY, &value);
    let out = ok(snapshot(&etcd, &db, &[]));
    let moved = format!(
        "moved the hash key out of database {} into {}",
        db.display(),
        key_file.display()
    );
    let err = stderr(&out);
    assert_eq!(err.lines().filter(|l| l.contains(&moved)).count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), text);
    assert!(
        !key_bytes_in_database(&db, &key_file),
        "the key's bytes are gone from the database files"
    );
    let keys = run_keys(&db);
    assert_eq!((keys.len(), keys[0] == keys[1]), (2, true));
    assert_eq!(
        classes(&db)[1],
        ("rewrite".to_string(), None),
        "hashes before and after compare"
    );
    // A second run says nothing more of it.
    let out = ok(snapshot(&etcd, &db, &[]));
    assert!(!stderr(&out).contains("moved the hash key"));
}

//! Which backend the suite's databases are, and the few direct edits tests
//! make to a database, on either. `ETCD_INSPECTOR_TEST_BACKEND=postgres`
//! gives every test a fresh database on the test PostgreSQL server instead
//! of a SQLite file; tests that only SQLite can run skip under it, saying
//! why.

use super::postgres;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Whether `ETCD_INSPECTOR_TEST_BACKEND=postgres` (`sqlite`, the default,
/// otherwise).
pub fn postgres_backend() -> bool {
    match std::env::var("ETCD_INSPECTOR_TEST_BACKEND").as_deref() {
        Ok("postgres") => true,
        Ok("sqlite" | "") | Err(_) => false,
        Ok(other) => panic!("ETCD_INSPECTOR_TEST_BACKEND={other}: expected sqlite or postgres"),
    }
}

/// Whether a test that only SQLite can run skips (`why` says what it needs
/// of SQLite): under the postgres backend, with a message.
pub fn sqlite_only(why: &str) -> bool {
    let skip = postgres_backend();
    if skip {
        eprintln!("skipping under ETCD_INSPECTOR_TEST_BACKEND=postgres: {why}");
    }
    skip
}

/// A scratch directory and the `--db` of a fresh database: `db.sqlite`
/// inside it, or a PostgreSQL database under the postgres backend.
pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path(), "db");
    (dir, db)
}

/// The `--db` of another fresh database, `name`: `dir/name.sqlite`, or a
/// PostgreSQL database under the postgres backend.
pub fn db_in(dir: &Path, name: &str) -> PathBuf {
    if !postgres_backend() {
        return dir.join(format!("{name}.sqlite"));
    }
    match postgres::database_in(dir) {
        Some(uri) => PathBuf::from(uri),
        None => panic!("ETCD_INSPECTOR_TEST_BACKEND=postgres, and PostgreSQL is not installed"),
    }
}

/// Deletes the stored revisions `revs` of `key` behind etcd-inspector's
/// back, as a database that lost them; how many there were.
pub fn delete_revisions(db: &Path, key: &str, revs: &[i64]) -> u64 {
    if postgres_backend() {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        let mut deleted = 0;
        for rev in revs {
            deleted += client
                .execute(
                    "DELETE FROM etcd_inspector.revisions WHERE mod_revision = $1 \
                     AND key_id IN (SELECT id FROM etcd_inspector.keys WHERE key = $2)",
                    &[rev, &key.as_bytes()],
                )
                .unwrap();
        }
        return deleted;
    }
    let sql = rusqlite::Connection::open(db).unwrap();
    // A running writer may hold the lock a while.
    sql.busy_timeout(Duration::from_secs(10)).unwrap();
    let mut deleted = 0;
    for rev in revs {
        deleted += sql
            .execute(
                "DELETE FROM revisions WHERE mod_revision = ?1 \
                 AND key_id = (SELECT id FROM keys WHERE key = CAST(?2 AS BLOB))",
                rusqlite::params![rev, key],
            )
            .unwrap() as u64;
    }
    deleted
}

/// Asserts that the database's file is sound and its foreign keys hold
/// (SQLite checks neither by itself). PostgreSQL enforces both as it
/// writes: nothing to check.
pub fn assert_consistent(db: &Path) {
    if postgres_backend() {
        return;
    }
    let sql = rusqlite::Connection::open(db).unwrap();
    let integrity: String = sql.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let broken: Option<String> = sql.query_row("PRAGMA foreign_key_check", [], |r| r.get(0)).ok();
    assert_eq!(broken, None, "a row refers to a missing one");
}

/// Runs `sql` behind etcd-inspector's back, on either backend (tables
/// named without their schema): the first column of its first row.
pub fn query_int(db: &Path, sql: &str) -> i64 {
    if postgres_backend() {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client.batch_execute("SET search_path TO etcd_inspector").unwrap();
        return client.query_one(sql, &[]).unwrap().get(0);
    }
    let sql_db = rusqlite::Connection::open(db).unwrap();
    sql_db.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Runs the statement `sql` behind etcd-inspector's back, on either backend
/// (tables named without their schema): how many rows it changed.
pub fn execute(db: &Path, sql: &str) -> u64 {
    if postgres_backend() {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client.batch_execute("SET search_path TO etcd_inspector").unwrap();
        return client.execute(sql, &[]).unwrap();
    }
    let sql_db = rusqlite::Connection::open(db).unwrap();
    sql_db.execute(sql, []).unwrap() as u64
}

/// SQLite's and PostgreSQL's SQL that takes a database back to before the
/// run kind had its column and the tool's times were integers (SQLite's
/// migration 29, PostgreSQL's 10), as the previous release wrote it: the
/// kind a prefix of the source, times RFC 3339 text to the second.
const UNDO_TYPED_RUNS: [&str; 2] = [
    "UPDATE runs SET source = kind || ':' || source WHERE kind <> 'live';
     ALTER TABLE runs DROP COLUMN kind;
     ALTER TABLE runs ADD COLUMN started TEXT NOT NULL DEFAULT '';
     ALTER TABLE runs ADD COLUMN finished TEXT;
     UPDATE runs SET started = strftime('%Y-%m-%dT%H:%M:%SZ', started_at / 1000000, 'unixepoch'),
                     finished = strftime('%Y-%m-%dT%H:%M:%SZ', finished_at / 1000000, 'unixepoch');
     ALTER TABLE runs DROP COLUMN started_at;
     ALTER TABLE runs DROP COLUMN finished_at;
     ALTER TABLE runs RENAME COLUMN started TO started_at;
     ALTER TABLE runs RENAME COLUMN finished TO finished_at;
     ALTER TABLE clusters ADD COLUMN first TEXT NOT NULL DEFAULT '';
     UPDATE clusters SET first = strftime('%Y-%m-%dT%H:%M:%SZ', first_seen / 1000000, 'unixepoch');
     ALTER TABLE clusters DROP COLUMN first_seen;
     ALTER TABLE clusters RENAME COLUMN first TO first_seen;
     ALTER TABLE findings ADD COLUMN analyzed TEXT NOT NULL DEFAULT '';
     UPDATE findings SET analyzed = strftime('%Y-%m-%dT%H:%M:%SZ', analyzed_at / 1000000, 'unixepoch');
     ALTER TABLE findings DROP COLUMN analyzed_at;
     ALTER TABLE findings RENAME COLUMN analyzed TO analyzed_at;
     ALTER TABLE run_members ADD COLUMN at_text TEXT NOT NULL DEFAULT '';
     UPDATE run_members SET at_text = strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000000, 'unixepoch');
     ALTER TABLE run_members DROP COLUMN at;
     ALTER TABLE run_members RENAME COLUMN at_text TO at;
     PRAGMA user_version = 28;",
    r#"SET search_path = etcd_inspector;
     UPDATE runs SET source = kind || ':' || source WHERE kind <> 'live';
     ALTER TABLE runs DROP COLUMN kind;
     ALTER TABLE runs
       ALTER COLUMN started_at TYPE text
         USING to_char(to_timestamp(started_at / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       ALTER COLUMN finished_at TYPE text
         USING to_char(to_timestamp(finished_at / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
     ALTER TABLE clusters ALTER COLUMN first_seen TYPE text
       USING to_char(to_timestamp(first_seen / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
     ALTER TABLE findings ALTER COLUMN analyzed_at TYPE text
       USING to_char(to_timestamp(analyzed_at / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
     ALTER TABLE run_members ALTER COLUMN at TYPE text
       USING to_char(to_timestamp(at / 1000000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
     DELETE FROM schema_version WHERE version > 9;
     RESET search_path;"#,
];

/// Takes the database (`--db`) back to before the run kind had its column
/// and the tool's times were integers ([`UNDO_TYPED_RUNS`]).
pub fn undo_typed_runs(db: &Path) {
    if is_postgres(db) {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client.batch_execute(UNDO_TYPED_RUNS[1]).unwrap();
        return;
    }
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(UNDO_TYPED_RUNS[0])
        .unwrap();
}

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
fn is_postgres(db: &Path) -> bool {
    db.to_str().is_some_and(|s| s.starts_with("postgres"))
}

/// Takes the database back to the schema before revisions named their
/// cluster (SQLite's 21 migrations, PostgreSQL's first), as the previous
/// version of etcd-inspector left it.
pub fn undo_revision_clusters(db: &Path) {
    undo_typed_runs(db);
    if postgres_backend() {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client
            .batch_execute(
                "ALTER TABLE etcd_inspector.revisions DROP COLUMN cluster_id; \
                 ALTER TABLE etcd_inspector.runs DROP COLUMN wal; \
                 ALTER TABLE etcd_inspector.revisions DROP COLUMN deleted_after; \
                 ALTER TABLE etcd_inspector.semantic_values DROP COLUMN redacted; \
                 ALTER TABLE etcd_inspector.runs DROP COLUMN restored; \
                 ALTER TABLE etcd_inspector.revisions DROP COLUMN foreign_evidence; \
                 ALTER TABLE etcd_inspector.audit_requests DROP COLUMN log; \
                 DELETE FROM etcd_inspector.schema_version WHERE version > 1",
            )
            .unwrap();
        return;
    }
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(
            "ALTER TABLE revisions DROP COLUMN cluster_id; ALTER TABLE runs DROP COLUMN wal; \
             ALTER TABLE revisions DROP COLUMN deleted_after; \
             ALTER TABLE semantic_values DROP COLUMN redacted; ALTER TABLE runs DROP COLUMN restored; \
             ALTER TABLE revisions DROP COLUMN foreign_evidence; \
             ALTER TABLE audit_requests DROP COLUMN log; \
             PRAGMA user_version = 21",
        )
        .unwrap();
}

//! Helpers shared by the integration tests: what the tests need (the corpus,
//! a browser), running the binary and reading its answers, the database's
//! revisions, and the check that a secret is nowhere in a database.

pub mod backend;
pub mod cluster;
/// The real control plane, as the demo plays on it.
#[path = "../../../demo/src/control_plane.rs"]
pub mod control_plane;
pub mod encrypt;
pub mod etcd;
pub mod k8s;
pub mod kms_plugin;
pub mod postgres;
pub mod proxy;
/// The demo's incident on the real control plane.
#[path = "../../../demo/src/real_scenario.rs"]
pub mod real_scenario;
pub mod test_plane;

pub use backend::{
    assert_consistent, db_in, delete_revisions, postgres_backend, query_int, sqlite_only, temp_db,
    undo_revision_clusters, undo_typed_runs,
};
use etcd::TestEtcd;
use etcd_inspector::store::Store;
use serde_json::Value;
use std::borrow::Borrow;
use std::ffi::OsStr;
use std::fmt::Display;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// Whether a missing corpus or tool fails the test instead of skipping it:
/// `ETCD_INSPECTOR_REQUIRE_TOOLS=1`, which `.ci/run` sets.
fn tools_required() -> bool {
    std::env::var_os("ETCD_INSPECTOR_REQUIRE_TOOLS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A test cannot run because `what` is absent: it fails where tools are
/// required, else it skips with a message. Returns `None` so that callers
/// can `let Some(x) = … else { return };`.
#[track_caller]
pub fn missing<T>(what: impl Display) -> Option<T> {
    assert!(
        !tools_required(),
        "{what}, and ETCD_INSPECTOR_REQUIRE_TOOLS is set"
    );
    eprintln!("skipping: {what}");
    None
}

/// `../shared/corpus`, or `None` (with a message) where it is absent, as in
/// a user's fresh clone.
#[track_caller]
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        missing(format_args!("corpus folder {} is absent", dir.display()))
    }
}

/// etcd's offline tool `etcdutl` (`ETCD_INSPECTOR_ETCDUTL`, which
/// `.ci/run` sets from `.ci/etcdutl`), or `None` (with a message).
#[track_caller]
pub fn etcdutl() -> Option<PathBuf> {
    match std::env::var_os("ETCD_INSPECTOR_ETCDUTL") {
        Some(path) if Path::new(&path).is_file() => Some(path.into()),
        _ => missing("ETCD_INSPECTOR_ETCDUTL names no etcdutl (build one with .ci/etcdutl)"),
    }
}

/// A Chromium on the PATH, or `None` (with a message).
#[track_caller]
pub fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        });
    match found {
        Some(browser) => Some(browser),
        None => missing("no chromium on PATH (.ci/run installs Debian's chromium)"),
    }
}

/// `http://127.0.0.1:<port>` where nothing listens.
pub fn closed_endpoint() -> String {
    format!("http://127.0.0.1:{}", etcd::free_port())
}

/// Runs the built `etcd-inspector` binary with `args`, feeding `stdin`.
pub fn run_inspector(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let out = control_plane::run_with_input(
        Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
            .args(args)
            .env("XDG_CONFIG_HOME", config_home()),
        stdin,
    )
    .expect("etcd-inspector runs");
    assert_no_password(&out);
    out
}

/// Under the postgres backend, every database URI holds the test server's
/// password: no output of any command may show it.
pub fn assert_no_password(out: &Output) {
    if !backend::postgres_backend() {
        return;
    }
    for text in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(text);
        assert!(
            !text.contains(postgres::PASSWORD) && !text.contains(postgres::PASSWORD_ENCODED),
            "the database password is in the output: {text}"
        );
    }
}

/// This test process's `XDG_CONFIG_HOME`, where a PostgreSQL database's
/// default hash key files go, so that tests leave nothing in the home
/// directory.
pub fn config_home() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Runs `etcd-inspector --db DB ARGS...`.
pub fn inspector(db: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    run_inspector(&all, None)
}

/// Starts `etcd-inspector --db DB ARGS...` in the background, its output
/// piped.
pub fn spawn_inspector(db: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .args(["--db", db.to_str().unwrap()])
        .args(args)
        .env("XDG_CONFIG_HOME", config_home())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("etcd-inspector starts")
}

/// Runs `snapshot --endpoints <etcd> EXTRA...` into `db`.
pub fn snapshot(etcd: &TestEtcd, db: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["snapshot", "--endpoints", &etcd.endpoint];
    args.extend_from_slice(extra);
    inspector(db, &args)
}

/// Runs `snapshot --endpoints <etcd> EXTRA...` into `db` with `env` set.
pub fn snapshot_with_env(etcd: &TestEtcd, db: &Path, env: &[(&str, &OsStr)], extra: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .env("XDG_CONFIG_HOME", config_home())
        .envs(env.iter().copied())
        .args([
            "--db",
            db.to_str().unwrap(),
            "snapshot",
            "--endpoints",
            &etcd.endpoint,
        ])
        .args(extra)
        .output()
        .expect("etcd-inspector runs");
    assert_no_password(&out);
    out
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts success and returns the output.
pub fn ok(out: Output) -> Output {
    assert_exit(&out, 0);
    out
}

/// Asserts success and parses standard output as JSON.
pub fn json(out: impl Borrow<Output>) -> Value {
    let out = out.borrow();
    assert_exit(out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Asserts the exit status, showing standard error when it differs.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
}

/// Asserts a failure (exit 1) told in one line, with no panic; returns it.
pub fn one_line_error(out: &Output) -> String {
    assert_exit(out, 1);
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Sends SIGTERM to a running etcd-inspector and waits for it.
pub fn terminate(child: Child) -> Output {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait_with_output().unwrap()
}

/// `history KEY -o json` rows.
pub fn history(db: &Path, key: &str) -> Vec<Value> {
    json(inspector(db, &["history", key, "-o", "json"]))
        .as_array()
        .unwrap()
        .clone()
}

/// The mod_revision of each stored revision of `key`, oldest first.
pub fn mod_revisions(db: &Path, key: &str) -> Vec<i64> {
    history(db, key)
        .iter()
        .map(|h| h["mod_revision"].as_i64().unwrap())
        .collect()
}

/// (mod_revision, deleted) of each stored revision of `key`.
pub fn stored_revisions_of(db: &Path, key: &str) -> Vec<(i64, bool)> {
    history(db, key)
        .iter()
        .map(|h| {
            (
                h["mod_revision"].as_i64().unwrap(),
                h["deleted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// How many revisions the database holds (0 while it cannot be read, as
/// before a first commit).
pub fn stored_revisions(db: &Path) -> i64 {
    let Ok(store) = Store::open_for_reading(db) else {
        return 0;
    };
    match store.resource_usage(&Default::default()) {
        Ok(usage) => usage.iter().map(|u| u.revisions).sum(),
        Err(_) => 0,
    }
}

/// `runs -o json` rows.
pub fn runs(db: &Path) -> Vec<Value> {
    json(inspector(db, &["runs", "-o", "json"]))
        .as_array()
        .unwrap()
        .clone()
}

/// The status of each run, oldest first.
pub fn run_statuses(db: &Path) -> Vec<String> {
    runs(db)
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// `findings -o json --detector DETECTOR` rows.
pub fn findings(db: &Path, detector: &str) -> Vec<Value> {
    json(inspector(db, &["findings", "-o", "json", "--detector", detector]))
        .as_array()
        .unwrap()
        .clone()
}

/// Asserts that `report` (`report --format json`) is what
/// `schemas/report.schema.json` says it is.
pub fn assert_report_schema(report: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../../../schemas/report.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// `s` in standard base64, as a Secret's `data` holds it in JSON.
pub fn base64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A stored blob decompressed as the store writes it: zstd, against its
/// base's (itself compressed alone) when it has one, or deflate.
fn unpack(codec: &str, blob: &[u8], base: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    match codec {
        "zstd" => {
            let dict = base.map_or_else(Vec::new, |b| zstd::decode_all(b).unwrap());
            zstd::stream::read::Decoder::with_dictionary(blob, &dict)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
        }
        "deflate" => {
            flate2::read::DeflateDecoder::new(blob)
                .read_to_end(&mut out)
                .unwrap();
        }
        other => panic!("unknown codec {other}"),
    };
    out
}

/// Every stored revision, key by key and oldest first, read through the
/// store's own interface.
pub fn every_revision(db: &Path) -> Vec<(String, etcd_inspector::store::HistoryRow)> {
    let store = Store::open_for_reading(db).unwrap();
    let mut keys = std::collections::BTreeSet::new();
    for cluster in store.clusters().unwrap() {
        store
            .key_histories(cluster.row, &mut |history| {
                keys.extend(history.first().map(|r| r.key.clone()));
            })
            .unwrap();
    }
    keys.into_iter()
        .flat_map(|key| {
            let rows = store.history(key.as_bytes(), None).unwrap();
            rows.into_iter().map(move |r| (key.clone(), r))
        })
        .collect()
}

/// Asserts that none of `secrets`, nor their base64 (as Secret data holds
/// them), is anywhere in the database at `db`, compressed or not: not in the
/// bytes of its files (a SQLite database, its WAL, its lock; a PostgreSQL
/// server's files are not ours to read), not in any stored object's content
/// as the store reads it back (decompressed), not in any redacted form as
/// read back, and not in any managedFields blob once decompressed. Every
/// value keyed under the database key (it holds sensitive values) must have
/// no content stored, and only those may have a redacted form; returns how
/// many there are.
pub fn assert_secrets_nowhere(db: &Path, secrets: &[&str]) -> usize {
    let needles: Vec<String> = secrets.iter().flat_map(|s| [s.to_string(), base64(s)]).collect();
    let found = |bytes: &[u8]| {
        needles
            .iter()
            .find(|n| bytes.windows(n.len()).any(|w| w == n.as_bytes()))
            .cloned()
    };

    if !postgres_backend() {
        let name = db.file_name().unwrap().to_str().unwrap();
        let mut files = 0;
        for entry in std::fs::read_dir(db.parent().unwrap()).unwrap() {
            let path = entry.unwrap().path();
            if !path.file_name().unwrap().to_str().unwrap().starts_with(name) {
                continue;
            }
            if let Some(n) = found(&std::fs::read(&path).unwrap()) {
                panic!("{n} is in the bytes of {}", path.display());
            }
            files += 1;
        }
        assert!(files >= 1, "no database file {}", db.display());
    }

    let store = Store::open_for_reading(db).unwrap();
    let rows = stored_values(db);
    assert!(!rows.is_empty(), "the database stores no values");
    let mut keyed = 0;
    for v in rows {
        let content = store.canonical_value(&v.hash).unwrap();
        let redacted = store.redacted_form(&v.hash).unwrap();
        assert_eq!(redacted.is_some(), v.has_redacted, "a redacted form reads back");
        if let Some(form) = redacted {
            assert!(
                v.keyed,
                "only a value holding sensitive values has a redacted form"
            );
            if let Some(n) = found(form.to_string().as_bytes()) {
                panic!("{n} is in a stored redacted form: {form}");
            }
        }
        if v.keyed {
            assert!(
                !v.has_content && content.is_none(),
                "a value holding sensitive values has its content stored: {content:?}"
            );
            keyed += 1;
        } else {
            let content = content.expect("a stored value's content reads back");
            if let Some(n) = found(content.to_string().as_bytes()) {
                panic!("{n} is in stored content: {content}");
            }
        }
        if let Some(managed) = v.managed {
            let bytes = unpack(&v.codec, &managed, v.base_managed.as_deref());
            if let Some(n) = found(&bytes) {
                panic!("{n} is in stored managedFields");
            }
        }
    }
    keyed
}

/// A row of `semantic_values` as stored, with its base's managedFields.
struct StoredValue {
    hash: Vec<u8>,
    keyed: bool,
    codec: String,
    has_content: bool,
    has_redacted: bool,
    managed: Option<Vec<u8>>,
    base_managed: Option<Vec<u8>>,
}

/// Every stored value, read from the database directly (the store's
/// interface hides the compressed bytes).
fn stored_values(db: &Path) -> Vec<StoredValue> {
    const SQL: &str = "SELECT s.hash, s.keyed, s.codec, s.canonical IS NOT NULL, s.managed, b.managed, \
                       s.redacted IS NOT NULL \
                       FROM semantic_values s LEFT JOIN semantic_values b ON b.id = s.base";
    if postgres_backend() {
        let mut client = ::postgres::Client::connect(db.to_str().unwrap(), ::postgres::NoTls).unwrap();
        client.batch_execute("SET search_path TO etcd_inspector").unwrap();
        return client
            .query(SQL, &[])
            .unwrap()
            .iter()
            .map(|r| StoredValue {
                hash: r.get(0),
                keyed: r.get(1),
                codec: r.get(2),
                has_content: r.get(3),
                has_redacted: r.get(6),
                managed: r.get(4),
                base_managed: r.get(5),
            })
            .collect();
    }
    let sql = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = sql.prepare(SQL).unwrap();
    stmt.query_map([], |r| {
        Ok(StoredValue {
            hash: r.get(0)?,
            keyed: r.get(1)?,
            codec: r.get(2)?,
            has_content: r.get(3)?,
            has_redacted: r.get(6)?,
            managed: r.get(4)?,
            base_managed: r.get(5)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod etcd;
pub mod k8s;
pub mod proxy;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// `../shared/corpus`, or `None` (with a message) where it is absent, as in
/// a user's fresh clone.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: corpus folder {} is absent", dir.display());
        None
    }
}

/// Runs the built `etcd-inspector` binary with `args`, feeding `stdin`.
pub fn run_inspector(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("etcd-inspector starts");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Runs `etcd-inspector --db DB ARGS...`.
pub fn inspector(db: &std::path::Path, args: &[&str]) -> Output {
    let mut all = vec!["--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    run_inspector(&all, None)
}

/// Asserts success and returns the output.
pub fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Asserts success and parses standard output as JSON.
pub fn json(out: Output) -> serde_json::Value {
    serde_json::from_slice(&ok(out).stdout).unwrap()
}

/// `history KEY -o json` rows.
pub fn history(db: &std::path::Path, key: &str) -> Vec<serde_json::Value> {
    json(inspector(db, &["history", key, "-o", "json"]))
        .as_array()
        .unwrap()
        .clone()
}

/// `runs -o json` rows.
pub fn runs(db: &std::path::Path) -> Vec<serde_json::Value> {
    json(inspector(db, &["runs", "-o", "json"]))
        .as_array()
        .unwrap()
        .clone()
}

/// Sends SIGTERM to a running etcd-inspector and waits for it.
pub fn terminate(child: std::process::Child) -> Output {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait_with_output().unwrap()
}

/// Asserts the exit status, showing standard error when it differs.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

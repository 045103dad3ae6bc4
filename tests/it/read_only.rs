//! Evidence copied for a post-mortem is often read-only: every read command
//! works on a copy of a database in a directory its reader cannot write,
//! and leaves nothing beside it.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::config_map;
use crate::util::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// `nobody`'s `uid:gid` when we are root (root writes anywhere, so the test
/// reads as someone who cannot); `None` otherwise.
fn nobody() -> Option<(String, String)> {
    let id = |args: &[&str]| {
        let out = Command::new("id").args(args).output().expect("id runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    (id(&["-u"]) == "0").then(|| (id(&["-u", "nobody"]), id(&["-g", "nobody"])))
}

/// Runs `binary --db db ARGS...` as a user who cannot write `db`'s
/// directory, with its home and configuration there too.
fn read_as_reader(binary: &Path, db: &Path, args: &[&str]) -> Output {
    let mut command = match nobody() {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={uid}"),
                &format!("--regid={gid}"),
                "--clear-groups",
                "--",
            ])
            .arg(binary);
            c
        }
        None => Command::new(binary),
    };
    let dir = db.parent().unwrap();
    let out = command
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("etcd-inspector runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn read_commands_work_on_a_copy_in_a_read_only_directory() {
    if sqlite_only("a SQLite file copied into a read-only directory") {
        return;
    }
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/web";
    etcd.put(
        key,
        &config_map("shop", "web", "u1", &[("app.properties", "color=blue")]),
    );
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(
        key,
        &config_map("shop", "web", "u1", &[("app.properties", "color=green")]),
    );
    ok(snapshot(&etcd, &db, &[]));
    ok(inspector(&db, &["analyze"]));

    // The database and its key, copied; then nobody may write there. The
    // binary goes beside it, where the reader may run it.
    let evidence = tempfile::tempdir().unwrap();
    let copy = evidence.path().join("evidence.sqlite");
    std::fs::copy(&db, &copy).unwrap();
    let key_file = format!("{}.key", db.display());
    if Path::new(&key_file).exists() {
        std::fs::copy(&key_file, format!("{}.key", copy.display())).unwrap();
    }
    let binary = evidence.path().join("etcd-inspector");
    std::fs::copy(env!("CARGO_BIN_EXE_etcd-inspector"), &binary).unwrap();
    for f in std::fs::read_dir(evidence.path()).unwrap() {
        let f = f.unwrap().path();
        let mode = if f == binary { 0o555 } else { 0o444 };
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(evidence.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = listing(evidence.path());

    let listed = json(read_as_reader(&binary, &copy, &["runs", "-o", "json"]));
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let history = json(read_as_reader(
        &binary,
        &copy,
        &["history", "configmap/web", "-n", "shop", "-o", "json"],
    ));
    assert_eq!(history.as_array().unwrap().len(), 2, "{history}");
    let shown = read_as_reader(&binary, &copy, &["show", "configmap/web", "-n", "shop"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("color=green"));
    let diff = read_as_reader(&binary, &copy, &["diff", "1", "2"]);
    let diff = String::from_utf8_lossy(&diff.stdout);
    assert!(
        diff.contains(r#"data.app\.properties: "color=blue" → "color=green""#),
        "{diff}"
    );
    for args in [&["findings"][..], &["stats"], &["report", "--format", "html"]] {
        read_as_reader(&binary, &copy, args);
    }
    assert_eq!(
        listing(evidence.path()),
        before,
        "nothing is left beside the copy"
    );
    std::fs::set_permissions(evidence.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

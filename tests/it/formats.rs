//! `-o name` and `-o jsonpath=TEMPLATE` on the listing commands, as
//! kubectl prints them.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::config_map;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use serde_json::json as j;

/// Standard output of a command that succeeds.
fn stdout(db: &std::path::Path, args: &[&str]) -> String {
    String::from_utf8(ok(inspector(db, args)).stdout).unwrap()
}

fn pod(name: &str, uid: &str) -> Vec<u8> {
    encode_protobuf(&j!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "generateName": "web-",
                     "creationTimestamp": "2026-11-29T08:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-sts", "controller": true}]},
        "spec": {"containers": [{"name": "main", "image": "web:1"}]}}))
    .unwrap()
}

#[test]
fn listings_print_names_and_jsonpath_templates() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/web";
    let cm = |color: &str| config_map("shop", "web", "u1", &[("app.properties", color)]);
    etcd.put(key, &cm("color=blue"));
    // A recreated pod: one finding.
    etcd.put("/registry/pods/ns/web-0", &pod("web-0", "uid-old"));
    etcd.delete("/registry/pods/ns/web-0");
    etcd.put("/registry/pods/ns/web-0", &pod("web-0", "uid-new"));
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    etcd.put(key, &cm("color=green"));
    ok(snapshot(&etcd, &db, &[]));

    assert_eq!(stdout(&db, &["runs", "-o", "name"]), "run/1\nrun/2\n");
    assert_eq!(
        stdout(&db, &["history", "cm/web", "-n", "shop", "-o", "name"]),
        "configmap/web\nconfigmap/web\n"
    );
    let findings = stdout(&db, &["findings", "--detector", "recreated", "-o", "name"]);
    assert_eq!(findings, "pod/web-0\n");
    let diff = stdout(&db, &["diff", "1", "2", "-o", "name"]);
    assert_eq!(diff, "configmap/web\n");

    // The template applies to the document `-o json` prints.
    assert_eq!(stdout(&db, &["runs", "-o", "jsonpath={[*].id}"]), "1 2");
    let each = r#"jsonpath={range [*]}{.id}{"\t"}{.status}{"\n"}{end}"#;
    assert_eq!(stdout(&db, &["runs", "-o", each]), "1\tcomplete\n2\tcomplete\n");
    // kubectl's quotes, left by a shell that did not take them.
    let quoted = "jsonpath='{[?(@.mod_revision>0)].version}'";
    assert_eq!(
        stdout(&db, &["history", "cm/web", "-n", "shop", "-o", quoted]),
        "1 2"
    );
    assert_eq!(
        stdout(&db, &["findings", "-o", "jsonpath={[*].keys[0]}"]),
        "/registry/pods/ns/web-0"
    );
    let changed = stdout(&db, &["diff", "1", "2", "-o", "jsonpath={.objects[*].change}"]);
    assert_eq!(changed, "changed");
    let resources = stdout(&db, &["stats", "-o", "jsonpath={.resources[*].resource}"]);
    assert!(resources.split(' ').any(|r| r == "configmaps"), "{resources}");

    // A bad template, or a name where there is none: a usage error.
    let bad = inspector(&db, &["runs", "-o", "jsonpath={[*].id"]);
    assert_exit(&bad, 2);
    let err = stderr(&bad);
    assert!(err.contains("{[*].id") && err.contains("unclosed {"), "{err}");
    let bad = inspector(&db, &["stats", "-o", "name"]);
    assert_exit(&bad, 2);
    let err = stderr(&bad);
    assert!(err.contains("stats") && err.contains("-o name"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Runs `etcd-inspector --db DB ARGS...` with `env` set.
fn with_env(db: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
        .env("XDG_CONFIG_HOME", config_home())
        .envs(env.iter().copied())
        .args(["--db", db.to_str().unwrap()])
        .args(args)
        .output()
        .expect("etcd-inspector runs");
    String::from_utf8(ok(out).stdout).unwrap()
}

#[test]
fn local_times_carry_their_offset_and_are_taken_back() {
    let etcd = TestEtcd::start();
    let key = "/registry/configmaps/shop/web";
    etcd.put(key, &config_map("shop", "web", "u1", &[("k", "v1")]));
    let (_dir, db) = temp_db();
    ok(snapshot(&etcd, &db, &[]));
    // Run 2 starts whole seconds after run 1 finished, so that at its
    // start, printed to the second, run 1 is the last complete run and its
    // revision certainly written: a run's end bounds its revisions to the
    // second, with a second's doubt, and 2 s left that to chance on a
    // loaded machine (CI, PostgreSQL).
    std::thread::sleep(std::time::Duration::from_secs(4));
    etcd.put(key, &config_map("shop", "web", "u1", &[("k", "v2")]));
    ok(snapshot(&etcd, &db, &[]));
    // A POSIX rule needs no time zone database: UTC+05:30 all year.
    let tz = [("TZ", "IST-5:30")];

    let utc: Vec<String> = runs(&db)
        .iter()
        .map(|r| r["started_at"].as_str().unwrap().to_string())
        .collect();
    let table = with_env(&db, &tz, &["--local", "runs", "--no-headers"]);
    let local: Vec<&str> = table
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(local.len(), 2, "{table}");
    for (local, utc) in local.iter().zip(&utc) {
        assert!(local.ends_with("+05:30"), "{table}");
        let same = |t: &str| t.parse::<jiff::Timestamp>().unwrap();
        assert_eq!(same(local), same(utc), "the same instant");
    }
    // The environment variable is the flag; JSON stays in UTC.
    let by_env = with_env(
        &db,
        &[tz[0], ("ETCD_INSPECTOR_LOCAL", "true")],
        &["runs", "--no-headers"],
    );
    assert_eq!(by_env, table);
    let json_local = with_env(&db, &tz, &["--local", "runs", "-o", "json"]);
    assert!(json_local.contains(&format!("\"{}\"", utc[1])), "{json_local}");

    // What the table printed is a time --at and --since take back.
    let show = |at: &str| with_env(&db, &tz, &["show", "cm/web", "-n", "shop", "--at", at]);
    assert_eq!(show(local[1]), show(&utc[1]));
    assert!(
        show(local[1]).contains("v1"),
        "run 1 was the last complete by then"
    );
    ok(inspector(&db, &["stats", "--since", local[0], "-o", "json"]));

    // A revision's time as the history prints it, taken back too.
    let history = with_env(
        &db,
        &tz,
        &["--local", "history", "cm/web", "-n", "shop", "--no-headers"],
    );
    let written = history.lines().last().unwrap();
    let at = &written[written.find('~').expect(&history)..];
    assert!(at.contains("+05:30 ± "), "{history}");
    ok(inspector(&db, &["show", "cm/web", "-n", "shop", "--at", at]));
}

//! Scheduled use: CronJob-style runs with compaction between them, `follow`
//! stopped and restarted, retention with `prune`, the metrics file, and the
//! Kubernetes manifests.

use crate::util::etcd::TestEtcd;
use crate::util::k8s::{config_map, pod, widget};
use crate::util::proxy::Proxy;
use crate::util::{
    assert_consistent, assert_exit, delete_revisions, history, inspector, json, missing, mod_revisions, ok,
    one_line_error, postgres_backend, run_statuses, runs, snapshot, spawn_inspector, stderr, temp_db,
    terminate,
};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn metrics(path: &Path) -> prometheus_parse::Scrape {
    let text = std::fs::read_to_string(path).unwrap();
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
}

fn gauge(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no sample {name} {labels:?}"));
    match sample.value {
        prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
        ref other => panic!("{name} is not a gauge: {other:?}"),
    }
}

#[test]
fn three_scheduled_runs_with_a_compaction_between_give_one_gap() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let prom = dir.path().join("textfile/etcd_inspector.prom");
    let prom_arg = format!("--metrics-file={}", prom.display());
    let key = "/registry/pods/default/web";
    let lease = "/registry/leases/kube-node-lease/node-1";
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:1"));
    etcd.put(
        lease,
        b"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\"}",
    );
    ok(snapshot(&etcd, &db, &[&prom_arg]));
    let first = metrics(&prom);
    assert_eq!(
        gauge(&first, "etcd_inspector_run_status", &[("status", "complete")]),
        1.0
    );
    assert_eq!(gauge(&first, "etcd_inspector_run_revisions_added", &[]), 1.0);

    // Between runs 1 and 2: two updates, read by run 2.
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:2"));
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:3"));
    ok(snapshot(&etcd, &db, &[&prom_arg]));
    // Between runs 2 and 3: three updates, then a compaction that loses the
    // first two before run 3 can read them.
    let lost_from = etcd.put(key, &pod("default", "web", "uid-1", "nginx:4"));
    let lost_to = etcd.put(key, &pod("default", "web", "uid-1", "nginx:5"));
    let kept = etcd.put(key, &pod("default", "web", "uid-1", "nginx:6"));
    etcd.compact(kept);
    ok(snapshot(&etcd, &db, &[&prom_arg]));

    assert_eq!(run_statuses(&db), ["complete"; 3]);
    let r = runs(&db);
    let added: Vec<i64> = r
        .iter()
        .map(|run| run["revisions_added"].as_i64().unwrap())
        .collect();
    assert_eq!(
        added,
        [1, 2, 1],
        "run 1: the pod; run 2: two updates; run 3: what compaction left"
    );
    let gaps: Vec<&serde_json::Value> = r.iter().flat_map(|run| run["gaps"].as_array().unwrap()).collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(
        (gaps[0]["from_revision"].as_i64(), gaps[0]["to_revision"].as_i64()),
        (Some(lost_from), Some(lost_to)),
        "a gap covers exactly the revisions compaction removed"
    );
    let revisions = mod_revisions(&db, key);
    assert_eq!(revisions.len(), 4);
    assert_eq!(revisions.last(), Some(&kept));
    let lease_history = inspector(&db, &["history", lease]);
    assert!(
        !lease_history.status.success()
            && String::from_utf8_lossy(&lease_history.stderr).contains("no revisions"),
        "leases are excluded by default"
    );

    let third = metrics(&prom);
    assert_eq!(gauge(&third, "etcd_inspector_run_id", &[]), 3.0);
    assert_eq!(
        gauge(&third, "etcd_inspector_run_history_gap_revisions", &[]),
        (lost_to - lost_from + 1) as f64
    );
    assert_eq!(
        gauge(&third, "etcd_inspector_run_head_revision", &[]),
        kept as f64
    );
    assert_eq!(
        gauge(&third, "etcd_inspector_run_status", &[("status", "failed")]),
        0.0
    );
    let leftovers: Vec<_> = std::fs::read_dir(prom.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "only the metrics file, no temporary file");
}

#[test]
fn a_run_with_another_resource_filter_reads_state_and_history_again() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let (pod_key, widget_key) = (
        "/registry/pods/default/web",
        "/registry/example.com/widgets/default/w",
    );
    etcd.put(pod_key, &pod("default", "web", "uid-1", "nginx:1"));
    etcd.put(widget_key, &widget("default", "w", "uid-2", 1));
    etcd.put(widget_key, &widget("default", "w", "uid-2", 2));
    ok(snapshot(&etcd, &db, &["--include-resource=pods", "--no-analyze"]));
    assert_eq!(runs(&db)[0]["revisions_added"], 1, "only the pod");
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    assert_eq!(
        runs(&db)[1]["revisions_added"],
        2,
        "every retained revision of what the first run left out"
    );
    assert_eq!(history(&db, widget_key).len(), 2);
}

#[test]
fn a_failed_run_is_in_the_metrics_and_fail_on_sets_the_exit_status() {
    let (dir, db) = temp_db();
    let prom = dir.path().join("m.prom");
    let out = inspector(
        &db,
        &[
            "snapshot",
            "--endpoints=http://127.0.0.1:1",
            "--dial-timeout=1s",
            &format!("--metrics-file={}", prom.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        gauge(
            &metrics(&prom),
            "etcd_inspector_run_status",
            &[("status", "failed")]
        ),
        1.0
    );

    // An identical rewrite is a finding (rewrite, medium): --fail-on low exits 4.
    let etcd = TestEtcd::start();
    let key = "/registry/pods/default/web";
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:1"));
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:1"));
    let out = snapshot(&etcd, &db, &["--fail-on=low"]);
    assert_exit(&out, 4);
    assert_eq!(runs(&db).last().unwrap()["status"], "complete");
}

fn start_follow(etcd: &TestEtcd, db: &Path, extra: &[&str]) -> std::process::Child {
    follow_at(&etcd.endpoint, db, extra)
}

fn follow_at(endpoint: &str, db: &Path, extra: &[&str]) -> std::process::Child {
    let mut args = vec!["follow", "--endpoints", endpoint, "--commit-every=200ms"];
    args.extend_from_slice(extra);
    spawn_inspector(db, &args)
}

/// Waits until the database holds `n` revisions of `key`.
fn wait_for(db: &Path, key: &str, n: usize) {
    let start = Instant::now();
    // No revision of the key yet is an error, not an empty list.
    let stored = || {
        let out = inspector(db, &["history", key, "-o", "json"]);
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        rows.as_array().map_or(0, Vec::len)
    };
    while stored() < n {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "follow never stored {n} revisions of {key}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn follow_stopped_by_sigterm_resumes_without_losing_or_repeating_a_revision() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/default/web";
    let mut written = vec![etcd.put(key, &pod("default", "web", "uid-1", "nginx:0"))];
    let child = start_follow(&etcd, &db, &[]);
    for i in 1..=5 {
        written.push(etcd.put(key, &pod("default", "web", "uid-1", &format!("nginx:{i}"))));
    }
    wait_for(&db, key, written.len());
    let out = terminate(child);
    assert_exit(&out, 130);
    assert_eq!(runs(&db)[0]["status"], "interrupted");

    // Written while nothing follows; the next follow picks them up.
    for i in 6..=8 {
        written.push(etcd.put(key, &pod("default", "web", "uid-1", &format!("nginx:{i}"))));
    }
    let child = start_follow(&etcd, &db, &["--duration=3s"]);
    std::thread::sleep(Duration::from_millis(1500));
    written.push(etcd.put(key, &pod("default", "web", "uid-1", "nginx:9")));
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);

    let stored = mod_revisions(&db, key);
    assert_eq!(stored, written, "every revision once, in order");
    let r = runs(&db);
    assert_eq!(r[1]["status"], "complete");
    assert!(r[1]["gaps"].as_array().unwrap().is_empty());
}

/// `follow` checks what it stored against the counters its watch events
/// carry before it records a point as complete: a history that fell short
/// while it ran fails the run.
#[test]
fn follow_fails_when_its_stored_history_falls_short() {
    let etcd = TestEtcd::start();
    let (_dir, db) = temp_db();
    let key = "/registry/pods/default/web";
    let first = etcd.put(key, &pod("default", "web", "uid-1", "nginx:0"));
    let child = start_follow(&etcd, &db, &["--duration=20s"]);
    wait_for(&db, key, 1);
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:1"));
    wait_for(&db, key, 2);
    assert_eq!(delete_revisions(&db, key, &[first]), 1);
    etcd.put(key, &pod("default", "web", "uid-1", "nginx:2"));
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "history incomplete: 1 key has fewer revisions than etcd counts, e.g. {key}: stored 2 of 3"
        )),
        "{err}"
    );
    let r = runs(&db);
    assert_eq!(r[0]["status"].as_str(), Some("failed"));
}

#[test]
fn follow_reconnects_after_losing_etcd_and_records_what_compaction_took() {
    let etcd = TestEtcd::start();
    let proxy = Proxy::new(&etcd.endpoint);
    let (_dir, db) = temp_db();
    let key = "/registry/pods/default/web";
    let first = etcd.put(key, &pod("default", "web", "uid-1", "nginx:0"));
    let child = follow_at(&proxy.endpoint, &db, &["--dial-timeout=1s"]);
    let seen = etcd.put(key, &pod("default", "web", "uid-1", "nginx:1"));
    wait_for(&db, key, 2);

    // The connection drops; meanwhile etcd moves on and compacts away a
    // revision the follower never saw.
    proxy.cut();
    let lost = etcd.put(key, &pod("default", "web", "uid-1", "nginx:2"));
    let kept = etcd.put(key, &pod("default", "web", "uid-1", "nginx:3"));
    etcd.compact(kept);
    proxy.restore();
    let after = etcd.put(key, &pod("default", "web", "uid-1", "nginx:4"));
    wait_for(&db, key, 4);
    let out = terminate(child);
    // The cut watch was resumed (within --command-timeout) from the first
    // revision it had not delivered, which compaction had taken.
    assert_exit(&out, 130);

    let stored = mod_revisions(&db, key);
    assert_eq!(stored, [first, seen, kept, after]);
    let gaps = runs(&db)[0]["gaps"].clone();
    assert_eq!(
        gaps,
        serde_json::json!([{"from_revision": lost, "to_revision": kept - 1}])
    );
}

#[test]
fn prune_keeps_diff_between_the_remaining_runs() {
    let etcd = TestEtcd::start();
    let (dir, db) = temp_db();
    let (a, b, c) = (
        "/registry/pods/default/a",
        "/registry/pods/default/b",
        "/registry/pods/default/c",
    );
    // Run 1 reads two revisions of `a`; later runs need only the second.
    etcd.put(a, &pod("default", "a", "uid-a", "nginx:0"));
    etcd.put(a, &pod("default", "a", "uid-a", "nginx:1"));
    etcd.put(b, &pod("default", "b", "uid-b", "nginx:1"));
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    etcd.put(a, &pod("default", "a", "uid-a", "nginx:2"));
    etcd.delete(b);
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    etcd.put(a, &pod("default", "a", "uid-a", "nginx:3"));
    etcd.put(c, &pod("default", "c", "uid-c", "nginx:1"));
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    let diff = |x: &str, y: &str| json(inspector(&db, &["diff", x, y, "-o", "json"]));
    let before = diff("2", "3");
    let history_before = history(&db, a);
    if !postgres_backend() {
        // A missing PostgreSQL database is the server's to report.
        let missing = dir.path().join("missing.sqlite");
        let out = inspector(&missing, &["prune", "--keep-runs=1"]);
        assert_exit(&out, 1);
        assert!(stderr(&out).contains("no such database"), "{}", stderr(&out));
        assert!(!missing.exists(), "prune does not create a database");
    }
    let vacuum_only = inspector(&db, &["prune", "--vacuum"]);
    assert_exit(&vacuum_only, 2);
    assert_eq!(runs(&db).len(), 3, "without a limit nothing is pruned");

    let out = ok(inspector(&db, &["prune", "--keep-runs=2", "--vacuum"]));
    assert!(stderr(&out).contains("pruned 1 runs"), "{}", stderr(&out));
    let ids: Vec<i64> = runs(&db).iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 3]);
    assert_eq!(
        diff("2", "3"),
        before,
        "diff between the remaining runs is unchanged"
    );
    let history_after = history(&db, a);
    assert_eq!(
        history_after.len(),
        history_before.len() - 1,
        "the revision only run 1 needed is gone"
    );
    assert_eq!(history_after.last(), history_before.last());
    assert_eq!(history(&db, b).len(), 2, "run 2 saw `b` live, then deleted");
    assert_consistent(&db);
    // The newest complete run is never pruned.
    ok(inspector(&db, &["prune", "--keep-runs=1"]));
    ok(inspector(&db, &["prune", "--older-than=0s"]));
    assert_eq!(runs(&db).len(), 1);
    ok(snapshot(&etcd, &db, &["--no-analyze"]));
    assert_eq!(
        runs(&db).last().unwrap()["revisions_added"],
        0,
        "the next run continues from the kept one"
    );
}

/// The CronJob and follow Deployment manifests against the Kubernetes schemas, with the PyPI
/// package `kubernetes-validate` (.ci/run installs it).
#[test]
fn kubernetes_manifests_pass_schema_validation() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes");
    let validator = std::env::var("KUBERNETES_VALIDATE").unwrap_or_else(|_| "kubernetes-validate".into());
    let run = |files: &[&Path]| Command::new(&validator).arg("--strict").args(files).output();
    let manifests = [
        "namespace.yaml",
        "pvc.yaml",
        "cronjob.yaml",
        "cronjob-postgres.yaml",
        "follow-deployment.yaml",
    ]
    .map(|f| dir.join(f));
    let out = match run(&manifests.iter().map(|p| p.as_path()).collect::<Vec<_>>()) {
        Ok(out) => out,
        Err(e) => {
            missing::<()>(format_args!(
                "{validator} is not installed ({e}); .ci/run installs it"
            ));
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator does reject a broken manifest.
    let broken = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    let text = std::fs::read_to_string(&manifests[2]).unwrap().replace(
        "concurrencyPolicy: Forbid",
        "concurrencyPolicy: Forbid\n  concurrency: 1",
    );
    std::fs::write(broken.path(), text).unwrap();
    assert!(!run(&[broken.path()]).unwrap().status.success());
}

/// `GET path` on `addr`: the status code and the body.
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("follow listens");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, body.to_string())
}

/// Polls `GET path` until `done` holds of its answer; panics after 90 s.
fn http_until(addr: &str, path: &str, done: impl Fn(u16, &str) -> bool) -> (u16, String) {
    let start = Instant::now();
    loop {
        if let Ok(answer) = std::panic::catch_unwind(|| http_get(addr, path)) {
            if done(answer.0, &answer.1) {
                return answer;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "{path} never answered as expected"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A follow Deployment: `/metrics` has the metrics file's series and
/// `/healthz` fails once the watch has been down longer than the stall
/// limit, then recovers; with `--log-format json` every line on standard
/// error is a JSON object with a level and a message.
#[test]
fn follow_serves_metrics_and_health_and_logs_json() {
    let etcd = TestEtcd::start();
    let proxy = Proxy::new(&etcd.endpoint);
    let (_dir, db) = temp_db();
    let key = "/registry/configmaps/default/app.config";
    let data = |n: &str| config_map("default", "app.config", "uid-1", &[("app.properties", n)]);
    let first = etcd.put(key, &data("replicas=1"));
    let addr = format!("127.0.0.1:{}", crate::util::etcd::free_port());
    let child = spawn_inspector(
        &db,
        &[
            "--log-format=json",
            "follow",
            "--endpoints",
            &proxy.endpoint,
            "--commit-every=200ms",
            "--dial-timeout=1s",
            "--command-timeout=2s",
            "--listen",
            &addr,
            "--stall-limit=1s",
            "--cluster",
            "prod-eu-1",
        ],
    );
    let (code, body) = http_until(&addr, "/healthz", |_, body| body.contains("revision"));
    assert_eq!(code, 200, "{body}");
    let second = etcd.put(key, &data("replicas=2"));
    wait_for(&db, key, 2);
    assert_eq!(mod_revisions(&db, key), [first, second]);
    let (_, text) = http_until(&addr, "/metrics", |_, body| {
        body.contains(&format!(
            "etcd_inspector_follow_complete_through_revision{{cluster=\"{}\",cluster_name=\"prod-eu-1\"}} {second}",
            cluster_hex(&db)
        ))
    });
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let cluster = cluster_hex(&db);
    assert_eq!(
        gauge(
            &scrape,
            "etcd_inspector_follow_stalled",
            &[("cluster", &cluster), ("cluster_name", "prod-eu-1")]
        ),
        0.0
    );
    assert_eq!(http_get(&addr, "/nothing").0, 404);

    // No member delivers: stalled, and past the limit the probe fails.
    proxy.cut();
    let (code, body) = http_until(&addr, "/healthz", |code, _| code != 200);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("stalled"), "{body}");
    let (_, text) = http_get(&addr, "/metrics");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    assert_eq!(
        gauge(&scrape, "etcd_inspector_follow_stalled", &[("cluster", &cluster)]),
        1.0
    );

    // The member is back: follow catches up and the probe passes again.
    proxy.restore();
    let third = etcd.put(key, &data("replicas=3"));
    http_until(&addr, "/healthz", |code, body| {
        code == 200 && body.contains(&format!("through revision {third}"))
    });
    let out = terminate(child);
    assert_exit(&out, 130);
    assert_eq!(mod_revisions(&db, key), [first, second, third]);

    let err = stderr(&out);
    let lines: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["level"] == "WARN"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("watching stopped at revision"))),
        "{err}"
    );
    assert!(
        lines.iter().any(|l| l["level"] == "INFO"
            && l["message"].as_str().is_some_and(|m| m.contains("interrupted"))),
        "{err}"
    );
    assert!(lines.iter().all(|l| l["timestamp"].is_string()), "{err}");

    // An address in use fails the run at once, in one line naming it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let out = inspector(
        &db,
        &[
            "follow",
            "--endpoints",
            &etcd.endpoint,
            "--listen",
            &taken,
            "--duration=1s",
        ],
    );
    let err = one_line_error(&out);
    assert!(err.contains(&format!("cannot listen on {taken}")), "{err}");
    assert_eq!(runs(&db).last().unwrap()["status"], "failed");
}

/// etcd's cluster id as `runs -o json` gives it.
fn cluster_hex(db: &Path) -> String {
    runs(db)[0]["cluster_id"]
        .as_str()
        .expect("a cluster id")
        .to_string()
}

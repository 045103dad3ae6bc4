//! The control-plane tier: a real kube-apiserver, controller manager,
//! scheduler and kwok's kubelets ([`ControlPlane`]) doing a cluster's
//! ordinary work, read by the tool the ways a user reads it. What the real
//! components write is the truth here: a healthy cluster's churn must give
//! no finding at `low` or above.
//!
//! The tier runs where `ETCD_INSPECTOR_CONTROL_PLANE` names the binaries
//! `.ci/control-plane` builds (CI runs it once per pinned release, each on
//! the etcd line it pairs with); elsewhere each test skips, saying how to
//! run it.

use crate::util::control_plane::{ControlPlane, Options};
use crate::util::real_scenario::{self, SHOP};
use crate::util::test_plane::TestPlane;
use crate::util::*;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::source::Revision;
use etcd_inspector::store::audit::Match;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Reads the control plane's etcd with `snapshot` into `db`, with the
/// apiserver's encryption config.
fn snapshot_of(plane: &TestPlane, db: &Path) -> std::process::Output {
    let config = plane.encryption_config.to_str().unwrap();
    ok(snapshot(&plane.etcd, db, &["--encryption-config", config]))
}

/// Findings at `low` or above, as `findings -o json` gives them.
fn noise(db: &Path) -> Vec<Value> {
    json(inspector(db, &["findings", "-o", "json"]))
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .cloned()
        .collect()
}

/// Keeps what a failed run read, for a person to look at: the databases,
/// the audit log and a copy of etcd's db, in `ETCD_INSPECTOR_KEEP` when set.
fn keep(plane: &TestPlane, dbs: &[&Path]) {
    let Some(to) = std::env::var_os("ETCD_INSPECTOR_KEEP") else {
        return;
    };
    let to = Path::new(&to);
    std::fs::create_dir_all(to).unwrap();
    for f in dbs
        .iter()
        .copied()
        .chain([plane.audit_log.as_path(), plane.encryption_config.as_path()])
    {
        let _ = std::fs::copy(f, to.join(f.file_name().unwrap()));
    }
    // A database's newest transactions may still be in its write-ahead log.
    for db in dbs {
        let wal = format!("{}-wal", db.file_name().unwrap().to_string_lossy());
        let _ = std::fs::copy(db.with_file_name(&wal), to.join(wal));
    }
    let _ = std::fs::copy(plane.etcd.db_file(), to.join("etcd.db"));
    for log in [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    ] {
        let _ = std::fs::copy(
            plane.dir().join(format!("{log}.log")),
            to.join(format!("{log}.log")),
        );
    }
    eprintln!("kept the run's files in {}", to.display());
}

/// Adds to `seen` the Jobs in `shop` that have completed (the Job
/// controller set `status.succeeded`); the CronJob controller deletes all
/// but the last, so they are counted as they come.
fn completed_jobs(plane: &ControlPlane, seen: &mut std::collections::BTreeSet<String>) -> anyhow::Result<()> {
    let text = plane.jsonpath(
        &["jobs", "-n", "shop"],
        "{range .items[?(@.status.succeeded==1)]}{.metadata.name}{\"\\n\"}{end}",
    )?;
    seen.extend(text.lines().map(str::to_string));
    Ok(())
}

#[test]
fn healthy_cluster_gives_no_finding() -> anyhow::Result<()> {
    let Some(mut plane) = TestPlane::start(Options {
        compaction_interval: Duration::from_secs(50),
    }) else {
        return Ok(());
    };
    eprintln!("control plane {} on etcd {}", plane.version, etcd::etcd_version());
    let live = plane.dir().join("live.db");
    let followed = plane.dir().join("followed.db");
    let follow_log = std::fs::File::create(plane.dir().join("follow.log")).unwrap();
    let mut follow = Running(
        std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
            .env("XDG_CONFIG_HOME", config_home())
            .stdout(std::process::Stdio::null())
            .stderr(follow_log)
            .args([
                "--db",
                followed.to_str().unwrap(),
                "follow",
                "--endpoints",
                &plane.etcd.endpoint,
                "--encryption-config",
                plane.encryption_config.to_str().unwrap(),
                "--commit-every",
                "1s",
            ])
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    let mut last_snapshot = Instant::now();
    let mut snapshot_every_minute = |plane: &TestPlane| {
        if last_snapshot.elapsed() >= Duration::from_secs(60) {
            snapshot_of(plane, &live);
            last_snapshot = Instant::now();
        }
    };

    real_scenario::shop(&plane)?;
    snapshot_of(&plane, &live);

    // A rollout, a ConfigMap edit and a scale, each by one person.
    plane.kubectl_as(
        "alice@example.com",
        &[
            "set",
            "image",
            "-n",
            "shop",
            "deploy/web",
            "web=registry.example.com/web:1.1",
        ],
        None,
    )?;
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/web", "--timeout=120s"])?;
    snapshot_every_minute(&plane);
    plane.apply(&SHOP.replace("color=blue", "color=green"))?;
    plane.kubectl_as(
        "alice@example.com",
        &["scale", "-n", "shop", "deploy/api", "--replicas=3"],
        None,
    )?;
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/api", "--timeout=120s"])?;
    snapshot_every_minute(&plane);

    // The apiserver restarts (an upgrade, a node reboot).
    plane.restart_apiserver()?;
    snapshot_every_minute(&plane);

    // Two CronJob runs complete and at least three compactions pass.
    let mut jobs = std::collections::BTreeSet::new();
    plane.wait_for(
        Duration::from_secs(300),
        "two Jobs of the CronJob completed",
        |cp| {
            snapshot_every_minute(&plane);
            completed_jobs(cp, &mut jobs)?;
            Ok(jobs.len() >= 2)
        },
    )?;
    while started.elapsed() < Duration::from_secs(200) {
        snapshot_every_minute(&plane);
        std::thread::sleep(Duration::from_secs(1));
    }
    snapshot_of(&plane, &live);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &follow.0.id().to_string()])
        .status();
    let stopped = follow.0.wait().unwrap();
    let follow_said = std::fs::read_to_string(plane.dir().join("follow.log")).unwrap();
    assert_eq!(stopped.code(), Some(130), "follow: {follow_said}");
    ok(inspector(&followed, &["analyze"]));

    // A member's data file, copied while etcd runs.
    let file = plane.dir().join("member-db");
    std::fs::copy(plane.etcd.db_file(), &file).unwrap();
    let from_file = plane.dir().join("file.db");
    ok(inspector(
        &from_file,
        &[
            "snapshot",
            "--file",
            file.to_str().unwrap(),
            "--encryption-config",
            plane.encryption_config.to_str().unwrap(),
        ],
    ));

    ok(inspector(
        &live,
        &["attribute", "--audit-log", plane.audit_log.to_str().unwrap()],
    ));
    ok(inspector(&live, &["analyze"]));
    let mut found = Vec::new();
    for (how, db) in [
        ("snapshot every minute", &live),
        ("follow", &followed),
        ("the member's db file", &from_file),
    ] {
        for f in noise(db) {
            found.push(format!(
                "{how}: {} {}: {}",
                f["severity"], f["detector"], f["summary"]
            ));
        }
    }
    if !found.is_empty() {
        keep(&plane, &[&live, &followed, &from_file]);
    }
    eprintln!("components restarted: {}", plane.restarts());
    let truth = check_attribution(&live, &plane.audit_log);
    check_clock(&followed, &truth);
    assert!(
        found.is_empty(),
        "a healthy cluster gave {} findings at low or above:\n{}",
        found.len(),
        found.join("\n"),
    );
    // The report opens by saying so.
    let report = ok(inspector(&live, &["report", "--format", "text"]));
    let first = String::from_utf8_lossy(&report.stdout)
        .lines()
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(first.contains("Nothing to worry about"), "{first}");
    // What the control plane wrote, replayed from the member's WAL, is
    // what its db holds, write for write; and the member's data dir gives
    // back what follow recorded, revision by revision, and the history
    // before it, with nothing to worry about.
    plane.etcd.stop();
    let placed = crate::wal::place_member(&plane.etcd);
    eprintln!("the WAL's {placed} writes placed at etcd's revisions, the db agreeing");
    let recovered = plane.dir().join("data-dir.db");
    ok(inspector(
        &recovered,
        &[
            "snapshot",
            "--data-dir",
            plane.etcd.data_dir().to_str().unwrap(),
            "--encryption-config",
            plane.encryption_config.to_str().unwrap(),
        ],
    ));
    let run = runs(&recovered).pop().unwrap();
    assert_eq!(run["history_from"], 1, "{run}");
    let follow_run = runs(&followed).pop().unwrap();
    let (from, to) = (
        follow_run["history_from"].as_i64().unwrap(),
        follow_run["head_revision"].as_i64().unwrap(),
    );
    let followed_revisions = crate::wal::data_dir::stored(&followed, from, to);
    crate::wal::data_dir::assert_same(
        &followed_revisions,
        &crate::wal::data_dir::stored(&recovered, from, to),
    );
    eprintln!(
        "the data dir gave back follow's {} revisions ({from}-{to}) and {} before them",
        followed_revisions.len(),
        crate::wal::data_dir::stored(&recovered, 1, from - 1).len()
    );
    let noisy: Vec<String> = noise(&recovered)
        .iter()
        .map(|f| format!("{} {}: {}", f["severity"], f["detector"], f["summary"]))
        .collect();
    if !noisy.is_empty() {
        keep(&plane, &[&recovered]);
    }
    assert!(
        noisy.is_empty(),
        "the recovered history gave findings:\n{}",
        noisy.join("\n")
    );
    Ok(())
}

/// A child process, killed if the test ends before it stops it.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A write the audit log recorded: its verb, when the apiserver received
/// it and when it answered, whether it answered 504 (the write may go on
/// after the answer), and the revision its response carried.
struct Written {
    verb: String,
    received: Timestamp,
    answered: Timestamp,
    timed_out: bool,
    response_revision: Option<i64>,
}

/// The audit log's events by auditID.
fn audit_events(log: &Path) -> BTreeMap<String, Written> {
    let time = |e: &Value, field: &str| e[field].as_str().unwrap().parse::<Timestamp>().unwrap();
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|e| {
            let written = Written {
                verb: e["verb"].as_str().unwrap().to_string(),
                received: time(&e, "requestReceivedTimestamp"),
                answered: time(&e, "stageTimestamp"),
                timed_out: e["responseStatus"]["code"] == 504,
                response_revision: e["responseObject"]["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok()),
            };
            (e["auditID"].as_str().unwrap().to_string(), written)
        })
        .collect()
}

/// Checks `attribute`'s joins on a real audit log: every exact join is the
/// revision the event's response carried (a DELETE's two revisions, the
/// mark and the tombstone, both its own), and every stored revision has a
/// writer: a request, or kube-apiserver itself for its own keys. Only the
/// revisions the last run read anew may lack one (a request answered after
/// that run began may or may not have written what it read), and those
/// whose write before compaction took unread (an Event created and patched
/// between two runs): the join does not guess; and the tombstones a run
/// inferred for deletes compaction hid, which no request wrote as such.
/// Returns each attributed revision's write window, [received, answered]
/// (unbounded above for a request answered 504).
fn check_attribution(db: &Path, log: &Path) -> BTreeMap<(String, Revision), (Timestamp, Timestamp)> {
    let events = audit_events(log);
    let rows = every_revision(db);
    let mut heads: Vec<Revision> = runs(db)
        .iter()
        .filter_map(|r| r["head_revision"].as_i64().map(Revision))
        .collect();
    heads.sort_unstable();
    let settled = heads.iter().rev().nth(1).copied().unwrap_or_default();
    let mut truth = BTreeMap::new();
    let (mut wrong, mut unexplained, mut exact, mut two_step, mut open) = (Vec::new(), Vec::new(), 0, 0, 0);
    let (mut after_gap, mut hidden) = (0, 0);
    for (i, (key, row)) in rows.iter().enumerate() {
        // The write before this one of the object (its version less one)
        // is stored, unless compaction took it before a run read it: then
        // a request that wrote this revision cannot be told from one that
        // wrote the lost one, and the join does not guess.
        let follows = row.version <= 1
            || i.checked_sub(1).is_some_and(|p| {
                let (k, before) = &rows[p];
                k == key && before.create_revision == row.create_revision && before.version == row.version - 1
            });
        let Some(w) = &row.written_by else {
            if row.written_by_apiserver.is_none() {
                if row.deleted_after.is_some() {
                    // A tombstone a run inferred: no request wrote it.
                    hidden += 1;
                } else if row.mod_revision > settled {
                    open += 1;
                } else if !follows {
                    after_gap += 1;
                } else {
                    unexplained.push(format!("{key}@{}", row.mod_revision));
                }
            }
            continue;
        };
        let event = &events[&w.audit_id];
        let answered = if event.timed_out {
            Timestamp::MAX
        } else {
            event.answered
        };
        truth.insert((key.clone(), row.mod_revision), (event.received, answered));
        let (Match::Exact, Some(rv)) = (w.match_kind, event.response_revision) else {
            continue;
        };
        exact += 1;
        // A DELETE answers with its tombstone's revision; the update
        // marking the object just before it is the same request's.
        let marks_tombstone = event.verb == "delete"
            && rows
                .get(i + 1)
                .is_some_and(|(k, next)| k == key && next.deleted && next.mod_revision == Revision(rv));
        if marks_tombstone {
            two_step += 1;
        } else if Revision(rv) != row.mod_revision {
            wrong.push(format!(
                "{key}@{} joined exactly to {} answered with {rv}",
                row.mod_revision, w.audit_id
            ));
        }
    }
    eprintln!(
        "attribution: {exact} exact joins checked, {two_step} DELETEs that wrote two revisions, \
         {open} revisions after revision {settled} (read by the last run) left open, \
         {after_gap} whose write before was lost to compaction left open, \
         {hidden} tombstones of deletes compaction hid (inferred, so no request's)"
    );
    assert!(
        wrong.is_empty(),
        "exact joins the responses contradict:\n{}",
        wrong.join("\n")
    );
    assert!(
        unexplained.is_empty(),
        "revisions with no writer:\n{}\n{}",
        unexplained.join("\n"),
        explain(&rows, &unexplained, log)
    );
    assert!(
        exact > 100 && two_step > 0,
        "{exact} exact joins, {two_step} two-revision DELETEs"
    );
    truth
}

/// For a person reading a failure: each unexplained revision's key, its
/// stored revisions, and the audit log's requests naming its object.
fn explain(
    rows: &[(String, etcd_inspector::store::HistoryRow)],
    unexplained: &[String],
    log: &Path,
) -> String {
    let audit = std::fs::read_to_string(log).unwrap();
    let keys: std::collections::BTreeSet<&str> = unexplained
        .iter()
        .filter_map(|u| u.rsplit_once('@'))
        .map(|(k, _)| k)
        .collect();
    let mut out = String::new();
    for key in keys {
        out += &format!("{key}:\n");
        for (_, r) in rows.iter().filter(|(k, _)| k == key) {
            out += &format!(
                "  rev {} version {} deleted {} written {:?} by {:?}\n",
                r.mod_revision, r.version, r.deleted, r.written_between, r.written_by
            );
        }
        let name = key.rsplit('/').next().unwrap();
        for line in audit
            .lines()
            .filter(|l| l.contains(&format!("\"name\":\"{name}\"")))
        {
            let e: Value = serde_json::from_str(line).unwrap();
            out += &format!(
                "  {} {} {} code {} received {} answered {} by {}\n",
                e["auditID"],
                e["verb"],
                e["objectRef"]["subresource"],
                e["responseStatus"]["code"],
                e["requestReceivedTimestamp"],
                e["stageTimestamp"],
                e["userAgent"]
            );
        }
    }
    out
}

/// Checks the clock of a history read without any audit log: no interval
/// runs backwards, and each revision's interval meets the window in which
/// the audit log says it was written.
fn check_clock(db: &Path, truth: &BTreeMap<(String, Revision), (Timestamp, Timestamp)>) {
    let (mut checked, mut wrong) = (0, Vec::new());
    for (key, row) in every_revision(db) {
        let [from, to] = row
            .written_between
            .clone()
            .map(|t| t.map(|t| t.parse::<Timestamp>().unwrap()));
        if let (Some(from), Some(to)) = (from, to) {
            if from > to {
                wrong.push(format!(
                    "{key}@{}: runs backwards, {from} to {to}",
                    row.mod_revision
                ));
            }
        }
        let Some(&(received, answered)) = truth.get(&(key.clone(), row.mod_revision)) else {
            continue;
        };
        checked += 1;
        if from.is_some_and(|f| f > answered) || to.is_some_and(|t| t < received) {
            wrong.push(format!(
                "{key}@{}: the clock says {from:?} to {to:?}, the audit log {received} to {answered}",
                row.mod_revision
            ));
        }
    }
    eprintln!("clock: {checked} revisions checked against the audit log");
    assert!(checked > 100, "only {checked} revisions to check the clock on");
    assert!(wrong.is_empty(), "the clock is wrong:\n{}", wrong.join("\n"));
}

/// Findings of `detector` whose keys hold `key`.
fn findings_on(db: &Path, detector: &str, key: &str) -> Vec<Value> {
    findings(db, detector)
        .into_iter()
        .filter(|f| f["keys"].as_array().unwrap().iter().any(|k| k == key))
        .collect()
}

/// The demo's incident on the real control plane: each seed phenomenon
/// made the way it happens in clusters, through the real API, found by the
/// detector a reader expects at the severity a reader expects; planned
/// rewrites of every object of a kind (a key rotation, a storage-version
/// migration) one `info` finding each; nothing else at `low` or above.
#[test]
fn seed_phenomena_made_through_the_api_are_found() -> anyhow::Result<()> {
    let Some(mut plane) = TestPlane::start(Options::default()) else {
        return Ok(());
    };
    let db = plane.dir().join("seeds.db");
    real_scenario::prepare(&plane)?;
    snapshot_of(&plane, &db);
    real_scenario::incident(&mut plane)?;
    // The history proves how long the owner has been gone by the runs'
    // times: one run after the delete, and one two seconds later.
    snapshot_of(&plane, &db);
    std::thread::sleep(Duration::from_secs(2));
    snapshot_of(&plane, &db);
    ok(inspector(&db, &["analyze", "--stuck-after", "1s"]));

    let all = json(inspector(&db, &["findings", "-o", "json"]));
    let all = all.as_array().unwrap();
    let keys = |f: &Value| -> Vec<String> {
        f["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect()
    };
    let mut unexpected: Vec<String> = all
        .iter()
        .filter(|f| f["severity"] != "info")
        .filter(|f| {
            !real_scenario::EXPECTED
                .iter()
                .any(|e| f["detector"] == e.detector && keys(f).iter().any(|k| e.matches(k)))
        })
        .map(|f| format!("{} {}: {}", f["severity"], f["detector"], f["summary"]))
        .collect();
    for e in real_scenario::EXPECTED {
        let found: Vec<&Value> = all
            .iter()
            .filter(|f| f["detector"] == e.detector && keys(f).iter().any(|k| e.matches(k)))
            .collect();
        match found.as_slice() {
            [f] if f["severity"] == e.severity => {}
            _ => unexpected.push(format!(
                "expected one {} finding on {} at {}, found {found:#?}",
                e.detector, e.key, e.severity
            )),
        }
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));

    // What each finding says.
    let one = |detector: &str, key: &str| {
        let found = findings_on(&db, detector, key);
        assert_eq!(found.len(), 1, "{found:#?}");
        found[0].clone()
    };
    let fight = one("flapping", "/registry/deployments/seeds/web");
    let summary = fight["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("spec.replicas of Deployment seeds/web")
            && summary.contains("ci-pipeline")
            && summary.contains("kubectl"),
        "{summary}"
    );
    let prunable = one("prunable-fields", "/registry/example.com/widgets/seeds/w");
    assert_eq!(prunable["details"]["paths"], serde_json::json!(["spec.colour"]));
    let stuck = one("stuck-deletion", "/registry/configmaps/seeds/held");
    assert!(
        stuck["summary"].as_str().unwrap().contains("example.com/hold"),
        "{stuck:#?}"
    );
    let retried = findings(&db, "excess-siblings");
    assert_eq!(retried.len(), 1, "{retried:#?}");
    assert!(
        keys(&retried[0])
            .iter()
            .all(|k| k.starts_with("/registry/configmaps/seeds/retry-")),
        "{retried:#?}"
    );
    // The apiserver stored one of two identical ownerReferences (the
    // incident checks it), so nothing repeats.
    assert!(findings_on(&db, "duplicate-entries", "/registry/configmaps/seeds/owned").is_empty());
    // The planned operations: one finding each, for all the objects.
    for (resource, change) in [
        ("secrets", "aescbc:key1 → aescbc:key2"),
        ("gadgets.example.com", "example.com/v1 → example.com/v2"),
    ] {
        let found: Vec<Value> = findings(&db, "encoding-only")
            .into_iter()
            .filter(|f| f["details"]["resource"] == resource)
            .collect();
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            (&found[0]["details"]["count"], &found[0]["details"]["change"]),
            (&Value::from(real_scenario::PLANNED), &Value::from(change)),
            "{found:#?}"
        );
    }
    written_around_the_apiserver(&plane, &db)?;
    Ok(())
}

/// A ClusterRoleBinding granting cluster-admin put straight into etcd as
/// the apiserver would store it (protobuf, a uid, its creationTimestamp,
/// no resourceVersion), so its bytes say nothing, between writes the
/// apiserver makes and logs: with the real audit log, `foreign-writes`
/// finds it by the request that is not there, and only it.
fn written_around_the_apiserver(plane: &TestPlane, db: &Path) -> anyhow::Result<()> {
    let key = "/registry/clusterrolebindings/replayed-admin";
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let binding = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "replayed-admin", "uid": "4f6c1a2e-7b1d-4d8e-9a53-0c2b5e8f1a77", "creationTimestamp": now},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory@example.com"}]});
    plane.kubectl(&[
        "create",
        "configmap",
        "-n",
        "seeds",
        "before-replay",
        "--from-literal=a=b",
    ])?;
    let revision = plane.etcd.put(key, &encode_protobuf(&binding)?);
    plane.kubectl(&[
        "create",
        "configmap",
        "-n",
        "seeds",
        "after-replay",
        "--from-literal=a=b",
    ])?;
    snapshot_of(plane, db);
    let log = plane.audit_log.to_str().unwrap();
    ok(inspector(db, &["attribute", "--audit-log", log]));
    let found = findings(db, "foreign-writes");
    if found.len() != 1 {
        keep(plane, &[db]);
    }
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["keys"], serde_json::json!([key]), "{found:#?}");
    assert_eq!(found[0]["revisions"], serde_json::json!([revision]), "{found:#?}");
    assert_eq!(found[0]["severity"], "high");
    let evidence = &found[0]["details"]["evidence"];
    assert_eq!(evidence.as_array().map(Vec::len), Some(1), "{evidence}");
    assert_eq!(evidence[0]["signal"], "unaudited", "{evidence}");
    assert!(
        evidence[0]["detail"].as_str().unwrap().contains(log),
        "{evidence}"
    );
    Ok(())
}

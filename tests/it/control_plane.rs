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
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// One shop: two Deployments behind Services, a ConfigMap whose keys hold
/// dots, and a CronJob every minute whose Jobs complete and are cleaned up.
const SHOP: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
  labels:
    app.kubernetes.io/name: web
data:
  app.properties: "color=blue"
  log.level: info
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app.kubernetes.io/name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      containers:
      - name: web
        image: registry.example.com/web:1.0
        ports:
        - containerPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels:
      app: api
  template:
    metadata:
      labels:
        app: api
    spec:
      containers:
      - name: api
        image: registry.example.com/api:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app.kubernetes.io/name: web
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: shop
spec:
  selector:
    app: api
  ports:
  - port: 80
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
  namespace: shop
spec:
  schedule: "* * * * *"
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: tick
            image: registry.example.com/tick:1.0
"#;

/// Reads the control plane's etcd with `snapshot` into `db`, with the
/// apiserver's encryption config.
fn snapshot_of(plane: &ControlPlane, db: &Path) -> std::process::Output {
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
fn keep(plane: &ControlPlane, dbs: &[&Path]) {
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
fn completed_jobs(plane: &ControlPlane, seen: &mut std::collections::BTreeSet<String>) {
    let text = plane.jsonpath(
        &["jobs", "-n", "shop"],
        "{range .items[?(@.status.succeeded==1)]}{.metadata.name}{\"\\n\"}{end}",
    );
    seen.extend(text.lines().map(str::to_string));
}

#[test]
fn healthy_cluster_gives_no_finding() {
    let Some(mut plane) = ControlPlane::start(Options {
        compaction_interval: Duration::from_secs(50),
    }) else {
        return;
    };
    eprintln!("control plane {} on etcd {}", plane.version, etcd::etcd_version());
    let live = plane.dir().join("live.db");
    let followed = plane.dir().join("followed.db");
    let follow_log = std::fs::File::create(plane.dir().join("follow.log")).unwrap();
    let mut follow = std::process::Command::new(env!("CARGO_BIN_EXE_etcd-inspector"))
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
        .unwrap();
    let started = Instant::now();
    let mut last_snapshot = Instant::now();
    let mut snapshot_every_minute = |plane: &ControlPlane| {
        if last_snapshot.elapsed() >= Duration::from_secs(60) {
            snapshot_of(plane, &live);
            last_snapshot = Instant::now();
        }
    };

    plane.apply(SHOP);
    snapshot_of(&plane, &live);
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/web", "--timeout=120s"]);
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/api", "--timeout=120s"]);

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
    );
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/web", "--timeout=120s"]);
    snapshot_every_minute(&plane);
    plane.apply(&SHOP.replace("color=blue", "color=green"));
    plane.kubectl_as(
        "alice@example.com",
        &["scale", "-n", "shop", "deploy/api", "--replicas=3"],
        None,
    );
    plane.kubectl(&["rollout", "status", "-n", "shop", "deploy/api", "--timeout=120s"]);
    snapshot_every_minute(&plane);

    // The apiserver restarts (an upgrade, a node reboot).
    plane.restart_apiserver();
    snapshot_every_minute(&plane);

    // Two CronJob runs complete and at least three compactions pass.
    let mut jobs = std::collections::BTreeSet::new();
    plane.wait_for(
        Duration::from_secs(300),
        "two Jobs of the CronJob completed",
        |cp| {
            snapshot_every_minute(cp);
            completed_jobs(cp, &mut jobs);
            jobs.len() >= 2
        },
    );
    while started.elapsed() < Duration::from_secs(200) {
        snapshot_every_minute(&plane);
        std::thread::sleep(Duration::from_secs(1));
    }
    snapshot_of(&plane, &live);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &follow.id().to_string()])
        .status();
    let stopped = follow.wait().unwrap();
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
    assert!(
        found.is_empty(),
        "a healthy cluster gave {} findings at low or above:\n{}",
        found.len(),
        found.join("\n"),
    );
}

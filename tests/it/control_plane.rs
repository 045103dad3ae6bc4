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
use etcd_inspector::store::audit::Match;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeMap;
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
    // The report opens by saying so.
    let report = ok(inspector(&live, &["report", "--format", "text"]));
    let first = String::from_utf8_lossy(&report.stdout)
        .lines()
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(first.contains("Nothing to worry about"), "{first}");
    let truth = check_attribution(&live, &plane.audit_log);
    check_clock(&followed, &truth);
    assert!(
        found.is_empty(),
        "a healthy cluster gave {} findings at low or above:\n{}",
        found.len(),
        found.join("\n"),
    );
}

/// A write the audit log recorded: its verb, when the apiserver received
/// it and when it answered, and the revision its response carried.
struct Written {
    verb: String,
    received: Timestamp,
    answered: Timestamp,
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
/// revisions the last run read anew may lack one: a request answered after
/// that run began may or may not have written what it read, and the join
/// does not guess. Returns each attributed revision's write window,
/// [received, answered].
fn check_attribution(db: &Path, log: &Path) -> BTreeMap<(String, i64), (Timestamp, Timestamp)> {
    let events = audit_events(log);
    let rows = every_revision(db);
    let mut heads: Vec<i64> = runs(db)
        .iter()
        .filter_map(|r| r["head_revision"].as_i64())
        .collect();
    heads.sort_unstable();
    let settled = heads.iter().rev().nth(1).copied().unwrap_or(0);
    let mut truth = BTreeMap::new();
    let (mut wrong, mut unexplained, mut exact, mut two_step, mut open) = (Vec::new(), Vec::new(), 0, 0, 0);
    for (i, (key, row)) in rows.iter().enumerate() {
        let Some(w) = &row.written_by else {
            if row.written_by_apiserver.is_none() {
                if row.mod_revision > settled {
                    open += 1;
                } else {
                    unexplained.push(format!("{key}@{}", row.mod_revision));
                }
            }
            continue;
        };
        let event = &events[&w.audit_id];
        truth.insert((key.clone(), row.mod_revision), (event.received, event.answered));
        let (Match::Exact, Some(rv)) = (w.match_kind, event.response_revision) else {
            continue;
        };
        exact += 1;
        // A DELETE answers with its tombstone's revision; the update
        // marking the object just before it is the same request's.
        let marks_tombstone = event.verb == "delete"
            && rows
                .get(i + 1)
                .is_some_and(|(k, next)| k == key && next.deleted && next.mod_revision == rv);
        if marks_tombstone {
            two_step += 1;
        } else if rv != row.mod_revision {
            wrong.push(format!(
                "{key}@{} joined exactly to {} answered with {rv}",
                row.mod_revision, w.audit_id
            ));
        }
    }
    eprintln!(
        "attribution: {exact} exact joins checked, {two_step} DELETEs that wrote two revisions, \
         {open} revisions after revision {settled} (read by the last run) left open"
    );
    assert!(
        wrong.is_empty(),
        "exact joins the responses contradict:\n{}",
        wrong.join("\n")
    );
    assert!(
        unexplained.is_empty(),
        "revisions with no writer:\n{}",
        unexplained.join("\n")
    );
    assert!(
        exact > 100 && two_step > 0,
        "{exact} exact joins, {two_step} two-revision DELETEs"
    );
    truth
}

/// Checks the clock of a history read without any audit log: no interval
/// runs backwards, and each revision's interval meets the window in which
/// the audit log says it was written.
fn check_clock(db: &Path, truth: &BTreeMap<(String, i64), (Timestamp, Timestamp)>) {
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

/// What the seed phenomena start from: a namespace and a Deployment
/// someone will delete and apply again.
const SEEDS: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: seeds
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: recreated
  namespace: seeds
spec:
  replicas: 0
  selector:
    matchLabels:
      app: recreated
  template:
    metadata:
      labels:
        app: recreated
    spec:
      containers:
      - name: app
        image: registry.example.com/app:1.0
"#;

/// The shop's web Deployment, in the seeds namespace: what a pipeline
/// applies.
fn pipeline_deployment() -> String {
    SHOP.split("---\n")
        .find(|doc| doc.starts_with("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"))
        .expect("the shop has a web Deployment")
        .replace("namespace: shop", "namespace: seeds")
}

/// A CRD for Widgets whose schema declares `spec.size` and the `extra`
/// properties given.
fn widget_crd(extra: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer}}{extra}
"#
    )
}

/// Findings of `detector` whose keys hold `key`.
fn findings_on(db: &Path, detector: &str, key: &str) -> Vec<Value> {
    findings(db, detector)
        .into_iter()
        .filter(|f| f["keys"].as_array().unwrap().iter().any(|k| k == key))
        .collect()
}

/// Each seed phenomenon made the way it happens in clusters, through the
/// real API, and found by the detector a reader expects at the severity a
/// reader expects.
#[test]
fn seed_phenomena_made_through_the_api_are_found() {
    let Some(plane) = ControlPlane::start(Options::default()) else {
        return;
    };
    let db = plane.dir().join("seeds.db");
    plane.apply(SEEDS);
    snapshot_of(&plane, &db);

    // Two writers fight over one field: a pipeline's server-side apply sets
    // replicas to 2, a person's `kubectl scale` to 5, three times over.
    for _ in 0..3 {
        plane.kubectl_as(
            "ci-pipeline",
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=ci-pipeline",
                "-f",
                "-",
            ],
            Some(&pipeline_deployment()),
        );
        plane.kubectl_as(
            "alice@example.com",
            &["scale", "-n", "seeds", "deploy/web", "--replicas=5"],
            None,
        );
    }
    // A RoleBinding whose subject is listed twice: the API accepts it.
    plane.apply(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: readers
  namespace: seeds
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: view
subjects:
- kind: User
  name: bob@example.com
  apiGroup: rbac.authorization.k8s.io
- kind: User
  name: bob@example.com
  apiGroup: rbac.authorization.k8s.io
"#,
    );
    // Deleted and created again under the same name, the same content.
    plane.kubectl(&["delete", "deployment", "-n", "seeds", "recreated"]);
    plane.apply(SEEDS);
    // A deletion held by a finalizer nobody removes.
    plane.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: seeds\n  finalizers: [example.com/hold]\ndata:\n  a: b\n",
    );
    plane.kubectl(&["delete", "configmap", "-n", "seeds", "held", "--wait=false"]);
    // A create retried after the client timed out: the same object posted
    // twice with generateName.
    let retried = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: retry-\n  namespace: seeds\ndata:\n  job: nightly\n";
    plane.kubectl_as("ci-pipeline", &["create", "-f", "-"], Some(retried));
    plane.kubectl_as("ci-pipeline", &["create", "-f", "-"], Some(retried));
    // A status write that loses to a newer one: an old controller writes
    // the observedGeneration it last saw over the newer status.
    plane.wait_for(
        Duration::from_secs(60),
        "the Deployment's status observed",
        |cp| {
            cp.jsonpath(&["deploy", "-n", "seeds", "web"], "{.status.observedGeneration}")
                == cp.jsonpath(&["deploy", "-n", "seeds", "web"], "{.metadata.generation}")
        },
    );
    plane.kubectl_as(
        "ci-pipeline",
        &[
            "patch",
            "deploy",
            "-n",
            "seeds",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1}}"#,
        ],
        None,
    );
    // Duplicate ownerReferences cannot reach etcd through a current
    // apiserver: it stores one of two identical references (only old
    // releases and writes around it store both).
    plane.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n  namespace: seeds\n");
    let uid = plane.jsonpath(&["configmap", "-n", "seeds", "owner"], "{.metadata.uid}");
    let reference = format!("  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n");
    plane.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\n  namespace: seeds\n  ownerReferences:\n{reference}{reference}"
    ));
    let stored = plane.jsonpath(
        &["configmap", "-n", "seeds", "owned"],
        "{.metadata.ownerReferences[*].uid}",
    );
    assert_eq!(stored.split_whitespace().count(), 1, "{stored}");
    // A CRD whose schema is tightened after a custom resource was written:
    // the field stays stored until the next write drops it.
    plane.apply(&widget_crd("\n              colour: {type: string}"));
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=60s",
    ]);
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: seeds\nspec:\n  size: 1\n  colour: red\n";
    plane.wait_for(Duration::from_secs(30), "the Widget created", |cp| {
        cp.try_apply(widget)
    });
    plane.apply(&widget_crd(""));
    // An owner deleted while the garbage collector is not running (the
    // controller manager down): its dependent stays, pointing at nothing.
    plane.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n  namespace: seeds\n");
    let uid = plane.jsonpath(&["configmap", "-n", "seeds", "parent"], "{.metadata.uid}");
    plane.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: seeds\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: parent, uid: {uid}}}\n"
    ));
    plane.stop("kube-controller-manager");
    plane.kubectl(&["delete", "configmap", "-n", "seeds", "parent"]);
    // The history proves how long it has dangled by the runs' times: one
    // run after the delete, and one two seconds later.
    snapshot_of(&plane, &db);
    std::thread::sleep(Duration::from_secs(2));
    snapshot_of(&plane, &db);
    ok(inspector(&db, &["analyze", "--stuck-after", "1s"]));
    assert!(findings_on(&db, "duplicate-entries", "/registry/configmaps/seeds/owned").is_empty());
    let prunable = findings_on(&db, "prunable-fields", "/registry/example.com/widgets/seeds/w");
    assert_eq!(prunable.len(), 1, "{prunable:#?}");
    assert_eq!(prunable[0]["severity"], "medium");
    assert_eq!(
        prunable[0]["details"]["paths"],
        serde_json::json!(["spec.colour"])
    );
    let dangling = findings_on(&db, "dangling-owner", "/registry/configmaps/seeds/orphan");
    assert_eq!(dangling.len(), 1, "{dangling:#?}");
    assert_eq!(dangling[0]["severity"], "medium");

    let deployment = "/registry/deployments/seeds/web";
    let fight = findings_on(&db, "flapping", deployment);
    assert_eq!(fight.len(), 1, "{fight:#?}");
    let summary = fight[0]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("spec.replicas of Deployment seeds/web")
            && summary.contains("ci-pipeline")
            && summary.contains("kubectl"),
        "{summary}"
    );
    assert_eq!(fight[0]["severity"], "medium");

    let dup = findings_on(&db, "duplicate-entries", "/registry/rolebindings/seeds/readers");
    assert_eq!(dup.len(), 1, "{dup:#?}");
    assert_eq!(dup[0]["severity"], "medium");

    let again = findings_on(&db, "recreated", "/registry/deployments/seeds/recreated");
    assert_eq!(again.len(), 1, "{again:#?}");
    assert_eq!(again[0]["severity"], "medium");

    let stuck = findings_on(&db, "stuck-deletion", "/registry/configmaps/seeds/held");
    assert_eq!(stuck.len(), 1, "{stuck:#?}");
    assert!(
        stuck[0]["summary"].as_str().unwrap().contains("example.com/hold"),
        "{stuck:#?}"
    );

    let retried = findings(&db, "excess-siblings");
    assert_eq!(retried.len(), 1, "{retried:#?}");
    assert!(
        retried[0]["keys"].as_array().unwrap().iter().all(|k| k
            .as_str()
            .unwrap()
            .starts_with("/registry/configmaps/seeds/retry-")),
        "{retried:#?}"
    );

    let stale = findings_on(&db, "generation-mismatch", deployment);
    assert_eq!(stale.len(), 1, "{stale:#?}");
    assert_eq!(stale[0]["severity"], "high", "{stale:#?}");
}

/// Planned operations that rewrite every object of a kind, a Secrets
/// encryption-key rotation and a CRD storage-version migration, each done
/// the documented way (`kubectl get -o json | kubectl replace -f -`): one
/// `info` finding each, not one per object, and nothing at `low` or above.
#[test]
fn a_key_rotation_and_a_storage_migration_are_one_finding_each() {
    let Some(mut plane) = ControlPlane::start(Options::default()) else {
        return;
    };
    let db = plane.dir().join("planned.db");
    plane.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: planned\n");
    for i in 0..5 {
        plane.kubectl(&[
            "create",
            "secret",
            "generic",
            &format!("s{i}"),
            "-n",
            "planned",
            "--from-literal=password=p4ss-{i}",
        ]);
    }
    plane.apply(&widget_crd(""));
    plane.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=60s",
    ]);
    for i in 0..5 {
        let widget = format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w{i}\n  namespace: planned\nspec:\n  size: {i}\n");
        plane.wait_for(Duration::from_secs(30), "a Widget created", |cp| {
            cp.try_apply(&widget)
        });
    }
    snapshot_of(&plane, &db);

    plane.rotate_encryption_key();
    let secrets = plane.kubectl(&["get", "secrets", "-n", "planned", "-o", "json"]);
    plane.kubectl_as(
        "admin",
        &["replace", "-f", "-"],
        Some(&String::from_utf8(secrets.stdout).unwrap()),
    );
    plane.apply(&widget_crd("").replace(
        "  - name: v1\n    served: true\n    storage: true\n",
        "  - name: v1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer}\n  - name: v2\n    served: true\n    storage: true\n",
    ));
    let widgets = plane.kubectl(&["get", "widgets.example.com", "-n", "planned", "-o", "json"]);
    plane.kubectl_as(
        "admin",
        &["replace", "-f", "-"],
        Some(&String::from_utf8(widgets.stdout).unwrap()),
    );
    snapshot_of(&plane, &db);
    let noise = noise(&db);
    assert!(noise.is_empty(), "{noise:#?}");
    let rewrites = findings(&db, "encoding-only");
    let one = |resource: &str, change: &str| {
        let found: Vec<&Value> = rewrites
            .iter()
            .filter(|f| f["details"]["resource"] == resource)
            .collect();
        assert_eq!(found.len(), 1, "{rewrites:#?}");
        assert_eq!(
            (
                &found[0]["severity"],
                &found[0]["details"]["count"],
                &found[0]["details"]["change"]
            ),
            (&Value::from("info"), &Value::from(5), &Value::from(change)),
            "{found:#?}"
        );
    };
    one("secrets", "aescbc:key1 → aescbc:key2");
    one("widgets.example.com", "example.com/v1 → example.com/v2");
    assert_eq!(rewrites.len(), 2, "{rewrites:#?}");
}

//! The performance benchmark: fills a vendored etcd with a realistic
//! keyspace (Pods of about 6 KiB with managedFields, ReplicaSets,
//! Deployments, Services, EndpointSlices, ConfigMaps, Secrets, Events,
//! Leases, custom resources in JSON) updated several times each, then times
//! each step next to its baseline measured in the same run and prints a
//! table of medians with peak memory.
//!
//! Run: `cargo run --release --example bench -- [OBJECTS] [UPDATES] [REPEATS]`
//! (defaults 5000 3 3). Asserts nothing: it measures. With `BENCH_KEEP` set
//! in the environment the databases and the db file are kept for inspection;
//! `BENCH_WRAP="heaptrack -o /tmp/ht"` runs each command under a profiler.
//! `BENCH_POD=fixture` makes every Pod Kubernetes' fully filled Pod fixture
//! (from `../shared/corpus`), renamed and with its status changed per
//! update. `--baseline PATH` (or `BENCH_BASELINE=PATH`) also times an older
//! `etcd-inspector` binary's `snapshot --file` on the same file, side by
//! side, and checks both stored the same contents. `BENCH_KEYSPACE=small` makes every object
//! a small ConfigMap (the 10,000 × 10 case: `bench 10000 9 1`).
//! Each case also times the floor of a file run beside `snapshot --file`:
//! the file opened and read in key order by the tool's reader, each value
//! hashed and one row per revision stored, nothing decoded
//! (`BENCH_CASE=floor bench FILE` times it on any db file).
//! `BENCH_CASE=stage bench FILE [ROUNDS]` times the per-revision stage alone
//! (decoding, canonical JSON, hashes, facts; no compression or database)
//! over every revision of a db file on one thread.
//!
//! `BENCH_CASE=large` is the large-cluster case of issue 28: `bench
//! [OBJECTS] [UPDATES]` (defaults 150000 3: 600,000 revisions, an 8 GiB db
//! file) with every object the fully filled Pod fixture, in an etcd with a
//! `BENCH_QUOTA_GIB` backend quota (default 16). It downloads the snapshot
//! file (`etcd.db`) and times each command once, one after another: first
//! live runs (`--fetch auto` and `--fetch watch`), `snapshot --file` (its
//! database is `base.sqlite`), then on a copy `analyze`, `findings`,
//! `stats`, `report` in every format, `history` of one key, `diff` between
//! two revisions, a second live run with 1% of the objects changed, `diff`
//! between the two runs and `prune`; then, on a database twice the size
//! (the same file stored once more as a second cluster, `--cluster-id`),
//! `analyze`, `findings`, `stats`, `report` and `prune`. Each runs with its
//! process tree's RSS capped at `BENCH_MEM_CAP_GIB` (default 6) and killed after
//! `BENCH_TIMEOUT` seconds (default 600), the table then saying so instead
//! of a figure. `BENCH_DIR=PATH` works in PATH and keeps `etcd.db` and
//! `base.sqlite` (with its `.key`) there; `BENCH_KEEP` keeps every
//! database and output too. Nothing is held whole in memory: no
//! plain-file baseline, writes and the download are streamed.

#[path = "../tests/it/util/etcd.rs"]
#[allow(dead_code)]
mod etcd;

use anyhow::{Context, Result};
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::source::bolt::BoltDb;
use etcd_inspector::source::{db_file, Record, Revision};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn managed(manager: &str, minute: usize) -> Value {
    json!([{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": format!("2026-11-29T08:{:02}:00Z", minute % 60),
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}, "f:pod-template-hash": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:env": {}, "f:resources": {}}}}}}])
}

/// Kubernetes' fully filled Pod fixture as JSON, when `BENCH_POD=fixture`.
fn fixture_pod() -> Option<Value> {
    if std::env::var("BENCH_POD").ok()? != "fixture" {
        return None;
    }
    Some(load_fixture_pod())
}

/// Kubernetes' fully filled Pod fixture (from `../shared/corpus`) as JSON.
fn load_fixture_pod() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/k8s-api-fixtures/core.v1.Pod.pb");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("BENCH_POD=fixture needs {}: {e}", path.display()));
    match etcd_inspector::decode::decode_value(&bytes) {
        Ok(etcd_inspector::decode::Outcome::Decoded(d)) => d.object,
        _ => panic!("{} does not decode", path.display()),
    }
}

/// The fully filled Pod as object `i` at update `round`.
fn filled_pod(template: &Value, i: usize, round: usize) -> (String, Vec<u8>) {
    let mut pod = template.clone();
    let ns = format!("team-{}", i % 40);
    let name = format!("app-{i}");
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["namespace"] = json!(ns);
    pod["metadata"]["uid"] = json!(format!("uid-{i}"));
    pod["status"]["message"] = json!(format!("round {round}"));
    (
        format!("/registry/pods/{ns}/{name}"),
        encode_protobuf(&pod).expect("the fixture re-encodes"),
    )
}

/// One object of the keyspace, as stored, at update `round`.
fn object(i: usize, round: usize) -> (String, Vec<u8>) {
    thread_local! {
        static FIXTURE: Option<Value> = fixture_pod();
    }
    if std::env::var("BENCH_KEYSPACE").is_ok_and(|k| k == "small") {
        let ns = format!("team-{}", i % 40);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": ns, "uid": format!("uid-{i}")},
            "data": {"round": round.to_string(), "mode": "fast"}});
        return (
            format!("/registry/configmaps/{ns}/cm-{i}"),
            encode_protobuf(&cm).expect("a ConfigMap"),
        );
    }
    if i % 10 <= 3 {
        if let Some(pod) = FIXTURE.with(|f| f.as_ref().map(|t| filled_pod(t, i, round))) {
            return pod;
        }
    }
    let ns = format!("team-{}", i % 40);
    let meta = |name: &str| {
        json!({"name": name, "namespace": ns, "uid": format!("uid-{i}"), "creationTimestamp": "2026-11-29T07:00:00Z",
                                   "labels": {"app": format!("app-{}", i % 300), "pod-template-hash": "5d8f7c9b6"}, "managedFields": managed("kube-controller-manager", round)})
    };
    let pb = |v: Value| encode_protobuf(&v).expect("built-in object");
    match i % 10 {
        0..=3 => {
            let name = format!("app-{i}");
            // Updates between compactions are mostly status: restarts,
            // conditions, and the managedFields time of the writer.
            let env: Vec<Value> = (0..40)
                .map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-of-app-{i}-padding-to-a-realistic-size")}))
                .collect();
            let container = |name: &str, image: &str| {
                json!({"name": name, "image": image, "env": env, "imagePullPolicy": "IfNotPresent",
                       "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                       "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                       "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                       "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
            };
            let at = |minute: usize| format!("2026-11-29T{:02}:{:02}:00Z", 8 + minute / 60 % 12, minute % 60);
            let status = |name: &str| {
                json!({"name": name, "ready": true, "restartCount": round, "image": "registry.example.com/app:1.4.2",
                       "imageID": "registry.example.com/app@sha256:5d8f7c9b6a1e2f3d4c5b6a7980f1e2d3c4b5a69788f9e0d1c2b3a4958677e8f9",
                       "containerID": format!("containerd://{i:08x}{round:056x}"), "started": true,
                       "state": {"running": {"startedAt": at(round * 7)}}})
            };
            let conditions: Vec<Value> = ["Initialized", "Ready", "ContainersReady", "PodScheduled"]
                .iter()
                .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": at(round * 7)}))
                .collect();
            let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta(&name),
                "spec": {"containers": [container("app", "registry.example.com/app:1.4.2"), container("proxy", "registry.example.com/proxy:2.0.1")],
                         "volumes": [{"name": "config", "configMap": {"name": format!("cm-{i}"), "defaultMode": 420}}],
                         "nodeName": format!("node-{}", i % 50), "serviceAccountName": "default", "restartPolicy": "Always",
                         "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "priority": 0,
                         "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                                         {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
                "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", i % 250, i / 250 % 250), "hostIP": format!("192.168.0.{}", i % 50),
                           "qosClass": "Burstable", "startTime": "2026-11-29T07:00:00Z",
                           "conditions": conditions,
                           "containerStatuses": [status("app"), status("proxy")]}});
            (format!("/registry/pods/{ns}/{name}"), pb(pod))
        }
        4 => (
            format!("/registry/replicasets/{ns}/rs-{i}"),
            pb(
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(&format!("rs-{i}")),
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}}}, "status": {"replicas": 3, "observedGeneration": round}}),
            ),
        ),
        5 => (
            format!("/registry/services/specs/{ns}/svc-{i}"),
            pb(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(&format!("svc-{i}")),
                "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "x"}, "clusterIP": format!("10.96.{}.{}", i % 250, 1)}}),
            ),
        ),
        6 => (
            format!("/registry/configmaps/{ns}/cm-{i}"),
            pb(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("cm-{i}")),
                "data": {"config.yaml": format!("round: {round}\n{}", "key: value\n".repeat(50))}}),
            ),
        ),
        7 => (
            format!("/registry/leases/kube-node-lease/lease-{i}"),
            pb(
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta(&format!("lease-{i}")),
                "spec": {"holderIdentity": format!("node-{i}"), "leaseDurationSeconds": 40, "renewTime": format!("2026-11-29T08:{:02}:00.000000Z", round % 60)}}),
            ),
        ),
        8 => (
            format!("/registry/events/{ns}/ev-{i}"),
            pb(
                json!({"apiVersion": "v1", "kind": "Event", "metadata": meta(&format!("ev-{i}")),
                "involvedObject": {"kind": "Pod", "name": format!("app-{i}"), "namespace": ns}, "reason": "Pulled", "message": format!("pulled image, round {round}"), "count": round + 1}),
            ),
        ),
        _ => {
            let mut v = serde_json::to_vec(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta(&format!("w-{i}")), "spec": {"size": round, "colour": "blue"}})).unwrap();
            v.push(b'\n');
            (format!("/registry/example.com/widgets/{ns}/w-{i}"), v)
        }
    }
}

/// How the newest run of the database at `db` fetched.
fn runs_fetched(db: &Path) -> Result<String> {
    let runs = etcd_inspector::store::Store::open_for_reading(db)?.runs()?;
    Ok(runs
        .last()
        .and_then(|r| r.fetched.clone())
        .unwrap_or_else(|| "-".into()))
}

/// SHA-256 over what a run stored: each revision's key, revision, value
/// hash, semantic hash, change class and cause and changed paths, in order.
/// The database is opened by this version first, so one an older binary
/// wrote is upgraded (its field paths in today's printed form). Read as
/// rows of the schema, the one place a benchmark reads SQL: a baseline's
/// database may hold what today's interface no longer reads.
fn digest(db: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    drop(etcd_inspector::store::Store::open_for_reading(db)?);
    let conn = rusqlite::Connection::open(db)?;
    let mut stmt = conn.prepare(
        "SELECT k.key, r.mod_revision, r.value_sha256, r.semantic_sha256, r.change_class, r.change_cause, r.changed_paths \
         FROM revisions r JOIN keys k ON k.id = r.key_id ORDER BY k.key, r.mod_revision",
    )?;
    let mut hash = Sha256::new();
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        for i in 0..7 {
            let v: rusqlite::types::Value = r.get(i)?;
            hash.update(format!("{v:?}|").as_bytes());
        }
    }
    Ok(etcd_inspector::hex::hex(&hash.finalize()))
}

/// One row per revision, as few columns as the tool's revisions table
/// needs to tell revisions apart and say what they held.
struct FloorRows {
    conn: rusqlite::Connection,
    in_batch: usize,
}

impl etcd_inspector::source::Sink for FloorRows {
    type Error = rusqlite::Error;

    fn record(&mut self, r: Record) -> Result<bool, rusqlite::Error> {
        use sha2::Digest;
        if self.in_batch == 0 {
            self.conn.execute_batch("BEGIN")?;
        }
        let hash = (!r.deleted).then(|| sha2::Sha256::digest(&r.value).to_vec());
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO revisions (key, mod_revision, create_revision, version, deleted, value_sha256) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(rusqlite::params![r.key, r.mod_revision.0, r.create_revision.0, r.version, r.deleted, hash])?;
        self.in_batch += 1;
        if self.in_batch == 2000 {
            self.conn.execute_batch("COMMIT")?;
            self.in_batch = 0;
        }
        Ok(true)
    }
}

/// The floor of a file run (issue 28): the file opened and verified as the
/// tool opens it, read in key order by its reader, each value hashed and one
/// row per revision stored, and nothing decoded, canonicalised, hashed per
/// field or compressed. What a faster decoder cannot save; seconds.
fn floor_run(file: &Path, db: &Path) -> Result<f64> {
    let t = Instant::now();
    let bolt = BoltDb::open(file)?;
    let conn = rusqlite::Connection::open(db)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         CREATE TABLE revisions (key BLOB NOT NULL, mod_revision INTEGER NOT NULL, create_revision INTEGER, \
         version INTEGER, deleted INTEGER, value_sha256 BLOB, PRIMARY KEY (key, mod_revision)) WITHOUT ROWID",
    )?;
    let mut rows = FloorRows { conn, in_batch: 0 };
    db_file::read_revisions(&bolt, b"/registry/", Revision(0), 0, &mut rows)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if rows.in_batch > 0 {
        rows.conn.execute_batch("COMMIT")?;
    }
    drop(rows);
    Ok(t.elapsed().as_secs_f64())
}

/// The per-revision stage of a file run alone (issue 28, point 4): every
/// revision of the db `file` through [`ingest`] (decoding, the canonical
/// JSON, the semantic, field and raw value hashes, the facts and repeated
/// entries; no compression, no database), on one thread, in (key, revision)
/// order as a file run decodes them. Prints each round's total and the Pods'
/// share, whose time per revision is the fully filled Pod's with
/// `BENCH_POD=fixture`.
///
/// [`ingest`]: etcd_inspector::ingest::revision::ingest
fn stage_run(file: &Path, rounds: usize) -> Result<()> {
    use etcd_inspector::canon::keyed_hash::ValueHasher;
    use etcd_inspector::canon::semantic::FieldConfig;
    use etcd_inspector::decode::key::parse_key;
    use etcd_inspector::ingest::foreign::{KeyIdentity, Kinds};
    use etcd_inspector::ingest::open::KeyClass;
    use etcd_inspector::ingest::revision::ingest;
    let bolt = BoltDb::open(file)?;
    let mut records: Vec<Record> = Vec::new();
    db_file::read_revisions(&bolt, b"/registry/", Revision(0), 0, &mut records)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    records.sort_by(|a, b| (&a.key, a.mod_revision).cmp(&(&b.key, b.mod_revision)));
    let config = FieldConfig {
        depth: 2,
        sensitivity: Default::default(),
    };
    let hasher = ValueHasher::new([7; 32]);
    let mut kinds = Kinds::default();
    for _ in 0..rounds {
        let (mut all, mut pods, mut n_pods) = (0.0, 0.0, 0);
        for r in records.clone() {
            let is_pod = r.key.starts_with(b"/registry/pods/");
            let key = String::from_utf8_lossy(&r.key).into_owned();
            // A run reads what a key's name says once per key, not per revision.
            let identity = parse_key(&key, "/registry/")
                .ok()
                .map(|p| KeyIdentity::of(&p, &mut kinds));
            let t = Instant::now();
            let parsed = parse_key(&key, "/registry/").ok();
            let class = KeyClass::of(parsed.as_ref(), None);
            std::hint::black_box(ingest(r, &class, identity.as_ref(), &config, &hasher, None));
            let seconds = t.elapsed().as_secs_f64();
            all += seconds;
            if is_pod {
                pods += seconds;
                n_pods += 1;
            }
        }
        println!(
            "stage: {} revisions {all:.3} s; {n_pods} pod revisions {pods:.3} s ({:.1} µs each)",
            records.len(),
            pods / n_pods.max(1) as f64 * 1e6
        );
    }
    Ok(())
}

/// Writes to `log` the audit log kube-apiserver would have written for
/// every revision in the db `file`, at level RequestResponse: a
/// RequestReceived and a ResponseComplete event per write, the response
/// carrying the object (a body as large as the stored value) and its
/// revision. Returns the number of events.
fn write_audit_log(file: &Path, log: &Path) -> Result<usize> {
    use std::io::Write;
    let bolt = BoltDb::open(file)?;
    let mut records: Vec<Record> = Vec::new();
    db_file::read_revisions(&bolt, b"/registry/", Revision(0), 0, &mut records)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(log)?);
    let mut events = 0;
    for (n, r) in records.iter().enumerate() {
        let key = String::from_utf8_lossy(&r.key);
        let Ok(k) = etcd_inspector::decode::key::parse_key(&key, "/registry") else {
            continue;
        };
        let verb = match (r.deleted, r.version) {
            (true, _) => "delete",
            (false, 1) => "create",
            _ => "update",
        };
        let at = format!(
            "2026-11-29T09:{:02}:{:02}.{:06}Z",
            (n / 60_000) % 60,
            (n / 1000) % 60,
            (n % 1000) * 1000
        );
        let mut event = json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
            "auditID": format!("bench-{n}"), "stage": "RequestReceived", "verb": verb,
            "user": {"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": ["system:serviceaccounts", "system:authenticated"]},
            "sourceIPs": ["10.0.0.11"], "userAgent": "kube-controller-manager/v1.31.0 (linux/amd64) kubernetes/abcdef",
            "objectRef": {"resource": k.resource, "namespace": k.namespace, "name": k.name, "apiGroup": k.group, "apiVersion": "v1"},
            "requestReceivedTimestamp": at, "stageTimestamp": at});
        writeln!(out, "{event}")?;
        event["stage"] = json!("ResponseComplete");
        event["responseStatus"] = json!({"code": if verb == "create" { 201 } else { 200 }});
        event["responseObject"] = json!({"kind": "Object", "apiVersion": "v1",
            "metadata": {"name": k.name, "resourceVersion": r.mod_revision.to_string()},
            "data": {"body": "x".repeat(r.value.len())}});
        writeln!(out, "{event}")?;
        events += 2;
    }
    out.flush()?;
    Ok(events)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// Runs the etcd-inspector binary under /usr/bin/time: seconds and max RSS in KiB.
fn timed(bin: &Path, args: &[&str]) -> Result<(f64, u64)> {
    let report = tempfile::NamedTempFile::new()?;
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%e %M", "-o", report.path().to_str().unwrap()])
        .args(
            std::env::var("BENCH_WRAP")
                .iter()
                .flat_map(|w| w.split_whitespace()),
        )
        .arg(bin)
        .args(args)
        .output()
        .context("running /usr/bin/time (Debian package `time`)")?;
    anyhow::ensure!(
        out.status.success(),
        "{:?} failed: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(report.path())?;
    let mut parts = text.split_whitespace();
    Ok((
        parts.next().unwrap_or("0").parse()?,
        parts.next().unwrap_or("0").parse()?,
    ))
}

fn main() -> Result<()> {
    // `--baseline PATH` (or BENCH_BASELINE) names an older binary to time
    // beside this one; the rest are OBJECTS UPDATES REPEATS.
    let mut words: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var("BENCH_CASE").is_ok_and(|c| c == "large") {
        return large::run(&words);
    }
    if std::env::var("BENCH_CASE").is_ok_and(|c| c == "floor") {
        // The floor of a file run on a db file of one's own.
        let file = PathBuf::from(words.first().context("BENCH_CASE=floor needs a db file")?);
        let work = tempfile::tempdir()?;
        let seconds = floor_run(&file, &work.path().join("floor.sqlite"))?;
        println!("floor of a file run on {}: {seconds:.2} s", file.display());
        return Ok(());
    }
    if std::env::var("BENCH_CASE").is_ok_and(|c| c == "stage") {
        let file = PathBuf::from(words.first().context("BENCH_CASE=stage needs a db file")?);
        let rounds = words.get(1).map_or(Ok(5), |r| r.parse())?;
        return stage_run(&file, rounds);
    }
    let mut baseline_bin = std::env::var_os("BENCH_BASELINE").map(PathBuf::from);
    if let Some(at) = words.iter().position(|w| w == "--baseline") {
        anyhow::ensure!(
            at + 1 < words.len(),
            "--baseline needs the path of an etcd-inspector binary"
        );
        baseline_bin = Some(PathBuf::from(words.remove(at + 1)));
        words.remove(at);
    }
    let args: Vec<usize> = words.iter().map(|a| a.parse()).collect::<Result<_, _>>()?;
    let (objects, updates, repeats) = (
        args.first().copied().unwrap_or(5000),
        args.get(1).copied().unwrap_or(3),
        args.get(2).copied().unwrap_or(3),
    );
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/etcd-inspector");
    anyhow::ensure!(bin.exists(), "build the binary first: cargo build --release");
    let work = tempfile::tempdir()?;
    if std::env::var_os("BENCH_KEEP").is_some() {
        eprintln!("keeping {}", work.path().display());
    }
    let etcd = etcd::TestEtcd::start();
    let ep = etcd.endpoint.clone();
    eprintln!("filling etcd: {objects} objects × {} versions ...", updates + 1);
    let mut raw_bytes = 0usize;
    for round in 0..=updates {
        let batch: Vec<(String, Vec<u8>)> = (0..objects).map(|i| object(i, round)).collect();
        raw_bytes += batch.iter().map(|(_, v)| v.len()).sum::<usize>();
        etcd.put_many(&batch);
    }
    let revisions = objects * (updates + 1);
    let pod_size = object(0, 0).1.len();

    // Baseline: a plain paginated read and a plain watch replay of the same data.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut baseline = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        rt.block_on(async {
            let c = etcd_client::Client::connect([&ep], None).await?;
            let limit = etcd_inspector::source::etcd::MAX_RESPONSE_BYTES;
            let mut kv = c.kv_client().max_decoding_message_size(limit);
            let head = kv
                .get(
                    "/registry/",
                    Some(etcd_client::GetOptions::new().with_prefix().with_count_only()),
                )
                .await?
                .header()
                .unwrap()
                .revision();
            let mut start = b"/registry/".to_vec();
            loop {
                let mut resp = kv
                    .get(
                        start.clone(),
                        Some(
                            etcd_client::GetOptions::new()
                                .with_range("/registry0")
                                .with_revision(head)
                                .with_limit(1000),
                        ),
                    )
                    .await?;
                let kvs = resp.take_kvs();
                if let Some(last) = kvs.last() {
                    start = last.key().to_vec();
                    start.push(0);
                }
                if !resp.more() {
                    break;
                }
            }
            let mut stream = c
                .watch_client()
                .max_decoding_message_size(limit)
                .watch(
                    "/registry/",
                    Some(
                        etcd_client::WatchOptions::new()
                            .with_prefix()
                            .with_start_revision(1)
                            .with_prev_key(),
                    ),
                )
                .await?;
            let mut seen = 0;
            while seen < revisions {
                let Some(resp) = stream.message().await? else {
                    break;
                };
                seen += resp.events().len();
            }
            anyhow::Ok(())
        })?;
        baseline.push(t.elapsed().as_secs_f64());
    }

    // Every resource, as the baseline reads them all.
    let live_snapshot = |db: &Path| {
        timed(
            &bin,
            &[
                "--db",
                db.to_str().unwrap(),
                "snapshot",
                "--endpoints",
                &ep,
                "--fetch",
                "watch",
                "--no-analyze",
                "--exclude-resource=none",
            ],
        )
    };
    let mut full = Vec::new();
    let mut full_rss = 0;
    let mut db = work.path().join("db-0.sqlite");
    for r in 0..repeats {
        db = work.path().join(format!("db-{r}.sqlite"));
        let (s, rss) = live_snapshot(&db)?;
        full.push(s);
        full_rss = full_rss.max(rss);
    }
    let size_before = std::fs::metadata(&db)?.len();
    let (incr, incr_rss) = live_snapshot(&db)?;
    let grew = std::fs::metadata(&db)?.len().saturating_sub(size_before);
    // 1% of the objects change (one more update each), then another run.
    let changed: Vec<(String, Vec<u8>)> = (0..objects)
        .step_by(100)
        .map(|i| object(i, updates + 1))
        .collect();
    etcd.put_many(&changed);
    let (incr1, incr1_rss) = live_snapshot(&db)?;
    let (analyze, analyze_rss) = timed(&bin, &["--db", db.to_str().unwrap(), "analyze"])?;
    let (report, report_rss) = timed(
        &bin,
        &[
            "--db",
            db.to_str().unwrap(),
            "report",
            "--format",
            "json",
            "--output",
            work.path().join("r.json").to_str().unwrap(),
        ],
    )?;

    // Offline: the server's snapshot file, read by our bbolt reader alone and by `snapshot --file`.
    let file = work.path().join("etcd.db");
    let download_started = Instant::now();
    rt.block_on(async {
        let mut c = etcd_client::Client::connect([&ep], None).await?;
        let mut stream = c.snapshot().await?;
        let mut out = Vec::new();
        while let Some(resp) = stream.message().await? {
            out.extend_from_slice(resp.blob());
        }
        std::fs::write(&file, out)?;
        anyhow::Ok(())
    })?;
    let download = download_started.elapsed().as_secs_f64();
    let mut plain_file = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        let bolt = BoltDb::open(&file)?;
        let mut sink: Vec<Record> = Vec::new();
        db_file::read_revisions(&bolt, b"/registry/", Revision(0), 0, &mut sink)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        drop(sink);
        plain_file.push(t.elapsed().as_secs_f64());
    }
    // etcd's own tool over the same file, where it is installed (Debian:
    // etcd-client); it reads every key to count and hash them.
    let mut etcdctl = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        let status = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["snapshot", "status", file.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => etcdctl.push(t.elapsed().as_secs_f64()),
            _ => break,
        }
    }
    let mut offline = Vec::new();
    let mut offline_rss = 0;
    for r in 0..repeats {
        let fdb = work.path().join(format!("file-{r}.sqlite"));
        let (s, rss) = timed(
            &bin,
            &[
                "--db",
                fdb.to_str().unwrap(),
                "snapshot",
                "--file",
                file.to_str().unwrap(),
                "--no-analyze",
                "--exclude-resource=none",
            ],
        )?;
        offline.push(s);
        offline_rss = offline_rss.max(rss);
    }
    // The member's data dir, copied as docs/snapshot.md says (the db before the
    // log): `snapshot --data-dir` reads the db and every WAL entry.
    let member = work.path().join("member-copy");
    etcd.copy_data_dir(&member);
    let segments_bytes: u64 = std::fs::read_dir(member.join("member/wal"))?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    let mut data_dir = Vec::new();
    let mut data_dir_rss = 0;
    let mut entries = 0;
    for r in 0..repeats {
        let ddb = work.path().join(format!("data-dir-{r}.sqlite"));
        let (s, rss) = timed(
            &bin,
            &[
                "--db",
                ddb.to_str().unwrap(),
                "snapshot",
                "--data-dir",
                member.to_str().unwrap(),
                "--no-analyze",
                "--exclude-resource=none",
            ],
        )?;
        data_dir.push(s);
        data_dir_rss = data_dir_rss.max(rss);
        let out = Command::new(&bin)
            .args(["--db", ddb.to_str().unwrap(), "runs", "-o", "json"])
            .output()?;
        let runs: Value = serde_json::from_slice(&out.stdout)?;
        entries = runs[0]["wal"]["last"][0].as_u64().unwrap_or(0);
    }
    let mut floor = Vec::new();
    for r in 0..repeats {
        floor.push(floor_run(&file, &work.path().join(format!("floor-{r}.sqlite")))?);
    }
    // `attribute` over an audit log of every write in the file (two stages
    // each, the object as the response body), on copies of a file run's
    // database, beside the file run's own rate.
    let log = work.path().join("audit.log");
    let events = write_audit_log(&file, &log)?;
    let mut attribute = Vec::new();
    let mut attribute_rss = 0;
    for r in 0..repeats {
        let adb = work.path().join(format!("attribute-{r}.sqlite"));
        std::fs::copy(work.path().join("file-0.sqlite"), &adb)?;
        std::fs::copy(
            work.path().join("file-0.sqlite.key"),
            work.path().join(format!("attribute-{r}.sqlite.key")),
        )?;
        let args = [
            "--db",
            adb.to_str().unwrap(),
            "attribute",
            "--audit-log",
            log.to_str().unwrap(),
            "--no-analyze",
        ];
        let (s, rss) = timed(&bin, &args)?;
        attribute.push(s);
        attribute_rss = attribute_rss.max(rss);
    }
    // A first live run as a user starts it: `--fetch auto`, which downloads
    // here, against the download plus a file run of the download.
    let mut auto_first = Vec::new();
    let mut fetched = String::new();
    for r in 0..repeats {
        let adb = work.path().join(format!("auto-{r}.sqlite"));
        let args = [
            "--db",
            adb.to_str().unwrap(),
            "snapshot",
            "--endpoints",
            &ep,
            "--no-analyze",
            "--exclude-resource=none",
        ];
        auto_first.push(timed(&bin, &args)?.0);
        fetched = runs_fetched(&adb)?;
    }
    // An older binary on the same file, side by side, and what it stored.
    let mut old_file = Vec::new();
    let mut same_contents = None;
    if let Some(old) = &baseline_bin {
        let current_db = work.path().join("file-0.sqlite");
        for r in 0..repeats {
            let odb = work.path().join(format!("old-file-{r}.sqlite"));
            let args = [
                "--db",
                odb.to_str().unwrap(),
                "snapshot",
                "--file",
                file.to_str().unwrap(),
                "--no-analyze",
                "--exclude-resource=none",
            ];
            old_file.push(timed(old, &args)?.0);
        }
        let old_db = work.path().join("old-file-0.sqlite");
        timed(old, &["--db", old_db.to_str().unwrap(), "analyze"])?;
        timed(&bin, &["--db", current_db.to_str().unwrap(), "analyze"])?;
        same_contents = Some(digest(&old_db)? == digest(&current_db)?);
    }
    let db_size = std::fs::metadata(&db)?.len();
    let (base, full_s, plain_f, off_s) = (
        median(baseline),
        median(full),
        median(plain_file),
        median(offline),
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("\n{objects} objects × {} versions = {revisions} revisions, {:.1} MiB of values; medians of {repeats}", updates + 1, raw_bytes as f64 / 1048576.0);
    println!("(a Pod is {pod_size} bytes of protobuf)\n");
    println!("| measurement | time | vs baseline | target | peak RSS |");
    println!("|---|---|---|---|---|");
    println!("| plain etcd read + watch replay (baseline) | {base:.2} s | 1.00× | | |");
    println!(
        "| snapshot --endpoints (state + history) | {full_s:.2} s | {:.2}× | ≤ 1.5× | {:.0} MiB |",
        full_s / base,
        mib(full_rss)
    );
    println!(
        "| incremental snapshot, nothing changed | {incr:.2} s | {:.0}% of full | ≤ 10% | {:.0} MiB |",
        100.0 * incr / full_s,
        mib(incr_rss)
    );
    println!("| database growth of that run | {grew} B | | ≤ 64 KiB | |");
    println!(
        "| incremental snapshot, 1% of objects changed | {incr1:.2} s | {:.0}% of full | | {:.0} MiB |",
        100.0 * incr1 / full_s,
        mib(incr1_rss)
    );
    println!("| plain key-bucket read of the file (baseline) | {plain_f:.2} s | 1.00× | | |");
    if !etcdctl.is_empty() {
        let ctl = median(etcdctl);
        println!("| etcdctl snapshot status on the file (baseline) | {ctl:.2} s | 1.00× | | |");
        println!(
            "| snapshot --file vs etcdctl | {off_s:.2} s | {:.2}× | ≤ 2× | |",
            off_s / ctl
        );
    }
    println!(
        "| snapshot --file ({:.0} MiB file) | {off_s:.2} s | {:.2}× | ≤ 3× | {:.0} MiB |",
        std::fs::metadata(&file)?.len() as f64 / 1048576.0,
        off_s / plain_f.max(1e-9),
        mib(offline_rss)
    );
    let data_dir_s = median(data_dir);
    println!(
        "| snapshot --data-dir: the db and {entries} WAL entries ({:.0} MiB of segments) | {data_dir_s:.2} s | {:.1} µs an entry vs the file run's {:.1} µs a revision | ≤ 1× | {:.0} MiB |",
        segments_bytes as f64 / 1048576.0,
        1e6 * data_dir_s / entries.max(1) as f64,
        1e6 * off_s / revisions.max(1) as f64,
        mib(data_dir_rss)
    );
    let floor_s = median(floor);
    println!(
        "| floor: the file read, each value hashed, one row per revision, nothing decoded | {floor_s:.2} s | {:.0}% of snapshot --file | | |",
        100.0 * floor_s / off_s.max(1e-9)
    );
    let attribute_s = median(attribute);
    println!(
        "| attribute: an audit log of every write ({events} events, {:.0} MiB) | {attribute_s:.2} s | {:.0} events/s vs the file run's {:.0} revisions/s | ≥ 1× | {:.0} MiB |",
        std::fs::metadata(&log)?.len() as f64 / 1048576.0,
        events as f64 / attribute_s.max(1e-9),
        revisions as f64 / off_s.max(1e-9),
        mib(attribute_rss)
    );
    let auto_s = median(auto_first);
    println!("| download of the snapshot (Maintenance API, baseline) | {download:.2} s | | | |");
    println!(
        "| first snapshot --endpoints, --fetch auto ({fetched}) | {auto_s:.2} s | {:.2}× download + file run | ≤ 1.3× | |",
        auto_s / (download + off_s)
    );
    if let Some(old) = &baseline_bin {
        let old_s = median(old_file);
        println!(
            "| snapshot --file, baseline binary {} | {old_s:.2} s | {:.2}× faster now | ≥ 4× | |",
            old.display(),
            old_s / off_s
        );
        println!(
            "| stored contents, baseline vs now | {} | | identical | |",
            if same_contents == Some(true) {
                "identical"
            } else {
                "DIFFERENT"
            }
        );
    }
    println!(
        "| analyze | {analyze:.2} s | {:.0}% of snapshot | ≤ 50% | {:.0} MiB |",
        100.0 * analyze / full_s,
        mib(analyze_rss)
    );
    println!(
        "| report --format json | {report:.2} s | | | {:.0} MiB |",
        mib(report_rss)
    );
    println!(
        "| database size / raw value bytes | {:.0}% | | ≤ 40% | |",
        100.0 * db_size as f64 / raw_bytes as f64
    );
    println!("\nwhere the database's bytes go:\n");
    let conn = rusqlite::Connection::open(&db)?;
    let mut stmt =
        conn.prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC LIMIT 8")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    for row in rows {
        let (name, bytes) = row?;
        println!("  {name:<28} {:>8.1} MiB", bytes as f64 / 1048576.0);
    }
    if std::env::var_os("BENCH_KEEP").is_some() {
        let _ = work.keep();
    }
    Ok(())
}

/// The large-cluster case (`BENCH_CASE=large`): issue 28's shape, every
/// object Kubernetes' fully filled Pod, each command timed once under a
/// memory cap and a timeout. Kept apart from the small case so the two
/// can change independently.
mod large {
    use super::{etcd, filled_pod, load_fixture_pod};
    use anyhow::{Context, Result};
    use serde_json::{json, Value};
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::{Duration, Instant};

    const GIB: u64 = 1 << 30;

    /// How one command ended.
    enum Status {
        Ok,
        /// Killed when its process tree's RSS passed the cap (bytes).
        OverCap(u64),
        /// Killed after this many seconds.
        Timeout(u64),
        /// Exited unsuccessfully: the last line of its standard error.
        Failed(String),
    }

    /// One command's measurement.
    struct Measured {
        status: Status,
        seconds: f64,
        /// Peak RSS in KiB (the kernel's, through /usr/bin/time; for a
        /// killed command, as far as it got).
        peak_kib: u64,
    }

    impl Measured {
        fn ok(&self) -> bool {
            matches!(self.status, Status::Ok)
        }

        fn status_text(&self) -> String {
            match &self.status {
                Status::Ok => "ok".into(),
                Status::OverCap(cap) => format!("**exceeded {} GiB**", cap / GIB),
                Status::Timeout(s) => format!("**timeout after {s} s**"),
                Status::Failed(line) => format!("**failed**: {line}"),
            }
        }
    }

    /// The limits every command runs under.
    struct Limits {
        /// Bytes of RSS, summed over the command's process tree.
        cap: u64,
        timeout: Duration,
    }

    /// The parent pid of every process, from /proc/PID/stat.
    fn parents() -> Vec<(u32, u32)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold spaces and parens.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
    }

    /// `root` and every process below it.
    fn tree(root: u32) -> Vec<u32> {
        let all = parents();
        let mut out = vec![root];
        let mut at = 0;
        while at < out.len() {
            let p = out[at];
            out.extend(all.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
            at += 1;
        }
        out
    }

    /// VmRSS of a process in bytes (0 once it is gone).
    fn rss(pid: u32) -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map_or(0, |kib| kib * 1024)
    }

    /// Runs the etcd-inspector binary under /usr/bin/time, its standard
    /// output into `stdout`, polling its process tree's RSS every 50 ms:
    /// past `limits.cap` or `limits.timeout` the tree (only processes this
    /// bench started) is killed and the result says which. RSS rather
    /// than an address-space limit (`prlimit --as`): the bbolt reader maps
    /// the whole db file, so address space says nothing about memory.
    fn capped(bin: &Path, args: &[&str], stdout: &Path, limits: &Limits) -> Result<Measured> {
        let report = tempfile::NamedTempFile::new()?;
        let stderr = tempfile::NamedTempFile::new()?;
        let started = Instant::now();
        let mut child = Command::new("/usr/bin/time")
            .args(["-f", "%e %M", "-o", report.path().to_str().unwrap()])
            .args(
                std::env::var("BENCH_WRAP")
                    .iter()
                    .flat_map(|w| w.split_whitespace()),
            )
            .arg(bin)
            .args(args)
            .stdout(std::fs::File::create(stdout)?)
            .stderr(stderr.reopen()?)
            .spawn()
            .context("running /usr/bin/time (Debian package `time`)")?;
        let mut killed = None;
        let mut watched_peak = 0;
        let exit = loop {
            if let Some(exit) = child.try_wait()? {
                break exit;
            }
            if killed.is_none() {
                let pids = tree(child.id());
                let now: u64 = pids.iter().map(|p| rss(*p)).sum();
                watched_peak = watched_peak.max(now);
                let why = if now > limits.cap {
                    Some(Status::OverCap(limits.cap))
                } else if started.elapsed() > limits.timeout {
                    Some(Status::Timeout(limits.timeout.as_secs()))
                } else {
                    None
                };
                if let Some(why) = why {
                    // The command and anything it started; /usr/bin/time
                    // then reports and exits.
                    for pid in pids.iter().skip(1).rev() {
                        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                    }
                    killed = Some(why);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let seconds = started.elapsed().as_secs_f64();
        // Killed: "Command terminated by signal 9" comes before the figures.
        let text = std::fs::read_to_string(report.path())?;
        let peak_kib = text
            .lines()
            .last()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|m| m.parse().ok())
            .unwrap_or(0u64)
            .max(watched_peak / 1024);
        let status = match killed {
            Some(why) => why,
            None if exit.success() => Status::Ok,
            None => {
                let err = std::fs::read_to_string(stderr.path()).unwrap_or_default();
                Status::Failed(err.lines().last().unwrap_or("no message").to_string())
            }
        };
        Ok(Measured {
            status,
            seconds,
            peak_kib,
        })
    }

    /// Where the data lives and whether it stays.
    struct Work {
        dir: PathBuf,
        _temp: Option<tempfile::TempDir>,
        /// `BENCH_KEEP`: keep everything.
        keep_all: bool,
    }

    impl Work {
        /// `BENCH_DIR` (kept: the snapshot file and the file run's
        /// database), else a temporary directory (kept with `BENCH_KEEP`).
        fn new() -> Result<Work> {
            let keep_all = std::env::var_os("BENCH_KEEP").is_some();
            match std::env::var_os("BENCH_DIR") {
                Some(d) => {
                    let dir = PathBuf::from(d);
                    std::fs::create_dir_all(&dir)?;
                    anyhow::ensure!(
                        !dir.join("etcd.db").exists() && !dir.join("base.sqlite").exists(),
                        "{} already holds a data set; remove it or choose another BENCH_DIR",
                        dir.display()
                    );
                    Ok(Work {
                        dir,
                        _temp: None,
                        keep_all,
                    })
                }
                None => {
                    let temp = tempfile::tempdir()?;
                    let dir = temp.path().to_path_buf();
                    let temp = if keep_all {
                        let _ = temp.keep();
                        None
                    } else {
                        Some(temp)
                    };
                    Ok(Work {
                        dir,
                        _temp: temp,
                        keep_all,
                    })
                }
            }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.join(name)
        }

        fn arg(&self, name: &str) -> String {
            self.path(name).to_str().unwrap().to_string()
        }

        /// Removes a database (and its key and journal files) unless
        /// everything is kept.
        fn discard_db(&self, name: &str) {
            if self.keep_all {
                return;
            }
            for suffix in ["", ".key", ".lock", "-wal", "-shm", "-journal"] {
                let _ = std::fs::remove_file(self.path(&format!("{name}{suffix}")));
            }
        }
    }

    /// The arguments of a command on database `db`.
    fn on_database(db: &str, rest: &[&str]) -> Vec<String> {
        ["--db", db].iter().chain(rest).map(|s| s.to_string()).collect()
    }

    /// Copies a database with its key file (and WAL, if one was left).
    fn copy_db(from: &Path, to: &Path) -> Result<()> {
        for suffix in ["", ".key", "-wal"] {
            let (f, t) = (with_suffix(from, suffix), with_suffix(to, suffix));
            if f.exists() {
                std::fs::copy(&f, &t).with_context(|| format!("copying {}", f.display()))?;
            }
        }
        Ok(())
    }

    fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    }

    /// The fully filled Pod as object `i` at update `round`, in issue 28's
    /// shape: it owns itself (the fixture's owner reference is its own
    /// uid, kept per Pod) and each update changes its spec without a
    /// generation bump, so every Pod gets an `owner-cycle` and a
    /// generation finding: 300,000 findings at the default size.
    fn large_pod(template: &Value, i: usize, round: usize) -> (String, Vec<u8>) {
        let mut pod = template.clone();
        pod["metadata"]["ownerReferences"][0]["uid"] = json!(format!("uid-{i}"));
        pod["spec"]["activeDeadlineSeconds"] = json!(1000 + round);
        filled_pod(&pod, i, round)
    }

    /// Writes `objects` fully filled Pods, `versions` times each, in
    /// chunks, so the bench never holds a round in memory.
    fn fill(etcd: &etcd::TestEtcd, objects: usize, versions: usize) -> Result<u64> {
        let template = load_fixture_pod();
        let mut raw = 0u64;
        let started = Instant::now();
        for round in 0..versions {
            for from in (0..objects).step_by(5000) {
                let batch: Vec<(String, Vec<u8>)> = (from..(from + 5000).min(objects))
                    .map(|i| large_pod(&template, i, round))
                    .collect();
                raw += batch.iter().map(|(_, v)| v.len() as u64).sum::<u64>();
                etcd.put_many(&batch);
            }
            eprintln!(
                "  round {} of {versions} written, {:.0} s",
                round + 1,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(raw)
    }

    /// Downloads the server's snapshot (Maintenance API) into `file`,
    /// streamed to disk.
    fn download(endpoint: &str, file: &Path) -> Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let mut c = etcd_client::Client::connect([endpoint], None).await?;
            let mut stream = c.snapshot().await?;
            let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
            while let Some(resp) = stream.message().await? {
                out.write_all(resp.blob())?;
            }
            out.flush()?;
            anyhow::Ok(())
        })
    }

    /// A plain etcd-client watch from revision 1 over the whole prefix
    /// until `revisions` events came, or `None` after `timeout`: how fast
    /// etcd itself replays the history `--fetch watch` reads.
    fn watch_replay(endpoint: &str, revisions: u64, timeout: Duration) -> Result<Option<f64>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let started = Instant::now();
        let replay = async {
            let c = etcd_client::Client::connect([endpoint], None).await?;
            let limit = etcd_inspector::source::etcd::MAX_RESPONSE_BYTES;
            let options = etcd_client::WatchOptions::new()
                .with_prefix()
                .with_start_revision(1);
            let mut stream = c
                .watch_client()
                .max_decoding_message_size(limit)
                .watch("/registry/", Some(options))
                .await?;
            let mut seen = 0u64;
            while seen < revisions {
                let Some(resp) = stream.message().await? else {
                    break;
                };
                seen += resp.events().len() as u64;
            }
            anyhow::Ok(())
        };
        rt.block_on(async {
            match tokio::time::timeout(timeout, replay).await {
                Ok(done) => done.map(|()| Some(started.elapsed().as_secs_f64())),
                Err(_) => Ok(None),
            }
        })
    }

    /// Where a command's output goes, for its size in the table.
    enum Output {
        None,
        /// Its standard output, into this file.
        Stdout(PathBuf),
        /// A file it writes itself (`-o FILE`).
        File(PathBuf),
    }

    /// One row of the table.
    struct Row {
        what: String,
        m: Measured,
        /// Revisions the command went through, for its time per revision.
        revisions: Option<u64>,
        /// What it wrote, where that size tells something.
        output: Option<PathBuf>,
    }

    fn gib(bytes: u64) -> String {
        if bytes >= GIB {
            format!("{:.2} GiB", bytes as f64 / GIB as f64)
        } else {
            format!("{:.1} MiB", bytes as f64 / 1048576.0)
        }
    }

    fn size(p: &Path) -> u64 {
        std::fs::metadata(p).map_or(0, |m| m.len())
    }

    /// `BENCH_CASE=large [OBJECTS] [UPDATES]` (defaults 150000 3).
    pub fn run(words: &[String]) -> Result<()> {
        let args: Vec<usize> = words.iter().map(|a| a.parse()).collect::<Result<_, _>>()?;
        let objects = args.first().copied().unwrap_or(150_000);
        let versions = args.get(1).copied().unwrap_or(3) + 1;
        let revisions = (objects * versions) as u64;
        let env_u64 = |name: &str, default: u64| -> Result<u64> {
            std::env::var(name)
                .ok()
                .map_or(Ok(default), |v| v.parse().with_context(|| format!("{name}={v}")))
        };
        let limits = Limits {
            cap: env_u64("BENCH_MEM_CAP_GIB", 6)? * GIB,
            timeout: Duration::from_secs(env_u64("BENCH_TIMEOUT", 600)?),
        };
        let quota = env_u64("BENCH_QUOTA_GIB", 16)? * GIB;
        let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/etcd-inspector");
        anyhow::ensure!(bin.exists(), "build the binary first: cargo build --release");
        let work = Work::new()?;
        eprintln!(
            "large case: {objects} fully filled Pods × {versions} versions = {revisions} revisions in {}; \
             each command capped at {} GiB RSS and {} s",
            work.dir.display(),
            limits.cap / GIB,
            limits.timeout.as_secs()
        );
        let etcd = etcd::TestEtcd::start_with_quota(quota);
        let ep = etcd.endpoint.clone();
        let t = Instant::now();
        let raw = fill(&etcd, objects, versions)?;
        let fill_s = t.elapsed().as_secs_f64();
        // etcd starts at revision 1: the first round ends at objects + 1,
        // the last at revisions + 1.
        let first_round_head = objects as u64 + 1;
        let file = work.path("etcd.db");
        let t = Instant::now();
        download(&ep, &file)?;
        let download_s = t.elapsed().as_secs_f64();
        eprintln!(
            "filled in {fill_s:.0} s, downloaded {} in {download_s:.0} s",
            gib(size(&file))
        );

        let mut rows: Vec<Row> = Vec::new();
        let mut step = |what: &str, args: &[&str], revisions: Option<u64>, output: Output| -> Result<bool> {
            eprintln!("  {what} ...");
            let stdout = match &output {
                Output::Stdout(p) => p.clone(),
                Output::None | Output::File(_) => work.path("stdout.txt"),
            };
            let m = capped(&bin, args, &stdout, &limits)?;
            eprintln!(
                "    {:.1} s, {:.0} MiB, {}",
                m.seconds,
                m.peak_kib as f64 / 1024.0,
                m.status_text()
            );
            let ok = m.ok();
            rows.push(Row {
                what: what.to_string(),
                m,
                revisions,
                output: match output {
                    Output::None => None,
                    Output::Stdout(p) | Output::File(p) => Some(p),
                },
            });
            Ok(ok)
        };
        // etcd's own replay of the history, beside `--fetch watch`.
        eprintln!("  plain etcd-client watch replay from revision 1 (baseline) ...");
        let replay_s = watch_replay(&ep, revisions, limits.timeout)?;
        let replay_text = match replay_s {
            Some(s) => format!("{s:.1} s, {:.0} µs a revision", s * 1e6 / revisions as f64),
            None => format!("**timeout after {} s**", limits.timeout.as_secs()),
        };
        eprintln!("    {replay_text}");
        let snapshot_flags = ["--no-analyze", "--exclude-resource=none"];
        // Live, against the filled server: a first run as a user starts it
        // (`--fetch auto`, which downloads at this size) and one through Watch.
        for (name, fetch) in [("live-auto.sqlite", "auto"), ("live-watch.sqlite", "watch")] {
            let db = work.arg(name);
            let mut args = vec!["--db", &db, "snapshot", "--endpoints", &ep, "--fetch", fetch];
            args.extend(snapshot_flags);
            step(
                &format!("snapshot --endpoints --fetch {fetch} (first run)"),
                &args,
                Some(revisions),
                Output::None,
            )?;
            work.discard_db(name);
        }
        // The file run: its database is the data set's `base.sqlite`.
        let base = work.arg("base.sqlite");
        let file_arg = file.to_str().unwrap().to_string();
        let mut args = vec!["--db", &base, "snapshot", "--file", &file_arg];
        args.extend(snapshot_flags);
        let file_ok = step(
            &format!("snapshot --file ({} file)", gib(size(&file))),
            &args,
            Some(revisions),
            Output::None,
        )?;
        let base_size = size(&work.path("base.sqlite"));
        let floor_s = super::floor_run(&file, &work.path("floor.sqlite"))?;
        work.discard_db("floor.sqlite");
        eprintln!("  floor (file read, values hashed, a row per revision, nothing decoded): {floor_s:.1} s");
        if file_ok {
            // Everything else on a copy, so base.sqlite stays as the file run left it.
            copy_db(&work.path("base.sqlite"), &work.path("work.sqlite"))?;
            let db = work.arg("work.sqlite");
            let out = |name: &str| work.path(name);
            let on_db = |rest: &[&str]| on_database(&db, rest);
            let mut plan = vec![
                (
                    "analyze".to_string(),
                    on_db(&["analyze"]),
                    Some(revisions),
                    Output::None,
                ),
                (
                    "findings -o json".into(),
                    on_db(&["findings", "-o", "json"]),
                    None,
                    Output::Stdout(out("findings.json")),
                ),
                (
                    "stats -o json".into(),
                    on_db(&["stats", "-o", "json"]),
                    None,
                    Output::Stdout(out("stats.json")),
                ),
            ];
            for format in ["text", "md", "json", "html"] {
                let o = out(&format!("report.{format}"));
                let args = on_db(&["report", "--format", format, "--output", o.to_str().unwrap()]);
                plan.push((format!("report --format {format}"), args, None, Output::File(o)));
            }
            let key = "/registry/pods/team-0/app-0";
            plan.push((
                format!("history {key}"),
                on_db(&["history", key]),
                None,
                Output::Stdout(out("history.txt")),
            ));
            let (a, b) = (first_round_head.to_string(), (revisions + 1).to_string());
            plan.push((
                format!("diff --rev-a {a} --rev-b {b} (every object changed)"),
                on_db(&["diff", "--rev-a", &a, "--rev-b", &b]),
                None,
                Output::Stdout(out("diff-revs.txt")),
            ));
            let mut run_plan = |plan: Vec<(String, Vec<String>, Option<u64>, Output)>| -> Result<()> {
                for (what, args, revisions, output) in plan {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    step(&what, &args, revisions, output)?;
                }
                Ok(())
            };
            run_plan(plan)?;
            // A second run: 1% of the objects change once more, read live
            // into the same database, then the two runs compared and the
            // first pruned.
            let changed: Vec<(String, Vec<u8>)> = {
                let template = load_fixture_pod();
                (0..objects)
                    .step_by(100)
                    .map(|i| large_pod(&template, i, versions))
                    .collect()
            };
            etcd.put_many(&changed);
            let mut second = on_db(&["snapshot", "--endpoints", &ep]);
            second.extend(snapshot_flags.iter().map(|s| s.to_string()));
            run_plan(vec![
                (
                    "snapshot --endpoints (second run, 1% changed)".into(),
                    second,
                    Some(changed.len() as u64),
                    Output::None,
                ),
                (
                    "diff 1 2 (between the two runs)".into(),
                    on_db(&["diff", "1", "2"]),
                    None,
                    Output::Stdout(out("diff-runs.txt")),
                ),
                (
                    "prune --keep-runs 1".into(),
                    on_db(&["prune", "--keep-runs", "1"]),
                    None,
                    Output::None,
                ),
            ])?;
            work.discard_db("work.sqlite");
            // A database twice the size: the file run's database with the
            // same file stored once more as another cluster (`--cluster-id`),
            // then every command that reads the whole database.
            copy_db(&work.path("base.sqlite"), &work.path("double.sqlite"))?;
            let db = work.arg("double.sqlite");
            let on_double = |rest: &[&str]| on_database(&db, rest);
            let mut second_cluster = on_double(&[
                "snapshot",
                "--file",
                &file_arg,
                "--cluster-id",
                "00000000000d0b1e",
            ]);
            second_cluster.extend(snapshot_flags.iter().map(|s| s.to_string()));
            let mut plan = vec![
                (
                    "2× database: snapshot --file as a second cluster".to_string(),
                    second_cluster,
                    Some(revisions),
                    Output::None,
                ),
                (
                    "2× database: analyze (both clusters)".into(),
                    on_double(&["analyze"]),
                    Some(2 * revisions),
                    Output::None,
                ),
                (
                    "2× database: findings -o json".into(),
                    on_double(&["findings", "-o", "json"]),
                    None,
                    Output::Stdout(out("double-findings.json")),
                ),
                (
                    "2× database: stats -o json".into(),
                    on_double(&["stats", "-o", "json"]),
                    None,
                    Output::Stdout(out("double-stats.json")),
                ),
            ];
            for format in ["json", "html"] {
                let o = out(&format!("double-report.{format}"));
                let args = on_double(&["report", "--format", format, "--output", o.to_str().unwrap()]);
                plan.push((
                    format!("2× database: report --format {format}"),
                    args,
                    None,
                    Output::File(o),
                ));
            }
            plan.push((
                "2× database: prune --keep-runs 1".into(),
                on_double(&["prune", "--keep-runs", "1"]),
                None,
                Output::None,
            ));
            run_plan(plan)?;
            work.discard_db("double.sqlite");
        }
        drop(etcd);

        println!(
            "\n{objects} fully filled Pods × {versions} versions = {revisions} revisions, {} of values; \
             etcd db file {} (filled in {fill_s:.0} s, downloaded in {download_s:.1} s); \
             `snapshot --file` database {}",
            gib(raw),
            gib(size(&file)),
            gib(base_size)
        );
        println!(
            "floor of the file run (the file read, each value hashed, one row per revision, nothing decoded): {floor_s:.1} s\n\
             plain etcd-client watch replay from revision 1 (the baseline of `--fetch watch`): {replay_text}"
        );
        println!(
            "each command run once, capped at {} GiB RSS and {} s\n",
            limits.cap / GIB,
            limits.timeout.as_secs()
        );
        println!("| command | time | per revision | peak RSS | status | output |");
        println!("|---|---|---|---|---|---|");
        for r in &rows {
            let per = r
                .revisions
                .filter(|_| r.m.ok())
                .map(|n| format!("{:.0} µs", r.m.seconds * 1e6 / n as f64))
                .unwrap_or_default();
            let out = r
                .output
                .as_deref()
                .filter(|p| p.exists())
                .map(|p| gib(size(p)))
                .unwrap_or_default();
            println!(
                "| `{}` | {:.1} s | {per} | {:.0} MiB | {} | {out} |",
                r.what,
                r.m.seconds,
                r.m.peak_kib as f64 / 1024.0,
                r.m.status_text()
            );
        }
        if !work.keep_all {
            for r in &rows {
                if let Some(p) = &r.output {
                    let _ = std::fs::remove_file(p);
                }
            }
            let _ = std::fs::remove_file(work.path("stdout.txt"));
        }
        Ok(())
    }
}

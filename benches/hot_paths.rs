//! Micro-benchmarks of the per-revision hot paths: envelope + protobuf
//! decode, canonicalisation and hashing, and the store writer's batch insert.
//!
//! Run: `cargo bench --bench hot_paths` (with the binary's allocator,
//! mimalloc).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use etcd_inspector::canon::keyed_hash::ValueHasher;
use etcd_inspector::canon::semantic::{field_hashes, semantic_form, FieldConfig, Sensitivity};
use etcd_inspector::canon::sensitive::Secrecy;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::decode::{decode_value, parse_key, Outcome};
use etcd_inspector::ingest::foreign::{KeyIdentity, Kinds};
use etcd_inspector::ingest::open::KeyClass;
use etcd_inspector::ingest::revision::ingest;
use etcd_inspector::lifecycle::RevisionWriter;
use etcd_inspector::source::{Record, Revision, Sink};
use etcd_inspector::store::Store;
use serde_json::json;
use std::hint::black_box;

/// The allocator the binary uses, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Pod of about 6 KiB with managedFields, as the apiserver stores it.
fn pod(i: usize) -> serde_json::Value {
    let env: Vec<_> = (0..40).map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-{i}-padding-for-a-realistic-size")})).collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("app-{i}"), "namespace": "team", "uid": format!("uid-{i}"), "creationTimestamp": "2026-11-29T07:00:00Z",
                     "labels": {"app": "app", "pod-template-hash": "5d8f7c9b6"},
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-29T08:00:00Z",
                                        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {}}}}}}]},
        "spec": {"containers": [{"name": "app", "image": "registry.example.com/app:1", "env": env}], "nodeName": "node-1"},
        "status": {"phase": "Running", "podIP": "10.0.0.1"}})
}

fn benches(c: &mut Criterion) {
    let value = encode_protobuf(&pod(1)).unwrap();
    let mut g = c.benchmark_group("per revision");
    g.throughput(Throughput::Bytes(value.len() as u64));
    g.bench_function("decode protobuf pod", |b| {
        b.iter(|| decode_value(black_box(&value)).unwrap())
    });
    // Pods no bytes of which were seen before (beyond small parts): what
    // reuse costs where it cannot help.
    let mut next = 1_000_000;
    g.throughput(Throughput::Elements(10));
    g.bench_function("decode 10 new pods", |b| {
        b.iter_batched(
            || {
                next += 10;
                (next..next + 10)
                    .map(|i| encode_protobuf(&pod(i)).unwrap())
                    .collect::<Vec<_>>()
            },
            |values| {
                for v in &values {
                    black_box(decode_value(v).unwrap());
                }
            },
            BatchSize::PerIteration,
        )
    });
    g.throughput(Throughput::Bytes(value.len() as u64));
    let Ok(Outcome::Decoded(d)) = decode_value(&value) else {
        panic!("decodes")
    };
    let hasher = ValueHasher::new([7; 32]);
    g.bench_function("semantic form + hash", |b| {
        b.iter(|| {
            let form = semantic_form(black_box(&d.object));
            hasher.hash(&serde_json::to_vec(&form).unwrap(), false)
        })
    });
    let form = semantic_form(&d.object);
    g.bench_function("field hashes (depth 2)", |b| {
        b.iter(|| {
            field_hashes(
                black_box(&form),
                2,
                Secrecy::Plain,
                &Sensitivity::default(),
                &hasher,
            )
        })
    });
    g.finish();
    fixture_pod(c);

    let records: Vec<Record> = (0..1000)
        .map(|i| Record {
            key: format!("/registry/pods/team/app-{i}").into_bytes(),
            mod_revision: Revision(i as i64 + 2),
            create_revision: Revision(i as i64 + 2),
            version: 1,
            lease: 0,
            value: encode_protobuf(&pod(i)).unwrap(),
            deleted: false,
        })
        .collect();
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.sample_size(10);
    g.bench_function("write 1000 pod revisions", |b| {
        b.iter_with_setup(
            || tempfile::tempdir().unwrap(),
            |dir| {
                let store = Store::open_for_writing(&dir.path().join("db.sqlite")).unwrap();
                store.load_hash_key(&Default::default()).unwrap();
                let run = store
                    .begin_run(etcd_inspector::store::RunKind::Live, "bench", "/registry/", "")
                    .unwrap();
                let (cluster, _) = store.cluster("bench", None).unwrap();
                let fields = store.field_config(None, &[]).unwrap();
                let mut w = RevisionWriter::unfiltered(&*store, cluster, run, fields).unwrap();
                for r in &records {
                    w.record(r.clone()).unwrap();
                }
                w.flush().unwrap();
            },
        )
    });
    g.finish();
}

/// Kubernetes' fully filled Pod fixture (every field set), read from
/// `../shared/corpus`; skipped when the corpus is absent.
fn fixture_pod(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/k8s-api-fixtures");
    let (Ok(value), Ok(json)) = (
        std::fs::read(dir.join("core.v1.Pod.pb")),
        std::fs::read(dir.join("core.v1.Pod.json")),
    ) else {
        eprintln!("skipping the fixture Pod benchmarks: {} is absent", dir.display());
        return;
    };
    let object: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let mut g = c.benchmark_group("fixture pod");
    g.throughput(Throughput::Bytes(value.len() as u64));
    g.bench_function("decode fully filled pod", |b| {
        b.iter(|| decode_value(black_box(&value)).unwrap())
    });
    // The whole per-revision stage: bytes to what the store keeps
    // (canonical JSON, semantic and field hashes, facts, repeated entries).
    let key = "/registry/pods/default/fixture";
    let parsed = parse_key(key, "/registry/").ok();
    let class = KeyClass::of(parsed.as_ref(), None);
    let identity = parsed.as_ref().map(|p| KeyIdentity::of(p, &mut Kinds::default()));
    let config = FieldConfig {
        depth: 2,
        sensitivity: Sensitivity::default(),
    };
    let hasher = ValueHasher::new([7; 32]);
    let record = |value: &[u8]| Record {
        key: key.as_bytes().to_vec(),
        mod_revision: Revision(2),
        create_revision: Revision(2),
        version: 1,
        lease: 0,
        value: value.to_vec(),
        deleted: false,
    };
    g.bench_function("ingest fully filled pod", |b| {
        b.iter_batched(
            || record(&value),
            |r| ingest(r, &class, identity.as_ref(), &config, &hasher, None),
            BatchSize::SmallInput,
        )
    });
    // Ten revisions of one Pod that differ only in status, fresh ones each
    // iteration, as a watch or a history scan sees them.
    let mut n = 0u64;
    let mut revisions = move || -> Vec<Vec<u8>> {
        (0..10)
            .map(|_| {
                n += 1;
                let mut pod = object.clone();
                pod["status"]["message"] = json!(format!("revision {n}"));
                pod["status"]["podIP"] = json!(format!("10.0.{}.{}", n / 250 % 250, n % 250));
                encode_protobuf(&pod).unwrap()
            })
            .collect()
    };
    g.throughput(Throughput::Elements(10));
    g.bench_function("decode 10 revisions differing in status", |b| {
        b.iter_batched(
            &mut revisions,
            |values| {
                for v in &values {
                    black_box(decode_value(v).unwrap());
                }
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// The audit log reader over 20k RequestResponse updates whose request and
/// response bodies are each the Pod above (3.4 KiB as compact JSON, so about
/// 7 KiB of bodies and 8 KiB a line), from a file in the page cache.
fn audit_read(c: &mut Criterion) {
    use etcd_inspector::source::audit::{read, AuditInput};
    use std::io::Write;
    const EVENTS: u64 = 20_000;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut out = std::io::BufWriter::new(file.as_file_mut());
    for i in 0..EVENTS as usize {
        let mut body = pod(i);
        body["metadata"]["resourceVersion"] = json!((1000 + i).to_string());
        let event = json!({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
            "auditID": format!("5c3e0d7a-1b2c-4d5e-8f90-{i:012}"), "stage": "ResponseComplete",
            "requestURI": format!("/api/v1/namespaces/team/pods/app-{i}"), "verb": "update",
            "user": {"username": "system:serviceaccount:kube-system:replicaset-controller", "uid": "u",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
            "sourceIPs": ["10.0.0.7"], "userAgent": "kube-controller-manager/v1.31.0 (linux/amd64) kubernetes/abcdef",
            "objectRef": {"resource": "pods", "namespace": "team", "name": format!("app-{i}"), "apiVersion": "v1",
                          "resourceVersion": (999 + i).to_string()},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestObject": pod(i), "responseObject": body,
            "requestReceivedTimestamp": "2026-11-29T09:02:00.100000Z", "stageTimestamp": "2026-11-29T09:02:00.123456Z",
            "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "RBAC"}});
        writeln!(out, "{event}").unwrap();
    }
    drop(out);
    let inputs = [AuditInput::Path(file.path().to_path_buf())];
    let mut g = c.benchmark_group("audit read");
    g.throughput(Throughput::Elements(EVENTS));
    g.sample_size(10);
    g.bench_function("20k updates with 7 KiB of bodies", |b| {
        b.iter(|| {
            let mut revisions = 0i64;
            let summary = read(&inputs, |e| {
                revisions += e.response_revision.unwrap_or_default().0;
                Ok(())
            })
            .unwrap();
            assert_eq!(summary.events, EVENTS);
            black_box(revisions)
        })
    });
    g.finish();
}

criterion_group!(hot_paths, benches, audit_read);
criterion_main!(hot_paths);

//! Micro-benchmarks of the per-revision hot paths: envelope + protobuf
//! decode, canonicalisation and hashing, and the store writer's batch insert.
//!
//! Run: `cargo bench --bench hot_paths`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use etcd_inspector::canon::keyed_hash::ValueHasher;
use etcd_inspector::canon::semantic::{field_hashes, semantic_form, Sensitivity};
use etcd_inspector::canon::sensitive::Secrecy;
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::decode::{decode_value, Outcome};
use etcd_inspector::source::{Record, Sink};
use etcd_inspector::store::{RevisionWriter, Store};
use serde_json::json;
use std::hint::black_box;

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

    let records: Vec<Record> = (0..1000)
        .map(|i| Record {
            key: format!("/registry/pods/team/app-{i}").into_bytes(),
            mod_revision: i as i64 + 2,
            create_revision: i as i64 + 2,
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
                let run = store.begin_run("bench", "/registry/", "").unwrap();
                let cluster = store.cluster("bench").unwrap();
                let fields = store.field_config(None, &[]).unwrap();
                let mut w = RevisionWriter::new(
                    &store,
                    cluster,
                    run,
                    "/registry/",
                    fields,
                    Default::default(),
                    None,
                )
                .unwrap();
                for r in &records {
                    w.record(r.clone()).unwrap();
                }
                w.flush().unwrap();
            },
        )
    });
    g.finish();
}

criterion_group!(hot_paths, benches);
criterion_main!(hot_paths);

//! Fills a database with a large synthetic history through the same writer
//! `snapshot` uses, for measuring `analyze` and `report` at scale (see
//! `benches/report_memory.sh`): ConfigMaps updated many times each, a few of
//! them flapping between two values.
//!
//! Run: `cargo run --release --example history_load -- DB [REVISIONS]`

use anyhow::{Context, Result};
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::source::{Record, Sink};
use etcd_inspector::store::{RunFact, RunStatus, Store};
use serde_json::json;

const REVISIONS_PER_KEY: i64 = 50;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let db = std::path::PathBuf::from(args.next().context("usage: history_load DB [REVISIONS]")?);
    let total: i64 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(1_000_000);
    let keys = (total / REVISIONS_PER_KEY).max(1);
    let store = Store::open_for_writing(&db)?;
    store.load_hash_key(&Default::default())?;
    let run = store.begin_run("synthetic", "/registry/", "")?;
    let (cluster, _) = store.cluster("synthetic-cluster", None)?;
    let target = RunFact::Target {
        cluster,
        head: total + 1,
        compact: 0,
        history_from: 1,
    };
    store.record(run, target)?;
    let fields = store.field_config(None, &[])?;
    let mut writer = store.revision_writer(cluster, run, "/registry/", fields, Default::default(), None)?;
    let mut revision = 1;
    for round in 0..REVISIONS_PER_KEY {
        for k in 0..keys {
            revision += 1;
            // One key in a hundred flaps between two values; the rest count up.
            let value = if k % 100 == 0 {
                (round % 2).to_string()
            } else {
                round.to_string()
            };
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{k}"), "namespace": format!("ns-{}", k % 50), "uid": format!("uid-{k}"),
                             "creationTimestamp": "2026-11-29T08:00:00Z"},
                "data": {"value": value, "payload": "x".repeat(200)}});
            writer.record(Record {
                key: format!("/registry/configmaps/ns-{}/cm-{k}", k % 50).into_bytes(),
                mod_revision: revision,
                create_revision: 2 + k,
                version: round + 1,
                lease: 0,
                value: encode_protobuf(&object)?,
                deleted: false,
            })?;
        }
        eprintln!("{} revisions written", revision - 1);
    }
    writer.flush()?;
    drop(writer);
    store.finish_run(run, RunStatus::Complete, keys, None)?;
    println!("{} revisions of {keys} keys in {}", revision - 1, db.display());
    Ok(())
}

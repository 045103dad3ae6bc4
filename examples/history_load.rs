//! Fills a database with a large synthetic history through the same writer
//! `snapshot` uses, for measuring `analyze` and `report` at scale (see
//! `benches/report_memory.sh`): ConfigMaps updated many times each, a few of
//! them flapping between two values.
//!
//! The last revision creates one more ConfigMap (`ns-0/last`), so that an
//! audit log can place a create at either end of the history
//! (`benches/unaudited_scale.sh`).
//!
//! Run: `cargo run --release --example history_load -- DB [REVISIONS [PER_KEY]]`
//! (`PER_KEY`: revisions of each key, 50 by default).

use anyhow::{Context, Result};
use etcd_inspector::decode::encode::encode_protobuf;
use etcd_inspector::lifecycle::RevisionWriter;
use etcd_inspector::source::{Record, Revision, Sink};
use etcd_inspector::store::{RunFact, RunStatus, Store};
use serde_json::json;

/// Revisions of each key unless `PER_KEY` says otherwise.
const REVISIONS_PER_KEY: i64 = 50;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let db = std::path::PathBuf::from(
        args.next()
            .context("usage: history_load DB [REVISIONS [PER_KEY]]")?,
    );
    let total: i64 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(1_000_000);
    let per_key: i64 = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(REVISIONS_PER_KEY);
    let keys = (total / per_key).max(1);
    let store = Store::open_for_writing(&db)?;
    store.load_hash_key(&Default::default())?;
    let run = store.begin_run(
        etcd_inspector::store::RunKind::Live,
        "synthetic",
        "/registry/",
        "",
    )?;
    let (cluster, _) = store.cluster("synthetic-cluster", None)?;
    let target = RunFact::Target {
        cluster,
        head: Revision(total + 2),
        compact: Revision(0),
        history_from: Revision(1),
    };
    store.record(run, target)?;
    let fields = store.field_config(None, &[])?;
    let mut writer = RevisionWriter::unfiltered(&*store, cluster, run, fields)?;
    let mut revision = 1;
    let config_map = |name: &str, ns: &str, uid: &str, value: &str| {
        encode_protobuf(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": "2026-11-29T08:00:00Z"},
            "data": {"value": value, "payload": "x".repeat(200)}}))
    };
    for round in 0..per_key {
        for k in 0..keys {
            revision += 1;
            // One key in a hundred flaps between two values; the rest count up.
            let value = if k % 100 == 0 {
                (round % 2).to_string()
            } else {
                round.to_string()
            };
            let ns = format!("ns-{}", k % 50);
            writer.record(Record {
                key: format!("/registry/configmaps/{ns}/cm-{k}").into_bytes(),
                mod_revision: Revision(revision),
                create_revision: Revision(2 + k),
                version: round + 1,
                lease: 0,
                value: config_map(&format!("cm-{k}"), &ns, &format!("uid-{k}"), &value)?,
                deleted: false,
            })?;
        }
        eprintln!("{} revisions written", revision - 1);
    }
    revision += 1;
    writer.record(Record {
        key: b"/registry/configmaps/ns-0/last".to_vec(),
        mod_revision: Revision(revision),
        create_revision: Revision(revision),
        version: 1,
        lease: 0,
        value: config_map("last", "ns-0", "uid-last", "0")?,
        deleted: false,
    })?;
    writer.flush()?;
    drop(writer);
    store.finish_run(run, RunStatus::Complete, keys + 1, None)?;
    println!(
        "{} revisions of {} keys in {}",
        revision - 1,
        keys + 1,
        db.display()
    );
    Ok(())
}

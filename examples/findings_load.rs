//! Writes and reads many findings through the store's own interface, for
//! measuring a post-mortem's worth of them on either backend: the first
//! write, the same findings written again (each kept as it is), every
//! finding read back, those of one namespace, and the counts a fleet
//! report shows. Prints the seconds each step took; asserts nothing.
//!
//! The findings name the ConfigMaps `history_load` writes, so that after
//! it the namespace filter reads the keys' stored namespaces.
//!
//! Run: `cargo run --release --example findings_load -- DB [FINDINGS]`
//! (100,000 by default).

use anyhow::{Context, Result};
use etcd_inspector::source::Revision;
use etcd_inspector::store::finding::{Finding, FindingQuery, Severity};
use etcd_inspector::store::{ObjectFilter, Scope, Store};
use std::time::Instant;

/// `n` findings, of four detectors and every severity, each naming a key
/// and two revisions.
fn findings(n: i64) -> impl Iterator<Item = Finding> {
    const DETECTORS: [&str; 4] = ["flapping", "drift", "no_op_writes", "stuck_deletion"];
    (0..n).map(|i| Finding {
        detector: DETECTORS[i as usize % DETECTORS.len()],
        severity: Severity::ALL[i as usize % Severity::ALL.len()],
        keys: vec![format!("/registry/configmaps/ns-{}/cm-{i}", i % 50)],
        revisions: vec![Revision(2 + i), Revision(3 + i)],
        summary: format!("configmap ns-{}/cm-{i} changed back and forth", i % 50),
        details: serde_json::json!({"field": ["data", "app.properties"], "changes": i % 7}),
    })
}

/// Runs `step` and prints how long it took.
fn timed<T>(label: &str, step: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let out = step()?;
    println!("{label:<32} {:8.2} s", start.elapsed().as_secs_f64());
    Ok(out)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let db = std::path::PathBuf::from(args.next().context("usage: findings_load DB [FINDINGS]")?);
    let n: i64 = args.next().map(|n| n.parse()).transpose()?.unwrap_or(100_000);
    let store = Store::open_for_writing(&db)?;
    let (cluster, _) = store.cluster("synthetic-cluster", None)?;
    let detectors = ["flapping", "drift", "no_op_writes", "stuck_deletion"];
    let write = || -> Result<()> {
        let mut writer = store.findings_writer(cluster, &detectors)?;
        for f in findings(n) {
            writer.put(&f)?;
        }
        Ok(writer.commit()?)
    };
    timed(&format!("write {n} findings"), write)?;
    timed("write them again", write)?;
    let read = |query: FindingQuery| -> Result<usize> {
        let mut read = 0;
        for f in store.findings(&query) {
            f?;
            read += 1;
        }
        Ok(read)
    };
    let all = timed("read every finding", || read(FindingQuery::default()))?;
    let one_namespace = FindingQuery {
        objects: ObjectFilter {
            namespace: Some("ns-7".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let some = timed("read those of one namespace", || read(one_namespace))?;
    let counts = timed("count them by detector", || {
        Ok(store.finding_counts(&Scope::default(), None)?)
    })?;
    println!("{all} read, {some} of one namespace, {} counts", counts.len());
    Ok(())
}

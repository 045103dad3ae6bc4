//! The built-in example: starts the etcd the `etcd-bin-vendored` crate
//! ships, writes a small cluster exactly as kube-apiserver stores it
//! (namespaces, a Deployment with its ReplicaSet and Pods, a Service,
//! ConfigMaps, a Secret, a CRD with custom resources in JSON and CBOR, a Lease
//! with heartbeats, managedFields as the apiserver writes them), snapshots
//! it, plays an incident with known anomalies, snapshots again, and writes
//! `report.html` and `report.md` into the workspace's `target/demo/`.
//!
//! Run: `cargo run --release -p demo`
//!
//! A workspace package of its own rather than an example of the main crate,
//! so that it compiles only the library and what this code uses, not the
//! main crate's dev-dependencies. It calls the library's command dispatcher
//! in process, so it needs no `etcd-inspector` binary.

mod etcd;
mod scenario;

use anyhow::{Context, Result};
use clap::Parser;
use etcd_inspector::cli::Cli;
use std::path::Path;

/// Runs one etcd-inspector command line, as a user would type it.
fn inspector(line: &str) -> Result<()> {
    println!("\n$ etcd-inspector {line}");
    let cli = Cli::try_parse_from(std::iter::once("etcd-inspector").chain(line.split_whitespace()))?;
    let status = etcd_inspector::cmd::dispatch(&cli)?;
    if status != 0 {
        println!("(exit status {status})");
    }
    Ok(())
}

fn main() -> Result<()> {
    // This package lives in `demo/`; its output goes to the workspace's
    // `target/demo/`, where the README says it is.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the demo package sits inside the workspace")?;
    let dir = workspace.join("target/demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let db = dir.join("demo.sqlite");
    let offline = dir.join("demo-offline.sqlite");
    for base in [&db, &offline] {
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", base.display()));
        }
    }
    println!("Starting etcd (from the etcd-bin-vendored crate) ...");
    let etcd = etcd::Etcd::start(&dir.join("etcd"))?;
    let ep = etcd.endpoint.clone();
    let (put, delete, compact) = (
        |k: &str, v: &[u8]| etcd.put(k, v),
        |k: &str| etcd.delete(k),
        |rev: i64| etcd.compact(rev),
    );
    let writer = scenario::Etcd {
        put: &put,
        delete: &delete,
        compact: &compact,
    };
    let db_arg = db.display().to_string();

    println!("Writing a small cluster as kube-apiserver stores it ...");
    scenario::cluster(&writer);
    inspector(&format!("--db {db_arg} snapshot --endpoints {ep}"))?;

    println!(
        "\nPlaying an incident: heartbeats and a compaction, a storage-version migration, a custom resource"
    );
    println!("re-stored as CBOR, a pod deleted and recreated, an identical rewrite, a retried create, a duplicated");
    println!(
        "RBAC subject and ownerReference, a stale status write, two managers fighting over replicas, a deletion"
    );
    println!(
        "stuck on a finalizer, a pod whose Job is gone, a custom resource with a field its CRD prunes ..."
    );
    scenario::incident(&writer);
    inspector(&format!("--db {db_arg} snapshot --endpoints {ep}"))?;
    inspector(&format!("--db {db_arg} runs"))?;
    inspector(&format!("--db {db_arg} findings"))?;
    inspector(&format!("--db {db_arg} history deploy/web -n shop --diff"))?;
    inspector(&format!(
        "--db {db_arg} show deploy/web -n shop --run 1 --for-apply"
    ))?;
    inspector(&format!("--db {db_arg} diff 1 2"))?;

    println!("\nThe same history, offline: download etcd's snapshot file and read it with no API calls ...");
    let saved = dir.join("etcd-snapshot.db");
    let _ = std::fs::remove_file(&saved);
    inspector(&format!(
        "--db {} snapshot --endpoints {ep} --fetch snapshot --save {}",
        offline.display(),
        saved.display()
    ))?;
    inspector(&format!("get /registry/secrets/shop/db --endpoints {ep} -o yaml"))?;

    let html = dir.join("report.html");
    let md = dir.join("report.md");
    inspector(&format!(
        "--db {db_arg} report --format html -o {}",
        html.display()
    ))?;
    inspector(&format!("--db {db_arg} report --format md -o {}", md.display()))?;
    inspector(&format!("--db {db_arg} report"))?;
    let store = etcd_inspector::store::Store::open_for_reading(&db)?;
    let found: std::collections::BTreeSet<(String, String)> = store
        .findings(&Default::default())
        .map(|f| f.map(|f| (f.detector, f.keys.first().cloned().unwrap_or_default())))
        .collect::<Result<_, _>>()?;
    let expected: std::collections::BTreeSet<(String, String)> = scenario::EXPECTED
        .iter()
        .map(|(d, k)| (d.to_string(), k.to_string()))
        .collect();
    println!(
        "\nInjected anomalies found: {} of {}; findings for anything not injected: {}",
        expected.intersection(&found).count(),
        expected.len(),
        found.difference(&expected).count()
    );
    println!(
        "Reports: {} (open it in a browser) and {}",
        html.display(),
        md.display()
    );
    println!(
        "Database: {db_arg}; explore it with `cargo run -- --db {db_arg} findings`, `history deploy/web -n shop --diff` or `show deploy/web -n shop --run 1`."
    );
    Ok(())
}

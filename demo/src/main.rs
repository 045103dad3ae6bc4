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
//! With `--control-plane`, the incident is played on a real control plane
//! instead (kube-apiserver, the controller manager, the scheduler and kwok's
//! nodes, built with Go by `.ci/control-plane`): see `real.rs`.
//!
//! A workspace package of its own rather than an example of the main crate,
//! so that it compiles only the library and what this code uses, not the
//! main crate's dev-dependencies. It calls the library's command dispatcher
//! in process, so it needs no `etcd-inspector` binary.

mod control_plane;
mod etcd;
mod real;
mod real_scenario;
mod scenario;

use anyhow::{bail, Context, Result};
use clap::Parser;
use etcd_inspector::cli::Cli;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The built-in example: a small cluster and an incident with known
/// anomalies, inspected end to end. Its reports and database are written to
/// the workspace's `target/demo/`.
#[derive(Parser)]
#[command(name = "demo")]
struct Args {
    /// Play the incident on a real control plane (kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kubectl and kwok) built by
    /// `.ci/control-plane` into DIR. Without DIR, builds Kubernetes
    /// v1.37.2 with Go first (about 15 minutes on 2 cores the first time,
    /// cached after).
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    control_plane: Option<Option<PathBuf>>,
}

/// The Kubernetes release `--control-plane` builds when given no folder.
const RELEASE: &str = "1.37.2";

/// Runs one etcd-inspector command line, as a user would type it.
pub(crate) fn inspector(line: &str) -> Result<()> {
    println!("\n$ etcd-inspector {line}");
    let cli = Cli::try_parse_from(std::iter::once("etcd-inspector").chain(line.split_whitespace()))?;
    let status = etcd_inspector::cmd::dispatch(&cli)?;
    if status != 0 {
        println!("(exit status {status})");
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
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
    match args.control_plane {
        None => imitation(&dir, &db, &offline),
        Some(bin) => {
            let bin = match bin {
                Some(bin) => bin,
                None => build_control_plane(workspace)?,
            };
            real::play(&dir, &db, &bin)
        }
    }
}

/// Builds (or finds in its cache) the control plane of [`RELEASE`] with
/// `.ci/control-plane`, and returns the folder of its binaries.
fn build_control_plane(workspace: &Path) -> Result<PathBuf> {
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|out| out.status.success()) {
        bail!(
            "--control-plane builds Kubernetes with Go, and `go` is not on PATH: install Go \
             (https://go.dev/dl/), or pass the folder `.ci/control-plane` built elsewhere"
        );
    }
    let script = workspace.join(".ci/control-plane");
    println!(
        "Building Kubernetes {RELEASE} (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) \
         and kwok from the Go module proxy with {}; about 15 minutes the first time, cached after ...",
        script.display()
    );
    let out = Command::new(&script)
        .arg(RELEASE)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!("{} {RELEASE} failed ({})", script.display(), out.status);
    }
    // It prints `<version> <folder>`.
    let said = String::from_utf8_lossy(&out.stdout);
    let Some((_, folder)) = said.trim().rsplit_once(' ') else {
        bail!("{} printed no folder: {said}", script.display());
    };
    Ok(PathBuf::from(folder))
}

/// The incident written into etcd exactly as kube-apiserver stores it:
/// needs nothing but this workspace.
fn imitation(dir: &Path, db: &Path, offline: &Path) -> Result<()> {
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

    let reports = write_reports(
        dir,
        db,
        "`history deploy/web -n shop --diff` or `show deploy/web -n shop --run 1`",
    )?;
    let store = etcd_inspector::store::Store::open_for_reading(db)?;
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
    println!("{reports}");
    Ok(())
}

/// Writes `report.html` and `report.md` into `dir` from `db`, prints the
/// text report, and returns the demo's last lines: where they are, and
/// the commands (`explore`) to look further.
pub(crate) fn write_reports(dir: &Path, db: &Path, explore: &str) -> Result<String> {
    let db_arg = db.display();
    let html = dir.join("report.html");
    let md = dir.join("report.md");
    inspector(&format!("--db {db_arg} report --output {}", html.display()))?;
    inspector(&format!("--db {db_arg} report --output {}", md.display()))?;
    inspector(&format!("--db {db_arg} report"))?;
    Ok(format!(
        "Reports: {} (open it in a browser) and {}\n\
         Database: {db_arg}; explore it with `cargo run -- --db {db_arg} findings`, {explore}.",
        html.display(),
        md.display()
    ))
}

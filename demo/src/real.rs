//! `--control-plane`: the incident played on a real control plane. etcd
//! from the `etcd-bin-vendored` crate; kube-apiserver (token users, RBAC,
//! an audit log, Secrets encrypted with aescbc), the controller manager,
//! the scheduler and kwok's three nodes from the folder `.ci/control-plane`
//! builds; a shop that runs, then each seed phenomenon made through the
//! API by the people and pipelines who make it (`real_scenario.rs`, which
//! the control-plane test tier plays too). The tool reads it as a user
//! would: live snapshots with the encryption config, `attribute` with the
//! audit log, the reports.

use crate::control_plane::{ControlPlane, Options};
use crate::{etcd, inspector, real_scenario, write_reports};
use anyhow::{Context, Result};
use etcd_inspector::store::Store;
use std::path::Path;
use std::time::Duration;

/// Plays the incident on the binaries in `bin`, recording into `db`, with
/// the cluster's files under `dir/control-plane`.
pub fn play(dir: &Path, db: &Path, bin: &Path) -> Result<()> {
    let files = dir.join("control-plane");
    let _ = std::fs::remove_dir_all(&files);
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    println!(
        "Starting etcd (from the etcd-bin-vendored crate), then kube-apiserver, the controller manager, \
         the scheduler and kwok's three nodes from {} ...",
        bin.display()
    );
    let etcd = etcd::Etcd::start(&dir.join("etcd"))?;
    let ep = etcd.endpoint.clone();
    let mut plane = ControlPlane::start(bin, &ep, &files, Options::default())?;
    let db_arg = db.display().to_string();
    let reads = format!(
        "--endpoints {ep} --encryption-config {}",
        plane.encryption_config.display()
    );

    println!(
        "Kubernetes {} is up. A shop runs (two Deployments, Services, a ConfigMap whose keys hold dots, \
         a CronJob every minute) ...",
        plane.version
    );
    real_scenario::shop(&plane)?;
    real_scenario::prepare(&plane)?;
    inspector(&format!("--db {db_arg} snapshot {reads}"))?;

    println!(
        "\nPlaying an incident through the API, in namespace `seeds`: a pipeline's server-side apply and"
    );
    println!(
        "alice's `kubectl scale` fighting over replicas, an RBAC subject listed twice, a Deployment deleted"
    );
    println!(
        "and created again, a deletion held by a finalizer, a create retried with generateName, a stale"
    );
    println!("status write, a CRD tightened after a Widget was written, and an owner deleted while the");
    println!(
        "controller manager is down. Then two planned operations in `planned`: the Secrets' encryption key"
    );
    println!("rotated and a CRD's storage version moved, each rewriting every object of its kind ...");
    real_scenario::incident(&mut plane)?;
    inspector(&format!("--db {db_arg} snapshot {reads} --no-analyze"))?;
    // The history shows how long the owner has been gone by the runs'
    // times; a real cluster keeps the default `--stuck-after 15m`.
    std::thread::sleep(Duration::from_secs(2));
    inspector(&format!("--db {db_arg} snapshot {reads} --no-analyze"))?;
    inspector(&format!(
        "--db {db_arg} attribute --audit-log {}",
        plane.audit_log.display()
    ))?;
    inspector(&format!("--db {db_arg} analyze --stuck-after 1s"))?;
    inspector(&format!("--db {db_arg} runs"))?;
    inspector(&format!("--db {db_arg} findings"))?;
    inspector(&format!("--db {db_arg} history deploy/web -n seeds"))?;
    inspector(&format!("--db {db_arg} history deploy/web -n shop"))?;
    let reports = write_reports(
        dir,
        db,
        "`history deploy/web -n seeds --diff` or `history pods -n shop`",
    )?;

    let store = Store::open_for_reading(db)?;
    let found: Vec<_> = store.findings(&Default::default()).collect::<Result<_, _>>()?;
    let is = |f: &etcd_inspector::store::StoredFinding, e: &real_scenario::Expected| {
        f.detector == e.detector && f.keys.iter().any(|k| e.matches(k))
    };
    let made = real_scenario::EXPECTED
        .iter()
        .filter(|e| {
            found
                .iter()
                .any(|f| is(f, e) && f.severity.as_str() == e.severity)
        })
        .count();
    let other = found
        .iter()
        .filter(|f| f.severity.as_str() != "info")
        .filter(|f| !real_scenario::EXPECTED.iter().any(|e| is(f, e)))
        .count();
    println!(
        "\nPhenomena made through the API and found at the expected severity: {made} of {}; \
         findings at low or above for anything else (the cluster's own churn): {other}",
        real_scenario::EXPECTED.len()
    );
    println!(
        "The cluster's files (audit log, encryption config, component logs): {}; components restarted \
         by their supervisor: {}",
        plane.dir().display(),
        plane.restarts()
    );
    println!("{reports}");
    Ok(())
}

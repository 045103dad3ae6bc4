//! `etcd-inspector prune`: retention for scheduled snapshots.

use super::Status;
use crate::cli::PruneArgs;
use crate::store::Store;
use anyhow::{Context, Result};
use std::path::Path;

pub fn run(db: &Path, args: &PruneArgs) -> Result<Status> {
    let store = Store::open_existing_for_writing(db)?;
    let before = args
        .older_than
        .map(|age| {
            let age = jiff::SignedDuration::try_from(age).context("--older-than is too long")?;
            let cutoff = jiff::Timestamp::now()
                .checked_sub(age)
                .context("--older-than reaches before the epoch")?;
            anyhow::Ok(cutoff)
        })
        .transpose()?;
    // A file's size, before and after vacuuming; a server has none to show.
    let size = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
    let pruned = store.prune(before, args.keep_runs)?;
    tracing::info!(
        "pruned {} runs: {} revisions, {} keys and {} stored values removed",
        pruned.runs,
        pruned.revisions,
        pruned.keys,
        pruned.values
    );
    if args.vacuum {
        let was = size(db);
        store.vacuum()?;
        let location = store.location().display();
        match (was, size(db)) {
            (Some(was), Some(now)) => tracing::info!("vacuumed {location}: {was} → {now} bytes"),
            _ => tracing::info!("vacuumed {location}"),
        }
    }
    Ok(0)
}

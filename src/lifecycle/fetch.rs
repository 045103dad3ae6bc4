//! How a live run fetches history: replayed through Watch, or as etcd's
//! snapshot downloaded over the Maintenance API and read as a data file.
//! `auto` chooses per run from what it can know up front.

use super::{file, live, RecordOptions, Settings, Summary};
use crate::source::etcd::{Etcd, EtcdError};
use crate::store::RunId;
use crate::store::{Backend, RunFact};
use anyhow::Result;
use indicatif::ProgressBar;
use std::path::Path;

/// How a live run fetches history (`--fetch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fetch {
    /// The snapshot when it is expected to be faster, else Watch.
    #[default]
    Auto,
    Watch,
    Snapshot,
}

impl Fetch {
    /// As `runs` records it.
    fn as_str(self) -> &'static str {
        match self {
            Fetch::Auto => "auto",
            Fetch::Watch => "watch",
            Fetch::Snapshot => "snapshot",
        }
    }
}

/// CPU time a Watch replay costs per revision beyond reading the same
/// revision from a file, measured on the benchmark (2 cores: 100,000 small
/// revisions, 19.3 s live against 3.1 s from the file).
const REPLAY_SECONDS_PER_REVISION: f64 = 160e-6;
/// Download speed assumed for the Maintenance snapshot (a local or
/// same-datacenter etcd streams several hundred MB/s).
const DOWNLOAD_BYTES_PER_SECOND: f64 = 200e6;
/// What a download costs before its first byte: a second stream, a file.
const DOWNLOAD_SECONDS_FIXED: f64 = 0.5;

/// Whether downloading a data file of `db_size` bytes is expected to beat
/// replaying `replay` revisions. Without the size (the credentials may not
/// ask for Status, and then not for the snapshot either) it never is.
fn download_pays(replay: i64, db_size: Option<i64>) -> bool {
    let Some(size) = db_size else { return false };
    let watch = replay.max(0) as f64 * REPLAY_SECONDS_PER_REVISION;
    let download = size.max(0) as f64 / DOWNLOAD_BYTES_PER_SECOND + DOWNLOAD_SECONDS_FIXED;
    download < watch
}

/// Whether the planned run should download rather than replay.
fn prefers_download(etcd: &Etcd, planned: &live::Planned) -> bool {
    let replay = planned.pinned.head - planned.plan.from + 1;
    download_pays(replay, etcd.db_size())
}

/// Where a live run reads.
pub(super) struct Live<'a> {
    pub etcd: &'a Etcd,
    pub fetch: Fetch,
    /// Keep the downloaded snapshot here (else a temporary file next to the
    /// database, removed afterwards).
    pub save: Option<&'a Path>,
    pub db: &'a Path,
}

/// Reads a live etcd into the run the way `live.fetch` says, recording
/// which way it went; `None` when a signal stopped it. A download that
/// `auto` chose but the server refuses falls back to Watch with a warning.
pub(super) async fn read(
    store: &dyn Backend,
    run: RunId,
    live: &Live<'_>,
    options: &RecordOptions,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    // `auto` plans the run to choose; a Watch replay then goes on with the
    // same connection and plan.
    let mut planned = None;
    let download = match live.fetch {
        Fetch::Watch => false,
        Fetch::Snapshot => true,
        Fetch::Auto => {
            let p = live::planned(store, live.etcd, options, settings).await?;
            let download = prefers_download(live.etcd, &p);
            planned = (!download).then_some(p);
            download
        }
    };
    if download {
        store.record(run, RunFact::Fetched(Fetch::Snapshot.as_str()))?;
        match downloaded(store, run, live, options, settings, bar).await {
            Err(e) if live.fetch == Fetch::Auto && refusal(&e).is_some() => {
                let refused = refusal(&e).expect("checked");
                tracing::warn!("{refused}; replaying the history through Watch instead");
            }
            other => return other,
        }
    }
    store.record(run, RunFact::Fetched(Fetch::Watch.as_str()))?;
    live::read(store, run, live.etcd, planned, options, settings, bar).await
}

/// The server's refusal to hand out its snapshot, if that is what `e` is.
fn refusal(e: &anyhow::Error) -> Option<&EtcdError> {
    e.downcast_ref::<EtcdError>()
        .filter(|e| matches!(e, EtcdError::SnapshotDenied { .. }))
}

/// Downloads the server's snapshot, verifies it and reads it as a file.
async fn downloaded(
    store: &dyn Backend,
    run: RunId,
    live: &Live<'_>,
    options: &RecordOptions,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    let dest = live
        .save
        .map(Path::to_path_buf)
        .unwrap_or_else(|| crate::store::scratch_file(live.db, "snapshot.tmp"));
    let result = async {
        let cluster_id = file::fetch(store, run, live.etcd, &dest, bar).await?;
        let read = file::FileRead {
            path: &dest,
            cluster_id: Some(&cluster_id),
            salvage: false,
            wal: None,
        };
        file::read(store, run, &read, &options.prefix, settings, bar)
    }
    .await;
    if live.save.is_none() {
        let _ = std::fs::remove_file(&dest);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_replays_download_short_ones_watch() {
        // A first run over 100,000 revisions in a 100 MB file downloads.
        assert!(download_pays(100_000, Some(100_000_000)));
        // An incremental run of 50 revisions watches, whatever the size.
        assert!(!download_pays(50, Some(10_000_000)));
        // 10,000 revisions in a 4 GB file: replaying is faster.
        assert!(!download_pays(10_000, Some(4_000_000_000)));
        // Without Status there is no snapshot either.
        assert!(!download_pays(1_000_000, None));
    }
}

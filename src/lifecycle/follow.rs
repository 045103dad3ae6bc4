//! Following a live etcd: start as a snapshot run does, then watch and
//! store every revision as it happens, committing every few seconds and
//! recording how far everything is stored (once it agrees with etcd's
//! counters), so a stop or a kill loses little and the next run continues
//! from there.

use super::fetch::{self, Fetch};
use super::serve::{serve, Health};
use super::RevisionWriter;
use super::{RecordOptions, Settings, Summary};
use crate::source::etcd::{Connection, Etcd, Replay, Scope};
use crate::source::filter::ResourceFilter;
use crate::source::{Census, ReadError, Record, Revision, Sink};
use crate::store::ClusterId;
use crate::store::{Backend, RunFact};
use crate::store::{RunId, Shortfall, StoreError};
use anyhow::Result;
use indicatif::ProgressBar;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long and how a follower records.
#[derive(Clone, Debug)]
pub struct FollowOptions {
    /// Stop after this long and end the run complete; `None`: until a
    /// signal.
    pub duration: Option<Duration>,
    /// Commit what was received at least this often.
    pub commit_every: Duration,
    /// How its first read and each catch-up fetch history.
    pub fetch: Fetch,
    /// Serve `/metrics` and `/healthz` here.
    pub listen: Option<std::net::SocketAddr>,
    /// `/healthz` fails once follow cannot watch for longer than this.
    pub stall_limit: Duration,
}

/// Stores watched revisions and commits them, with how far they reach, at
/// least every `commit_every`, once they agree with etcd's counters.
struct Recorder<'w, 's> {
    writer: &'w mut RevisionWriter<'s>,
    /// The members it reads from, reported at each commit.
    etcd: &'w Etcd,
    gauges: &'w Gauges,
    store: &'s dyn Backend,
    run: RunId,
    cluster: ClusterId,
    /// The stored history is unbroken from this revision.
    covered_from: Revision,
    prefix: &'w str,
    filter: &'w ResourceFilter,
    /// The counters of every key written since the last commit.
    census: Census,
    /// Every revision up to this one has been pushed to the writer.
    through: Revision,
    /// ... and up to this one is committed.
    committed: Revision,
    last_commit: Instant,
    commit_every: Duration,
    bar: ProgressBar,
}

/// What follow is doing, in the metrics file while it runs
/// (`--metrics-file`) and on `--listen`'s endpoints: how far it stored, and
/// whether it is stalled.
struct Gauges {
    path: Option<std::path::PathBuf>,
    /// etcd's cluster id and the cluster's name, the metrics' labels.
    cluster: String,
    name: String,
    health: Arc<Health>,
}

impl Gauges {
    fn write(&self, complete_through: Revision, stalled: bool) {
        self.health
            .set(&self.cluster, &self.name, complete_through, stalled);
        let Some(path) = &self.path else { return };
        let text = crate::report::metrics::render_following(&crate::report::metrics::Following {
            cluster: &self.cluster,
            name: &self.name,
            complete_through,
            stalled,
        });
        if let Err(e) = crate::report::metrics::write_atomically(path, &text) {
            tracing::warn!("cannot write the metrics file {}: {e}", path.display());
        }
    }
}

/// Why following stopped on the database side.
#[derive(Debug, thiserror::Error)]
enum FollowError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Incomplete(#[from] Shortfall),
}

impl Recorder<'_, '_> {
    /// Commits what arrived and, once the stored history of every key
    /// written since agrees with the counters its events carried, records
    /// how far everything is stored.
    fn commit(&mut self) -> Result<(), FollowError> {
        self.writer.flush()?;
        super::members::report(self.store, self.run, self.etcd)?;
        let live = std::mem::take(&mut self.census).into_live();
        let recorded = |key: &[u8]| self.filter.records_key(key, self.prefix);
        if let Some(shortfall) =
            self.store
                .history_shortfall(self.cluster, self.covered_from, &live, &recorded)?
        {
            return Err(FollowError::Incomplete(shortfall));
        }
        if self.through > self.committed {
            self.store
                .record(self.run, RunFact::CompleteThrough(self.through))?;
            self.committed = self.through;
        }
        self.gauges.write(self.committed, false);
        self.last_commit = Instant::now();
        self.bar.set_message(format!(
            "following: {} revisions stored, everything through revision {}",
            self.writer.added, self.committed
        ));
        Ok(())
    }
}

impl Sink for Recorder<'_, '_> {
    type Error = FollowError;

    fn record(&mut self, record: Record) -> Result<bool, FollowError> {
        self.census.observe(&record);
        Ok(self.writer.record(record)?)
    }

    fn progress(&mut self, revision: Revision) -> Result<bool, FollowError> {
        self.through = self.through.max(revision);
        if self.last_commit.elapsed() >= self.commit_every {
            self.commit()?;
        }
        Ok(true)
    }
}

/// Why watching stopped.
enum Ended {
    Deadline,
    Signal,
    /// The watch ended: compaction overtook it, or the connection failed.
    Watch(Result<Replay, ReadError<FollowError>>),
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Follows until the deadline (`Some`, complete) or a signal (`None`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn follow(
    store: &dyn Backend,
    run: RunId,
    db: &Path,
    connection: &Connection,
    options: &RecordOptions,
    follow: &FollowOptions,
    signalled: &tokio::sync::Notify,
    bar: &ProgressBar,
) -> Result<Option<Summary>> {
    let started = Instant::now();
    let deadline = follow
        .duration
        .map(|d| tokio::time::Instant::from_std(started + d));
    let settings = Settings::new(store, run, options, true)?;
    let health = Arc::new(Health::new(follow.stall_limit));
    let _server = match follow.listen {
        Some(addr) => Some(serve(addr, health.clone()).await?),
        None => None,
    };
    // One connection for the whole run: it moves to another member
    // whenever the serving one fails.
    bar.set_message(format!("connecting to {}", connection.describe()));
    let etcd = tokio::select! {
        r = connection.connect() => r?,
        _ = signalled.notified() => return Ok(None),
    };
    let live = fetch::Live {
        etcd: &etcd,
        fetch: follow.fetch,
        save: None,
        db,
    };
    let caught_up = tokio::select! {
        r = fetch::read(store, run, &live, options, &settings, bar) => r?,
        _ = signalled.notified() => None,
    };
    let Some(mut summary) = caught_up else {
        return Ok(None);
    };
    store.record(run, RunFact::CompleteThrough(summary.head))?;
    let this = store.runs()?.into_iter().find(|r| r.id == run);
    let cluster = this
        .as_ref()
        .and_then(|r| r.cluster_id.clone())
        .unwrap_or_default();
    let gauges = Gauges {
        path: options.metrics_file.clone(),
        name: this.and_then(|r| r.cluster).unwrap_or_else(|| cluster.clone()),
        cluster,
        health,
    };
    gauges.write(summary.head, false);
    let scope = Scope {
        prefix: options.prefix.as_bytes(),
    };
    let mut backoff = Duration::from_secs(1);
    loop {
        let ended = {
            let mut writer = settings.writer(store, summary.cluster, run, &options.prefix)?;
            let mut recorder = Recorder {
                writer: &mut writer,
                etcd: &etcd,
                gauges: &gauges,
                store,
                run,
                cluster: summary.cluster,
                covered_from: summary.covered_from,
                prefix: &options.prefix,
                filter: &settings.filter,
                census: Census::default(),
                through: summary.head,
                committed: summary.head,
                last_commit: Instant::now(),
                commit_every: follow.commit_every,
                bar: bar.clone(),
            };
            let from = summary.head.next();
            let ended = tokio::select! {
                r = etcd.replay(scope, from, Revision(i64::MAX), &mut recorder) => Ended::Watch(r),
                _ = signalled.notified() => Ended::Signal,
                _ = sleep_until(deadline) => Ended::Deadline,
            };
            // Whatever was received is complete: keep it.
            recorder.commit()?;
            summary.head = recorder.committed;
            ended
        };
        match ended {
            Ended::Deadline => {
                summary.keys = store.live_keys(summary.cluster, scope.prefix, summary.head)?;
                return Ok(Some(summary));
            }
            Ended::Signal | Ended::Watch(Ok(Replay::Stopped)) => return Ok(None),
            Ended::Watch(Err(ReadError::Sink(FollowError::Store(e)))) => return Err(e.into()),
            Ended::Watch(Err(ReadError::Sink(FollowError::Incomplete(e)))) => return Err(e.into()),
            Ended::Watch(Err(e)) => {
                gauges.write(summary.head, true);
                tracing::warn!(
                    "watching stopped at revision {}: {e}; reconnecting in {}s",
                    summary.head,
                    backoff.as_secs()
                );
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = signalled.notified() => return Ok(None),
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Ended::Watch(Ok(_)) => backoff = Duration::from_secs(1),
        }
        // Catch up as a snapshot run would: history since what is stored,
        // or, if compaction overtook the watch, a gap and the state again.
        let caught_up = tokio::select! {
            r = fetch::read(store, run, &live, options, &settings, bar) => r,
            _ = signalled.notified() => return Ok(None),
        };
        match caught_up {
            Ok(Some(caught_up)) => {
                summary.gaps.extend(caught_up.gaps);
                summary.head = caught_up.head;
                summary.covered_from = caught_up.covered_from;
                store.record(run, RunFact::CompleteThrough(summary.head))?;
                gauges.write(summary.head, false);
            }
            Ok(None) => return Ok(None),
            // A restore of etcd is no failure to retry: the stored history
            // cannot continue.
            Err(e)
                if e.downcast_ref::<StoreError>().is_some()
                    || e.downcast_ref::<Shortfall>().is_some()
                    || e.downcast_ref::<super::restore::Restored>().is_some() =>
            {
                return Err(e)
            }
            Err(e) => {
                gauges.write(summary.head, true);
                tracing::warn!("catching up failed: {e:#}");
            }
        }
    }
}

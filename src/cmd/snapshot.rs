//! `etcd-inspector snapshot`: a live etcd, an etcd data file or a downloaded
//! snapshot into the database, as one recorded run.

use super::Status;
use crate::cli::{EtcdArgs, RecordArgs, SnapshotArgs};
use crate::source::bolt::BoltDb;
use crate::source::db_file::{self, ReadFileError};
use crate::source::etcd::{Connection, Etcd, ReadError, Replay, Scope};
use crate::source::filter::ResourceFilter;
use crate::source::{Census, LiveKey, Record, Sink};
use crate::canon::semantic::FieldConfig;
use crate::store::{Gap, Previous, RevisionWriter, RunId, RunStatus, Store, StoreError};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit status of a run stopped by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// What a finished run did.
pub(super) struct Summary {
    pub cluster: i64,
    pub keys: i64,
    pub head: i64,
    pub history_from: i64,
    pub gaps: Vec<Gap>,
    /// From where the stored history is unbroken up to `head`.
    pub covered_from: i64,
}

/// Set when Ctrl-C or SIGTERM arrives; sources stop at the next record.
static STOP: AtomicBool = AtomicBool::new(false);

/// Why the store sink refused a record.
#[derive(Debug, thiserror::Error)]
enum SinkError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("interrupted by a signal")]
    Interrupted,
}

/// Counts records on their way to the store, shows progress, and stops the
/// source when a signal arrived.
struct Progress<'w, 's> {
    writer: &'w mut RevisionWriter<'s>,
    bar: ProgressBar,
    seen: u64,
    /// The newest revision of each key, where the source's own counters are
    /// what the run checks against (a data file).
    census: Option<Census>,
}

impl Sink for Progress<'_, '_> {
    type Error = SinkError;

    fn record(&mut self, record: Record) -> Result<(), SinkError> {
        if STOP.load(Ordering::Relaxed) {
            return Err(SinkError::Interrupted);
        }
        self.seen += 1;
        if let Some(census) = &mut self.census {
            census.observe(&record);
        }
        if self.seen.is_multiple_of(500) {
            self.bar.set_message(format!(
                "{} records read, {} new, at revision {}",
                self.seen, self.writer.added, record.mod_revision
            ));
        }
        Ok(self.writer.record(record)?)
    }
}

pub(super) fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn read_error(e: ReadError<SinkError>) -> anyhow::Error {
    match e {
        ReadError::Etcd(e) => e.into(),
        ReadError::Sink(e) => e.into(),
    }
}

/// How this run records: fixed per database (fields) and per run (filter).
pub(super) struct Settings {
    fields: FieldConfig,
    pub filter: ResourceFilter,
}

impl Settings {
    pub(super) fn new(store: &Store, args: &RecordArgs) -> Result<Settings> {
        Ok(Settings {
            fields: store.field_config(args.field_depth.map(usize::from), &args.sensitive_path)?,
            filter: ResourceFilter::new(&args.include_resource, &args.exclude_resource),
        })
    }

    pub(super) fn writer<'s>(
        &self,
        store: &'s Store,
        cluster: i64,
        run: RunId,
        prefix: &str,
    ) -> Result<RevisionWriter<'s>, StoreError> {
        RevisionWriter::new(
            store,
            cluster,
            run,
            prefix,
            self.fields.clone(),
            self.filter.clone(),
        )
    }
}

/// Where history starts for this run, and what compaction lost since what
/// earlier runs of the same cluster, prefix and resource filter stored.
struct Plan {
    cluster: i64,
    previous: Option<Previous>,
    from: i64,
    gaps: Vec<Gap>,
}

impl Plan {
    /// Whether the previous run's head is still retained, so this run's
    /// history continues it without a gap.
    fn continuous(&self) -> bool {
        self.previous.is_some() && self.gaps.is_empty()
    }

    /// From where the stored history is unbroken once this run replayed
    /// from `history_from` (later than planned if compaction overtook it).
    fn covered_from(&self, history_from: i64) -> i64 {
        match self.previous {
            Some(p) if self.gaps.is_empty() && history_from == self.from => p.covered_from,
            _ => history_from,
        }
    }
}

fn plan(
    store: &Store,
    cluster_id: &str,
    compact: i64,
    prefix: &str,
    filter: &ResourceFilter,
) -> Result<Plan> {
    let cluster = store.cluster(cluster_id)?;
    let everything = ResourceFilter::default().describe();
    let previous = store.previous_head(cluster, prefix, &filter.describe(), &everything)?;
    let mut gaps = Vec::new();
    let from = match previous {
        Some(p) if compact > p.head + 1 => {
            gaps.push(Gap {
                from_revision: p.head + 1,
                to_revision: compact - 1,
            });
            compact
        }
        Some(p) => p.head + 1,
        None => compact.max(1),
    };
    Ok(Plan {
        cluster,
        previous,
        from,
        gaps,
    })
}

/// Replays `scope` from `from` to `head`, starting again after a compaction
/// that overtook the replay (recording what it lost); returns where history
/// really started.
async fn replay_all(
    etcd: &Etcd,
    scope: Scope<'_>,
    mut from: i64,
    head: i64,
    idle: Duration,
    sink: &mut Progress<'_, '_>,
    gaps: &mut Vec<Gap>,
) -> Result<i64> {
    loop {
        match etcd
            .replay(scope, from, head, idle, sink)
            .await
            .map_err(read_error)?
        {
            Replay::Complete => return Ok(from),
            Replay::Compacted(c) => {
                if c > from {
                    gaps.push(Gap {
                        from_revision: from,
                        to_revision: c - 1,
                    });
                }
                from = c;
            }
        }
    }
}

/// Fails the run when the stored history disagrees with etcd's counters
/// for any key live at the head (see [`Store::history_shortfall`]).
fn check_history(
    store: &Store,
    cluster: i64,
    covered_from: i64,
    live: &[LiveKey],
    prefix: &str,
    filter: &ResourceFilter,
) -> Result<()> {
    match store.history_shortfall(cluster, covered_from, live, |key| filter.records_key(key, prefix))? {
        Some(shortfall) => Err(shortfall.into()),
        None => Ok(()),
    }
}

/// Reads a live etcd: the state at a pinned head (unless the database
/// already holds everything up to the previous head, which is still
/// retained) and the history etcd retains since what is stored, then checks
/// the stored history against etcd's counters.
pub(super) async fn from_live(
    store: &Store,
    run: RunId,
    etcd_args: &EtcdArgs,
    args: &RecordArgs,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Summary> {
    let conn = Connection::from(etcd_args);
    bar.set_message(format!("connecting to {}", conn.endpoints.join(",")));
    let etcd = conn.connect().await?;
    if !etcd.version().is_empty() {
        store.set_run_etcd_version(run, etcd.version())?;
    }
    let scope = Scope {
        prefix: args.prefix.as_bytes(),
    };
    let pinned = etcd.pin().await?;
    let compact = etcd.compaction_revision(scope, pinned.head).await?;
    let plan = plan(store, &pinned.cluster_id, compact, &args.prefix, &settings.filter)?;
    let (cluster, mut gaps) = (plan.cluster, plan.gaps.clone());
    store.set_run_target(run, cluster, pinned.head, compact, plan.from)?;
    // etcd's own counters for every live key, to check the history against.
    let live = etcd.live_keys(scope, pinned.head, args.page_size).await?;
    let mut writer = settings.writer(store, cluster, run, &args.prefix)?;
    let mut sink = Progress {
        writer: &mut writer,
        bar: bar.clone(),
        seen: 0,
        census: None,
    };
    // When the previous run's head is still retained, every change since
    // is in the replay and the state at the head follows from the stored
    // history: reading the whole keyspace again would add nothing.
    if !plan.continuous() {
        bar.set_message(format!(
            "reading keys under {} at revision {}",
            args.prefix, pinned.head
        ));
        etcd.read_state(scope.prefix, pinned.head, args.page_size, &mut sink)
            .await
            .map_err(read_error)?;
    }
    bar.set_message(format!(
        "replaying history from revision {} to {}",
        plan.from, pinned.head
    ));
    let idle = conn.command_timeout;
    let from = replay_all(&etcd, scope, plan.from, pinned.head, idle, &mut sink, &mut gaps).await?;
    writer.flush()?;
    for gap in &gaps {
        store.record_gap(run, cluster, *gap)?;
    }
    let covered_from = plan.covered_from(from);
    store.set_run_coverage(run, covered_from)?;
    check_history(
        store,
        cluster,
        covered_from,
        &live,
        &args.prefix,
        &settings.filter,
    )?;
    Ok(Summary {
        cluster,
        keys: live.iter().filter(|k| k.key.starts_with(scope.prefix)).count() as i64,
        head: pinned.head,
        history_from: from,
        gaps,
        covered_from,
    })
}

/// Reads an etcd data file; `cluster_id` overrides the id derived from it.
/// The stored history is checked against the file's own counters.
fn from_file(
    store: &Store,
    run: RunId,
    path: &Path,
    cluster_id: Option<&str>,
    prefix: &str,
    settings: &Settings,
    bar: &ProgressBar,
) -> Result<Summary> {
    bar.set_message(format!("opening {}", path.display()));
    let db = BoltDb::open(path)?;
    let info = db_file::inspect(&db)?;
    let cluster_id = cluster_id
        .map(str::to_string)
        .or(info.cluster_id.clone())
        .unwrap_or_else(|| format!("file:{}", &info.sha256[..16]));
    let compact = info.finished_compact.unwrap_or(0);
    let head = info.head();
    let plan = plan(store, &cluster_id, compact, prefix, &settings.filter)?;
    let cluster = plan.cluster;
    store.set_run_target(run, cluster, head, compact, plan.from)?;
    store.set_run_file(
        run,
        info.size,
        &info.sha256,
        info.first_revision,
        info.last_revision,
    )?;
    let mut writer = settings.writer(store, cluster, run, prefix)?;
    let mut sink = Progress {
        writer: &mut writer,
        bar: bar.clone(),
        seen: 0,
        census: Some(Census::default()),
    };
    bar.set_message(format!(
        "reading revisions {}-{head} from {}",
        info.first_revision.unwrap_or(0),
        path.display()
    ));
    // Revisions below the compaction point that etcd kept (each key's latest)
    // are in the file too: read everything after what is already stored.
    let read_from = plan.previous.map_or(0, |p| p.head + 1);
    db_file::read_revisions(&db, prefix.as_bytes(), read_from, &mut sink).map_err(|e| match e {
        ReadFileError::File(e) => anyhow::Error::from(e),
        ReadFileError::Sink(e) => e.into(),
    })?;
    let live = sink.census.take().map(|c| c.live()).unwrap_or_default();
    writer.flush()?;
    for gap in &plan.gaps {
        store.record_gap(run, cluster, *gap)?;
    }
    let covered_from = plan.covered_from(plan.from);
    store.set_run_coverage(run, covered_from)?;
    check_history(store, cluster, covered_from, &live, prefix, &settings.filter)?;
    let keys = store.live_keys(cluster, prefix.as_bytes(), head)?;
    Ok(Summary {
        cluster,
        keys,
        head,
        history_from: plan.from,
        gaps: plan.gaps,
        covered_from,
    })
}

/// Streams the server's snapshot into `dest`; returns the cluster id.
async fn fetch(args: &SnapshotArgs, dest: &Path, bar: &ProgressBar) -> Result<String> {
    let conn = Connection::from(&args.etcd);
    bar.set_message(format!("connecting to {}", conn.endpoints.join(",")));
    let etcd = conn.connect().await?;
    let pinned = etcd.pin().await?;
    let mut file =
        std::fs::File::create(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let written = etcd
        .download_snapshot(&mut |chunk, remaining| {
            bar.set_message(format!("downloading the snapshot, {remaining} bytes to go"));
            file.write_all(chunk)
        })
        .await
        .with_context(|| format!("downloading the snapshot into {}", dest.display()))?;
    file.sync_all()
        .with_context(|| format!("writing {}", dest.display()))?;
    if written % 512 != crate::source::bolt::TRAILER as u64 {
        bail!("the server's snapshot ({written} bytes) has no SHA-256 trailer; refusing an unverifiable download");
    }
    Ok(pinned.cluster_id)
}

async fn snapshot(
    store: &Store,
    run: RunId,
    args: &SnapshotArgs,
    db_path: &Path,
    bar: &ProgressBar,
) -> Result<Summary> {
    let settings = Settings::new(store, &args.record)?;
    if let Some(path) = &args.file {
        return from_file(
            store,
            run,
            path,
            args.cluster_id.as_deref(),
            &args.record.prefix,
            &settings,
            bar,
        );
    }
    if !args.fetch_snapshot {
        return from_live(store, run, &args.etcd, &args.record, &settings, bar).await;
    }
    let keep = args.save.is_some();
    let dest = args
        .save
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.snapshot.tmp", db_path.display())));
    let result = async {
        let cluster_id = fetch(args, &dest, bar).await?;
        from_file(
            store,
            run,
            &dest,
            Some(&cluster_id),
            &args.record.prefix,
            &settings,
            bar,
        )
    }
    .await;
    if !keep {
        let _ = std::fs::remove_file(&dest);
    }
    result
}

/// What the runs table calls the source.
fn source_label(args: &SnapshotArgs) -> String {
    match &args.file {
        Some(path) => format!("file:{}", path.display()),
        None if args.fetch_snapshot => format!("fetch-snapshot:{}", args.etcd.endpoints.join(",")),
        None => args.etcd.endpoints.join(","),
    }
}

/// Starts a run of `source` in a fresh database handle.
pub(super) fn begin(db: &Path, source: &str, args: &RecordArgs) -> Result<(Store, RunId)> {
    let store = Store::open_for_writing(db)?;
    let filter = ResourceFilter::new(&args.include_resource, &args.exclude_resource);
    let run = store.begin_run(source, &args.prefix, &filter.describe())?;
    Ok((store, run))
}

/// A runtime with one worker that sets [`STOP`] on SIGTERM or Ctrl-C, and
/// the notification it sends then.
pub(super) fn signal_runtime() -> Result<(tokio::runtime::Runtime, Arc<tokio::sync::Notify>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    runtime.spawn(async move {
        shutdown_signal().await;
        STOP.store(true, Ordering::Relaxed);
        notify.notify_one();
    });
    Ok((runtime, signalled))
}

/// Whether a signal asked the run to stop.
pub(super) fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Ends the run as its outcome says (`None`: stopped by a signal), runs the
/// analysis, writes the metrics file, and returns the exit status.
pub(super) fn finish(
    store: &Store,
    run: RunId,
    outcome: Option<Result<Summary>>,
    args: &RecordArgs,
    started: Instant,
) -> Result<Status> {
    let outcome = match outcome {
        Some(Err(_)) if stopping() => None,
        other => other,
    };
    let (status, result) = match outcome {
        Some(Ok(s)) => {
            let added = store.finish_run(run, RunStatus::Complete, s.keys, None)?;
            let gaps: Vec<String> = s
                .gaps
                .iter()
                .map(|g| {
                    format!(
                        ", history gap: revisions {}-{} lost to compaction",
                        g.from_revision, g.to_revision
                    )
                })
                .collect();
            let analysis = if args.no_analyze {
                None
            } else {
                Some(crate::analyze::analyze(store, Some(s.cluster))?)
            };
            eprintln!(
                "run {} complete: {} keys at revision {}, {} revisions added (history from revision {}){}, {:.1}s",
                run.0,
                s.keys,
                s.head,
                added,
                s.history_from,
                gaps.concat(),
                started.elapsed().as_secs_f64()
            );
            let status = match analysis {
                Some(a) => {
                    eprintln!("{}", super::analyze::summary(&a));
                    super::report::fail_on_status(args.fail_on, a.findings.iter().map(|f| f.severity))
                }
                None => 0,
            };
            (RunStatus::Complete, Ok(status))
        }
        Some(Err(e)) => {
            let message = e.chain().map(ToString::to_string).collect::<Vec<_>>().join(": ");
            store.finish_run(run, RunStatus::Failed, 0, Some(&message))?;
            (RunStatus::Failed, Err(e.context(format!("run {} failed", run.0))))
        }
        None => {
            store.finish_run(run, RunStatus::Interrupted, 0, Some("interrupted by a signal"))?;
            eprintln!("run {} interrupted; the revisions stored so far are kept", run.0);
            (RunStatus::Interrupted, Ok(EXIT_INTERRUPTED))
        }
    };
    if let Some(path) = &args.metrics_file {
        let info = store
            .runs()?
            .into_iter()
            .find(|r| r.id.0 == run.0)
            .context("the run just recorded is missing")?;
        debug_assert_eq!(info.status, status);
        let text = crate::report::metrics::render(&info, started.elapsed().as_secs_f64(), &store.findings()?);
        crate::report::metrics::write_atomically(path, &text)
            .with_context(|| format!("cannot write the metrics file {}", path.display()))?;
    }
    result
}

pub fn run(db: &Path, args: &SnapshotArgs) -> Result<Status> {
    let (store, run) = begin(db, &source_label(args), &args.record)?;
    let started = Instant::now();
    let bar = progress_bar();
    // One worker thread watches for signals while this thread reads (a file
    // read is synchronous); the reading stops at the next record.
    let (runtime, signalled) = signal_runtime()?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = snapshot(&store, run, args, db, &bar) => Some(r),
            _ = signalled.notified() => None,
        }
    });
    bar.finish_and_clear();
    finish(&store, run, outcome, &args.record, started)
}

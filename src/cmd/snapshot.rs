//! `etcd-inspector snapshot`: a live etcd's state and retained history into
//! the database, as one recorded run.

use super::Status;
use crate::cli::SnapshotArgs;
use crate::source::etcd::{Connection, ReadError, Replay};
use crate::source::{Record, Sink};
use crate::store::{Gap, RevisionWriter, RunId, RunStatus, Store, StoreError};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// Exit status of a run stopped by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// What a finished run did.
struct Summary {
    keys: i64,
    head: i64,
    history_from: i64,
    gaps: Vec<Gap>,
}

/// Counts records on their way to the store and shows progress.
struct Progress<'w, 's> {
    writer: &'w mut RevisionWriter<'s>,
    bar: ProgressBar,
    seen: u64,
}

impl Sink for Progress<'_, '_> {
    type Error = StoreError;

    fn record(&mut self, record: Record) -> Result<(), StoreError> {
        self.seen += 1;
        if self.seen.is_multiple_of(500) {
            self.bar.set_message(format!(
                "{} records read, {} new, at revision {}",
                self.seen, self.writer.added, record.mod_revision
            ));
        }
        self.writer.record(record)
    }
}

fn progress_bar() -> ProgressBar {
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

fn read_error(e: ReadError<StoreError>) -> anyhow::Error {
    match e {
        ReadError::Etcd(e) => e.into(),
        ReadError::Sink(e) => e.into(),
    }
}

async fn snapshot(store: &Store, run: RunId, args: &SnapshotArgs, bar: &ProgressBar) -> Result<Summary> {
    let conn = Connection::from(&args.etcd);
    bar.set_message(format!("connecting to {}", conn.endpoints.join(",")));
    let etcd = conn.connect().await?;
    let pinned = etcd.pin().await?;
    let cluster = store.cluster(&pinned.cluster_id)?;
    let previous = store.previous_head(cluster)?;
    let compact = etcd.compaction_revision(conn.command_timeout).await?;
    let mut gaps = Vec::new();
    let mut from = match previous {
        Some(p) if compact > p + 1 => {
            gaps.push(Gap {
                from_revision: p + 1,
                to_revision: compact - 1,
            });
            compact
        }
        Some(p) => p + 1,
        None => compact.max(1),
    };
    store.set_run_target(run, cluster, pinned.head, compact, from)?;
    let prefix = args.prefix.as_bytes();
    let mut writer = RevisionWriter::new(store, cluster, run, &args.prefix)?;
    let mut sink = Progress {
        writer: &mut writer,
        bar: bar.clone(),
        seen: 0,
    };
    bar.set_message(format!(
        "reading keys under {} at revision {}",
        args.prefix, pinned.head
    ));
    let keys = etcd
        .read_state(prefix, pinned.head, args.page_size, &mut sink)
        .await
        .map_err(read_error)?;
    loop {
        bar.set_message(format!(
            "replaying history from revision {from} to {}",
            pinned.head
        ));
        match etcd
            .replay(prefix, from, pinned.head, conn.command_timeout, &mut sink)
            .await
            .map_err(read_error)?
        {
            Replay::Complete => break,
            // Compacted while this run was reading: what lay before is lost.
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
    writer.flush()?;
    for gap in &gaps {
        store.record_gap(run, cluster, *gap)?;
    }
    Ok(Summary {
        keys,
        head: pinned.head,
        history_from: from,
        gaps,
    })
}

/// The endpoints without credentials, for the runs table.
fn source_label(args: &SnapshotArgs) -> String {
    args.etcd.endpoints.join(",")
}

pub fn run(db: &Path, args: &SnapshotArgs) -> Result<Status> {
    let store = Store::open_for_writing(db)?;
    let run = store.begin_run(&source_label(args), &args.prefix)?;
    let started = Instant::now();
    let bar = progress_bar();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = snapshot(&store, run, args, &bar) => Some(r),
            _ = shutdown_signal() => None,
        }
    });
    bar.finish_and_clear();
    match outcome {
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
            Ok(0)
        }
        Some(Err(e)) => {
            let message = e.chain().map(ToString::to_string).collect::<Vec<_>>().join(": ");
            store.finish_run(run, RunStatus::Failed, 0, Some(&message))?;
            Err(e.context(format!("run {} failed", run.0)))
        }
        None => {
            store.finish_run(run, RunStatus::Interrupted, 0, Some("interrupted by a signal"))?;
            eprintln!("run {} interrupted; the revisions stored so far are kept", run.0);
            Ok(EXIT_INTERRUPTED)
        }
    }
}

//! The run lifecycle, as a library: begin a run, read a source (live etcd,
//! an etcd data file, a downloaded snapshot) with its plan, replay and
//! self-check, or follow a live etcd, then finish (status, analysis,
//! metrics file). Commands turn their arguments into these plain options
//! and print the [`Finished`] run; examples and tests call the same API.

mod attribute;
mod fetch;
mod file;
mod finish;
mod follow;
mod live;
mod members;
mod plan;
mod progress;
mod restore;
mod serve;
mod signal;
mod vanished;
mod wal;
mod writer;

pub use attribute::{attribute, Attributed};
pub use fetch::Fetch;
pub use finish::Finished;
pub use follow::FollowOptions;
pub use progress::suspended;
pub use writer::RevisionWriter;

use crate::canon::semantic::FieldConfig;
use crate::decrypt::Decryptor;
use crate::source::etcd::Connection;
use crate::source::filter::ResourceFilter;
use crate::source::Revision;
use crate::store::cluster::ClusterName;
use crate::store::hash_key::HashKeyOptions;
use crate::store::ClusterId;
use crate::store::{Backend, RunFact};
use crate::store::{Gap, RunId, RunKind, StoreError};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// How a run records.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Storage prefix (kube-apiserver's `--etcd-prefix`).
    pub prefix: String,
    /// Keys per range request.
    pub page_size: i64,
    /// Field-hash depth; `None` keeps the database's.
    pub field_depth: Option<usize>,
    /// Field paths whose values are sensitive (keyed hashes, never stored).
    pub sensitive_paths: Vec<crate::canon::path::FieldPath>,
    /// Which resources are recorded.
    pub filter: ResourceFilter,
    /// Run the detectors when the run is complete.
    pub analyze: bool,
    /// Where to write Prometheus metrics when the run ends.
    pub metrics_file: Option<PathBuf>,
    /// Decrypts values encrypted at rest (`--encryption-config`).
    pub decryptor: Option<Arc<Decryptor>>,
    /// How the detectors judge, when `analyze` is set.
    pub detectors: crate::analyze::Options,
    /// Where the key of keyed hashes is, and whether to start a new one.
    pub hash_key: HashKeyOptions,
    /// Audit logs to attribute the stored revisions with when the run ends.
    pub audit_logs: Vec<crate::source::audit::AuditInput>,
    /// The name the run gives its cluster (`--cluster`); `None` leaves the
    /// cluster's name as it is.
    pub cluster_name: Option<ClusterName>,
}

/// Where a snapshot run reads.
#[derive(Clone, Debug)]
pub enum Source {
    /// A live etcd: history replayed through Watch, or its snapshot
    /// downloaded (kept at `save` if given) and read as a file, as `fetch`
    /// says.
    Live {
        connection: Connection,
        fetch: Fetch,
        save: Option<PathBuf>,
    },
    /// An etcd data file; `cluster_id` overrides the id derived from it;
    /// `salvage` reads what survives of a damaged one; `wal`, a member's WAL
    /// folder, adds the history its log holds.
    File {
        path: PathBuf,
        cluster_id: Option<String>,
        salvage: bool,
        wal: Option<PathBuf>,
    },
}

impl Source {
    /// What kind of run reads it, and what the runs table calls it.
    fn label(&self) -> (RunKind, String) {
        match self {
            Source::Live {
                connection,
                fetch: Fetch::Snapshot,
                ..
            } => (RunKind::FetchSnapshot, connection.describe()),
            Source::Live { connection, .. } => (RunKind::Live, connection.describe()),
            Source::File { path, .. } => (RunKind::File, path.display().to_string()),
        }
    }
}

/// What a finished read stored.
#[derive(Clone, Debug)]
pub struct Summary {
    pub cluster: ClusterId,
    /// Keys under the prefix at the head.
    pub keys: i64,
    pub head: Revision,
    pub history_from: Revision,
    pub gaps: Vec<Gap>,
    /// From where the stored history is unbroken up to `head`.
    pub covered_from: Revision,
}

/// How this run records: fixed per database (fields) and per run (filter,
/// decryption).
struct Settings {
    fields: FieldConfig,
    filter: ResourceFilter,
    decryptor: Option<Arc<Decryptor>>,
    /// The name the run gives its cluster.
    cluster_name: Option<ClusterName>,
}

impl Settings {
    /// The run's settings; with an encryption config, its KMS plugins are
    /// asked for their status first and its write policy is recorded with
    /// the run. An unreachable plugin fails a run that reads a live etcd
    /// (`plugins_required`); a file run goes on, and each value the plugin
    /// was needed for is undecodable with the reason.
    fn new(
        store: &dyn Backend,
        run: RunId,
        options: &RecordOptions,
        plugins_required: bool,
    ) -> Result<Settings> {
        if let Some(d) = &options.decryptor {
            let statuses = match d.check_plugins() {
                Ok(s) => s,
                Err(e) if plugins_required => return Err(e.into()),
                Err(e) => {
                    tracing::warn!("{e}; the values it encrypted stay undecodable");
                    Vec::new()
                }
            };
            store.record(run, RunFact::EncryptionPolicy(&d.policy(&statuses)))?;
        }
        Ok(Settings {
            fields: store.field_config(options.field_depth, &options.sensitive_paths)?,
            filter: options.filter.clone(),
            decryptor: options.decryptor.clone(),
            cluster_name: options.cluster_name.clone(),
        })
    }

    fn writer<'s>(
        &self,
        store: &'s dyn Backend,
        cluster: ClusterId,
        run: RunId,
        prefix: &str,
    ) -> Result<RevisionWriter<'s>, StoreError> {
        RevisionWriter::open(
            store,
            cluster,
            run,
            prefix,
            self.fields.clone(),
            self.filter.clone(),
            self.decryptor.clone(),
        )
    }
}

/// Records one snapshot run of `source` into the database at `db`.
pub fn snapshot(db: &Path, source: &Source, options: &RecordOptions) -> Result<Finished> {
    let (store, run) = finish::begin(db, source.label(), options)?;
    let started = Instant::now();
    let bar = progress::bar();
    // One worker thread watches for signals while this thread reads (a file
    // read is synchronous); the reading stops at the next record.
    let (runtime, signalled) = signal::runtime()?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = read(&*store, run, source, options, db, &bar) => r.transpose(),
            _ = signalled.notified() => None,
        }
    });
    progress::spinning(&bar);
    bar.set_message("analyzing");
    let finished = finish::finish(&*store, run, outcome, options, started);
    bar.finish_and_clear();
    finished
}

/// Follows a live etcd until `follow.duration` passes (complete) or a
/// signal arrives (interrupted), starting as a snapshot run would.
pub fn follow(
    db: &Path,
    connection: &Connection,
    options: &RecordOptions,
    follow: &FollowOptions,
) -> Result<Finished> {
    let source = (RunKind::Follow, connection.describe());
    let (store, run) = finish::begin(db, source, options)?;
    let started = Instant::now();
    let bar = progress::bar();
    let (runtime, signalled) = signal::runtime()?;
    let outcome = runtime
        .block_on(follow::follow(
            &*store, run, db, connection, options, follow, &signalled, &bar,
        ))
        .transpose();
    bar.finish_and_clear();
    finish::finish(&*store, run, outcome, options, started)
}

/// Reads `source`; `None` when a signal stopped the read.
async fn read(
    store: &dyn Backend,
    run: RunId,
    source: &Source,
    options: &RecordOptions,
    db: &Path,
    bar: &indicatif::ProgressBar,
) -> Result<Option<Summary>> {
    let settings = Settings::new(store, run, options, !matches!(source, Source::File { .. }))?;
    match source {
        Source::Live {
            connection,
            fetch,
            save,
        } => {
            bar.set_message(format!("connecting to {}", connection.describe()));
            let etcd = connection.connect().await?;
            let live = fetch::Live {
                etcd: &etcd,
                fetch: *fetch,
                save: save.as_deref(),
                db,
            };
            fetch::read(store, run, &live, options, &settings, bar).await
        }
        Source::File {
            path,
            cluster_id,
            salvage,
            wal,
        } => file::read(
            store,
            run,
            &file::FileRead {
                path,
                cluster_id: cluster_id.as_deref(),
                salvage: *salvage,
                wal: wal.as_deref(),
            },
            &options.prefix,
            &settings,
            bar,
        ),
    }
}

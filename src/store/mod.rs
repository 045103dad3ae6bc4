//! Where runs keep what they read, behind a narrow interface: the types a
//! stored history is made of, the read side ([`AnalysisReads`],
//! [`HistoryReader`]) and the write side ([`RunRecorder`]) as unions of small
//! topic traits, with SQLite ([`sqlite`]) and PostgreSQL ([`postgres`]) as
//! the backends. Backend types stay inside the backend's module; SQL both
//! run is written once over `sql::Sql`, the dialect boundary.
//!
//! **A third backend** (sketch, sizes from the PostgreSQL one, 1,805 lines
//! in 10 files):
//! - `Sql` (statements, a row cursor, transactions, temporary tables,
//!   multi-row inserts and updates, a cluster's lock, a dialect's few
//!   words; about 225 lines plus 80 of value conversions). Given it, runs,
//!   clusters, settings, classification and the classified history,
//!   history, live objects, names, the clock, vanished keys, findings,
//!   prune, copy's row access, usage, the stats counts, shared revisions,
//!   unaudited creates, audit staging and joining, contents and the rows a
//!   run writes (`RevisionRows`) are the backend's already. A backend may
//!   give its own bulk form of `insert_rows`, `insert_new_rows` and
//!   `update_rows` (PostgreSQL: binary `COPY`, `unnest` arrays; SQLite: a
//!   prepared `INSERT` run per row), prepare the statements a run asks
//!   often (`rows_prepared`), and name the statement that takes key ids
//!   ahead (`Dialect::new_key_ids`, a sequence), so that a new cluster's
//!   keys go in by the bulk path too;
//! - connecting (931 lines here, with TLS, `.pgpass` and URI parameters),
//!   the session, locks and migrations (`migrations/<name>/`, listed by
//!   `build.rs`; 440 lines);
//! - the check of a run's history against its source (`HistoryChecks`, 40);
//! - where the hash key's file is kept when none is named (`KeyRecords`,
//!   35; loading and checking the key are written once): SQLite keeps it
//!   beside the database and moves an older schema's key out of it.

/// Declares a trait that is the union of topic traits, with the blanket
/// impl that gives it to every type (and trait object) having them all.
macro_rules! union {
    ($(#[$doc:meta])* $name:ident: $($topic:path),+) => {
        $(#[$doc])*
        pub trait $name: $($topic +)+ {}

        impl<T: $($topic +)+ ?Sized> $name for T {}
    };
}

pub mod audit;
mod audit_requests;
mod changes;
pub mod classify;
pub mod clock;
pub mod cluster;
pub mod copy;
pub(crate) mod field_blob;
pub mod finding;
mod findings;
pub mod hash_key;
mod history;
mod live;
mod names;
pub mod object;
mod open;
mod paged;
pub mod postgres;
mod prune;
mod reader;
pub mod recorder;
pub mod restore;
mod revision_rows;
mod rows;
mod run;
mod runs;
mod scope;
mod settings;
pub mod shared_revision;
pub(crate) mod sql;
pub mod sqlite;
mod stats;
pub mod tables;
pub mod unaudited;
mod usage;
mod values;
pub mod vanished;

pub use classify::ClassifyStats;
pub use cluster::ClusterId;
pub use finding::{FindingIter, FindingQuery, FindingsWriter, StoredFinding};
pub use history::{FieldChange, HistoryRow, NamedKey};
pub use live::{LiveIter, LiveObject};
pub use prune::Pruned;
pub use reader::{AnalysisReads, HistoryReader};
pub use recorder::{RunFact, RunRecorder};

union! {
    /// A whole backend: what runs write and what readers read.
    Backend: HistoryReader, RunRecorder, audit::AuditRecorder, clock::ClockRecorder, tables::Tables
}

pub use open::{scratch_file, Store};
pub use rows::{ContentRow, KeyId, RevisionRow, RevisionRows};
pub use run::{FileInfo, Gap, Previous, RunId, RunInfo, RunKind, RunStatus, RunTime, ServedBy, Shortfall};
pub use scope::{ObjectFilter, Scope};
pub use usage::{BusiestKey, LargestKey, ManagerUsage, NamespaceUsage, RequesterUsage, ResourceUsage, Usage};
pub use values::{Contents, Looked, ValueReader};

use std::path::PathBuf;

/// Default database path.
pub const DEFAULT_DB: &str = "etcd-inspector.sqlite";

/// What the database backend said, whichever backend it is.
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Store failures, naming the database; no backend's own types.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend refused or failed a statement.
    #[error("database {path}: {source}")]
    Backend { path: PathBuf, source: BackendError },
    #[error("database {path}: cannot upgrade the schema: {source}")]
    Migrate { path: PathBuf, source: BackendError },
    /// Written by a newer etcd-inspector: its schema is past what this one
    /// knows, so nothing is read or written.
    #[error("database {path} was written by a newer etcd-inspector (schema version {found}; this one knows up to {known}): use that version or newer")]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error("database {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("database {path} {message}")]
    Conflict { path: PathBuf, message: String },
    #[error("database {path} is damaged: {what}")]
    Damaged { path: PathBuf, what: String },
    #[error("database {path}: not written: a decoding worker panicked ({message}); this is a bug, please report it")]
    WorkerPanicked { path: PathBuf, message: String },
    #[error(transparent)]
    Key(#[from] hash_key::KeyError),
    #[error("database {path} is being written by another etcd-inspector run (lock {lock} is held); wait for it to finish or use another --db")]
    Busy { path: PathBuf, lock: PathBuf },
    /// A signal asked the work to stop; what it was writing is rolled back.
    #[error("interrupted by a signal")]
    Interrupted,
}

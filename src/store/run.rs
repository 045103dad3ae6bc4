//! A run as the store records it: its id, status, the gaps it found and
//! what it tells about itself.

use crate::decrypt::policy::Policy;
use crate::source::db_file::Damage;
use crate::source::wal::Recovered;
use crate::source::Revision;
use crate::unknown::{find, UnknownName};
use jiff::Timestamp;
use serde::Serialize;

/// A run's row id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

/// Where a run ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Failed,
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Every status.
    pub const ALL: [RunStatus; 4] = [
        RunStatus::Running,
        RunStatus::Complete,
        RunStatus::Failed,
        RunStatus::Interrupted,
    ];

    /// The status [`RunStatus::as_str`] names.
    pub fn parse(name: &str) -> Result<RunStatus, UnknownName> {
        find(&RunStatus::ALL, RunStatus::as_str, "a run status", name)
    }
}

/// What a run read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// etcd's API, read once (`snapshot`).
    Live,
    /// etcd's API, read and then watched (`follow`).
    Follow,
    /// A snapshot etcd streamed over its API (`--fetch snapshot`).
    FetchSnapshot,
    /// A db or snapshot file, with a member's log when given one.
    File,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Live => "live",
            RunKind::Follow => "follow",
            RunKind::FetchSnapshot => "fetch-snapshot",
            RunKind::File => "file",
        }
    }

    /// Every kind.
    pub const ALL: [RunKind; 4] = [
        RunKind::Live,
        RunKind::Follow,
        RunKind::FetchSnapshot,
        RunKind::File,
    ];

    /// The kind [`RunKind::as_str`] names.
    pub fn parse(name: &str) -> Result<RunKind, UnknownName> {
        find(&RunKind::ALL, RunKind::as_str, "a run kind", name)
    }

    /// Whether the run's time of reading is etcd's: a file's says nothing
    /// of when etcd held what it read.
    pub fn reads_etcd_now(self) -> bool {
        self != RunKind::File
    }
}

/// Revisions lost to compaction between two runs, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    pub from_revision: Revision,
    pub to_revision: Revision,
}

impl std::fmt::Display for Gap {
    /// `from-to`, as every table and message shows a gap.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.from_revision, self.to_revision)
    }
}

/// An etcd member that served a live run, from `at` on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServedBy {
    /// When it started serving.
    pub at: Timestamp,
    /// The client URL the run reached it at.
    pub endpoint: String,
    /// etcd's member id, hex.
    pub member_id: String,
    /// Why the member before it stopped serving; `None` for the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_because: Option<String>,
}

impl std::fmt::Display for ServedBy {
    /// `endpoint (member id)`, as `runs` shows a member.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.endpoint, self.member_id)
    }
}

/// The run an incremental run continues from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Previous {
    /// Which run it is.
    pub run: RunId,
    /// The compaction revision it saw, if recorded.
    pub compact: Option<Revision>,
    /// Everything up to this revision is stored.
    pub head: Revision,
    /// ... and everything from this one on.
    pub covered_from: Revision,
}

/// Keys whose stored history disagrees with etcd's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// How many keys.
    pub keys: usize,
    /// The first of them, with its stored and expected revision counts.
    pub key: String,
    pub stored: i64,
    pub expected: i64,
}

impl Shortfall {
    /// The keys of `live` (created at or after `covered_from`, and kept by
    /// `recorded`) whose stored generation disagrees with etcd's counters:
    /// `stored` counts, for each of a page of keys, the key's stored
    /// revisions of its generation up to its mod_revision and gives the
    /// newest (a page at a time: one round trip for a server backend).
    pub(super) fn of<'k, E>(
        covered_from: Revision,
        live: &'k [crate::source::LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
        mut stored: impl FnMut(&[&'k crate::source::LiveKey]) -> Result<Vec<(i64, Option<Revision>)>, E>,
    ) -> Result<Option<Shortfall>, E> {
        const PAGE: usize = 1000;
        let mut shortfall: Option<Shortfall> = None;
        let checked = live
            .iter()
            .filter(|k| k.create_revision >= covered_from.max(Revision(1)) && recorded(&k.key))
            .collect::<Vec<_>>();
        for page in checked.chunks(PAGE) {
            for (k, (count, newest)) in page.iter().zip(stored(page)?) {
                if count == k.version && newest == Some(k.mod_revision) {
                    continue;
                }
                match &mut shortfall {
                    Some(s) => s.keys += 1,
                    None => {
                        shortfall = Some(Shortfall {
                            keys: 1,
                            key: String::from_utf8_lossy(&k.key).into_owned(),
                            stored: count,
                            expected: k.version,
                        })
                    }
                }
            }
        }
        Ok(shortfall)
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (keys, have) = match self.keys {
            1 => ("1 key".to_string(), "has"),
            n => (format!("{n} keys"), "have"),
        };
        write!(
            f,
            "history incomplete: {keys} {have} {} revisions than etcd counts, e.g. {}: stored {} of {}",
            if self.stored > self.expected {
                "more"
            } else {
                "fewer"
            },
            self.key,
            self.stored,
            self.expected
        )
    }
}

impl std::error::Error for Shortfall {}

impl RunInfo {
    /// The source as tables show it: a file's and a fetched snapshot's
    /// with their kind before it (`file:/backup/etcd.db`).
    pub fn shown_source(&self) -> String {
        match self.kind {
            RunKind::Live => self.source.clone(),
            kind => format!("{}:{}", kind.as_str(), self.source),
        }
    }
}

/// When a complete run read etcd.
#[derive(Clone, Debug)]
pub struct RunTime {
    pub head: Revision,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub kind: RunKind,
}

/// A run as `runs` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub id: RunId,
    pub status: RunStatus,
    /// The cluster's name, or etcd's cluster id when it has none; `None`
    /// for a run that never reached its cluster.
    pub cluster: Option<String>,
    /// etcd's cluster id (hex).
    pub cluster_id: Option<String>,
    pub kind: RunKind,
    /// The endpoints or the file read.
    pub source: String,
    pub prefix: String,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub head_revision: Option<Revision>,
    pub compact_revision: Option<Revision>,
    pub history_from: Option<Revision>,
    pub keys_seen: i64,
    pub revisions_added: i64,
    pub gaps: Vec<Gap>,
    pub error: Option<String>,
    pub tool_version: String,
    /// The etcd server version a live run talked to.
    pub etcd_version: Option<String>,
    /// How a live run fetched history: `watch` or `snapshot`.
    pub fetched: Option<String>,
    /// Which schema named the fields (built-in, or given files and a hash).
    pub schema: Option<String>,
    /// Read from a damaged file with `--salvage`.
    pub salvaged: bool,
    /// What the salvaging read worked around.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damage: Option<Damage>,
    /// What the run took from a member's WAL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal: Option<Recovered>,
    /// The write policy of the encryption config the run decrypted with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Policy>,
    /// The id of the key the run hashed secrets with (see
    /// [`crate::canon::keyed_hash`]): runs with different ids do not
    /// compare keyed hashes.
    pub hash_key: Option<String>,
    /// For a run that read a data file: its size, SHA-256 and revisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileInfo>,
    /// For a live run: the etcd members that served it, in order (more than
    /// one when it moved because a member failed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<ServedBy>,
    /// What the run found of a restore of etcd (it then failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<super::restore::Restore>,
}

/// The data file a run read.
#[derive(Clone, Debug, Serialize)]
pub struct FileInfo {
    pub size: i64,
    pub sha256: String,
    pub first_revision: Option<Revision>,
    pub last_revision: Option<Revision>,
}

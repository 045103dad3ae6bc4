//! Runs: one row per `snapshot` invocation, its status and what it saw.

use super::{Store, StoreError};
use crate::decode::gotime::now;
use crate::decrypt::policy::Policy;
use crate::source::db_file::Damage;
use crate::source::LiveKey;
use crate::unknown::{find, UnknownName};
use rusqlite::{params, OptionalExtension};
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

/// Revisions lost to compaction between two runs, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    pub from_revision: i64,
    pub to_revision: i64,
}

impl std::fmt::Display for Gap {
    /// `from-to`, as every table and message shows a gap.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.from_revision, self.to_revision)
    }
}

/// The run an incremental run continues from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Previous {
    /// Everything up to this revision is stored.
    pub head: i64,
    /// ... and everything from this one on.
    pub covered_from: i64,
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

/// When a complete run read etcd.
#[derive(Clone, Debug)]
pub struct RunTime {
    pub head: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// It read a data file, whose time of reading says nothing of etcd's.
    pub file: bool,
}

/// A run as `runs` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub id: RunId,
    pub status: RunStatus,
    pub cluster_id: Option<String>,
    pub source: String,
    pub prefix: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub head_revision: Option<i64>,
    pub compact_revision: Option<i64>,
    pub history_from: Option<i64>,
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
}

/// The data file a run read.
#[derive(Clone, Debug, Serialize)]
pub struct FileInfo {
    pub size: i64,
    pub sha256: String,
    pub first_revision: Option<i64>,
    pub last_revision: Option<i64>,
}

impl Store {
    /// Runs left `running` by a process that no longer holds the lock (killed
    /// or crashed) are marked interrupted. Called with the lock held.
    pub(super) fn abandon_stale_runs(&self) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'interrupted', error = coalesce(error, 'the process ended before the run finished') \
                 WHERE status = 'running'",
                [],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Starts a run, recording the id of the key it hashes with (which
    /// must be loaded: [`Store::load_hash_key`]).
    pub fn begin_run(&self, source: &str, prefix: &str, filter: &str) -> Result<RunId, StoreError> {
        let key = self.hash_key()?.id();
        self.conn
            .execute(
                "INSERT INTO runs (source, prefix, resource_filter, started_at, status, tool_version, pid, hash_key) \
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
                params![
                    source,
                    prefix,
                    filter,
                    now(),
                    env!("CARGO_PKG_VERSION"),
                    std::process::id(),
                    key
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(RunId(self.conn.last_insert_rowid()))
    }

    /// The cluster's row id, created on first sight.
    pub fn cluster(&self, etcd_cluster_id: &str) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO clusters (etcd_cluster_id, first_seen) VALUES (?1, ?2)",
                params![etcd_cluster_id, now()],
            )
            .map_err(|e| self.err(e))?;
        self.conn
            .query_row(
                "SELECT id FROM clusters WHERE etcd_cluster_id = ?1",
                [etcd_cluster_id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// The highest revision up to which some run of the cluster, reading
    /// the same prefix with the same resource filter, stored everything (a
    /// complete run's head, or how far a `follow` run got), and from which
    /// revision that run's stored history is unbroken. Runs from before
    /// filters existed recorded every resource (`everything`).
    pub fn previous_head(
        &self,
        cluster: i64,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        self.conn
            .query_row(
                "SELECT complete_through, coalesce(covered_from, history_from, 1) FROM runs \
                 WHERE cluster_id = ?1 AND prefix = ?2 AND coalesce(resource_filter, ?4) = ?3 \
                 AND complete_through IS NOT NULL ORDER BY complete_through DESC LIMIT 1",
                params![cluster, prefix, filter, everything],
                |r| {
                    Ok(Previous {
                        head: r.get(0)?,
                        covered_from: r.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Sets one of the run's columns.
    fn set_column(
        &self,
        run: RunId,
        column: &'static str,
        value: &dyn rusqlite::ToSql,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                &format!("UPDATE runs SET {column} = ?2 WHERE id = ?1"),
                params![run.0, value],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records the etcd server version a live run talked to.
    pub fn set_run_etcd_version(&self, run: RunId, version: &str) -> Result<(), StoreError> {
        self.set_column(run, "etcd_version", &version)
    }

    /// Records which schema named the run's fields.
    pub fn set_run_schema(&self, run: RunId, schema: &str) -> Result<(), StoreError> {
        self.set_column(run, "schema", &schema)
    }

    /// Records what a salvaging run of a damaged file worked around.
    pub fn set_run_salvage(&self, run: RunId, damage: &Damage) -> Result<(), StoreError> {
        let json = serde_json::to_string(damage).expect("damage serializes");
        self.set_column(run, "salvage", &json)
    }

    /// Records how a live run fetched history (`watch` or `snapshot`).
    pub fn set_run_fetched(&self, run: RunId, how: &str) -> Result<(), StoreError> {
        self.set_column(run, "fetched", &how)
    }

    /// Records the write policy of the encryption config a run decrypted with.
    pub fn set_run_encryption_policy(&self, run: RunId, policy: &Policy) -> Result<(), StoreError> {
        let json = serde_json::to_string(policy).expect("a policy serializes");
        self.set_column(run, "encryption_policy", &json)
    }

    /// The encryption policy of `cluster`'s newest complete run that
    /// recorded one, with that run's head revision.
    pub(super) fn read_encryption_policy(&self, cluster: i64) -> Result<Option<(Policy, i64)>, StoreError> {
        let row: Option<(String, i64)> = self
            .conn
            .query_row(
                "SELECT encryption_policy, head_revision FROM runs \
                 WHERE cluster_id = ?1 AND status = 'complete' AND encryption_policy IS NOT NULL \
                 AND head_revision IS NOT NULL ORDER BY id DESC LIMIT 1",
                params![cluster],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(|(json, head)| {
            serde_json::from_str(&json)
                .map(|p| (p, head))
                .map_err(|e| self.damaged("runs.encryption_policy", e))
        })
        .transpose()
    }

    /// A JSON column of a run read as its type.
    fn parsed_json<T: serde::de::DeserializeOwned>(
        &self,
        stored: Option<String>,
        column: &str,
    ) -> Result<Option<T>, StoreError> {
        stored
            .map(|json| {
                serde_json::from_str(&json)
                    .map_err(|e| self.damaged(column, format!("{json:?} does not parse ({e})")))
            })
            .transpose()
    }

    /// When `cluster`'s complete runs read etcd, oldest first: what a
    /// detector knows of the cluster's clock.
    pub(super) fn read_run_times(&self, cluster: i64) -> Result<Vec<RunTime>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT head_revision, started_at, finished_at, source LIKE 'file:%' FROM runs \
                 WHERE cluster_id = ?1 AND status = 'complete' AND head_revision IS NOT NULL ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![cluster], |r| {
                Ok(RunTime {
                    head: r.get(0)?,
                    started_at: r.get(1)?,
                    finished_at: r.get(2)?,
                    file: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Records from which revision the run's stored history is unbroken.
    pub fn set_run_coverage(&self, run: RunId, covered_from: i64) -> Result<(), StoreError> {
        self.set_column(run, "covered_from", &covered_from)
    }

    /// Compares the stored history with etcd's counters: for every key of
    /// `live` that `recorded` keeps and whose generation began at or after
    /// `covered_from`, the stored revisions of that generation must number
    /// exactly its `version`, the newest being its `mod_revision`.
    pub fn history_shortfall(
        &self,
        cluster: i64,
        covered_from: i64,
        live: &[LiveKey],
        recorded: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT count(*), max(r.mod_revision) FROM keys k JOIN revisions r ON r.key_id = k.id \
                 WHERE k.cluster_id = ?1 AND k.key = ?2 AND r.create_revision = ?3 AND r.deleted = 0 \
                 AND r.mod_revision <= ?4",
            )
            .map_err(|e| self.err(e))?;
        let mut shortfall: Option<Shortfall> = None;
        for k in live {
            if k.create_revision < covered_from.max(1) || !recorded(&k.key) {
                continue;
            }
            let (stored, newest): (i64, Option<i64>) = stmt
                .query_row(params![cluster, k.key, k.create_revision, k.mod_revision], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(|e| self.err(e))?;
            if stored == k.version && newest == Some(k.mod_revision) {
                continue;
            }
            match &mut shortfall {
                Some(s) => s.keys += 1,
                None => {
                    shortfall = Some(Shortfall {
                        keys: 1,
                        key: String::from_utf8_lossy(&k.key).into_owned(),
                        stored,
                        expected: k.version,
                    })
                }
            }
        }
        Ok(shortfall)
    }

    /// Records what the run pinned once connected.
    pub fn set_run_target(
        &self,
        run: RunId,
        cluster: i64,
        head: i64,
        compact: i64,
        history_from: i64,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET cluster_id = ?2, head_revision = ?3, compact_revision = ?4, \
                 history_from = coalesce(history_from, ?5) WHERE id = ?1",
                params![run.0, cluster, head, compact, history_from],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records that everything up to `revision` is stored: the run's head
    /// moves there too.
    pub fn set_complete_through(&self, run: RunId, revision: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET complete_through = ?2, head_revision = ?2 WHERE id = ?1",
                params![run.0, revision],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Records the data file a run read.
    pub fn set_run_file(
        &self,
        run: RunId,
        size: u64,
        sha256: &str,
        first: Option<i64>,
        last: Option<i64>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET file_size = ?2, file_sha256 = ?3, file_first_revision = ?4, file_last_revision = ?5 WHERE id = ?1",
                params![run.0, size as i64, sha256, first, last],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Keys under `prefix` whose newest stored revision at or before `head`
    /// is not a tombstone.
    pub fn live_keys(&self, cluster: i64, prefix: &[u8], head: i64) -> Result<i64, StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        self.conn
            .query_row(
                "SELECT count(*) FROM keys k WHERE k.cluster_id = ?1 AND k.key >= ?2 AND k.key < ?3 AND \
                 (SELECT r.deleted FROM revisions r WHERE r.key_id = k.id AND r.mod_revision <= ?4 \
                  ORDER BY r.mod_revision DESC LIMIT 1) = 0",
                params![cluster, prefix, end, head],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    pub fn record_gap(&self, run: RunId, cluster: i64, gap: Gap) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO history_gaps (run_id, cluster_id, from_revision, to_revision) VALUES (?1, ?2, ?3, ?4)",
                params![run.0, cluster, gap.from_revision, gap.to_revision],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Ends a run with its status, key count and error; the revisions it
    /// added are counted from what it committed.
    pub fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        keys_seen: i64,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        let added: i64 = self
            .conn
            .query_row("SELECT count(*) FROM revisions WHERE run_id = ?1", [run.0], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))?;
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, keys_seen = ?4, revisions_added = ?5, error = ?6, \
                 complete_through = CASE WHEN ?2 = 'complete' THEN head_revision ELSE complete_through END WHERE id = ?1",
                params![run.0, status.as_str(), now(), keys_seen, added, error],
            )
            .map_err(|e| self.err(e))?;
        Ok(added)
    }

    /// Every run, oldest first.
    pub(super) fn read_runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.id, r.status, c.etcd_cluster_id, r.source, r.prefix, r.started_at, r.finished_at, r.head_revision, \
                 r.compact_revision, r.history_from, r.keys_seen, r.revisions_added, r.error, r.tool_version, \
                 r.file_size, r.file_sha256, r.file_first_revision, r.file_last_revision, r.etcd_version, \
                 r.encryption_policy, r.fetched, r.salvage, r.schema, r.hash_key FROM runs r LEFT JOIN clusters c ON c.id = r.cluster_id ORDER BY r.id",
            )
            .map_err(|e| self.err(e))?;
        let err = |e| self.err(e);
        let mut rows = stmt.query([]).map_err(err)?;
        let mut runs: Vec<RunInfo> = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            let json = |column: &str| -> Result<Option<String>, StoreError> { r.get(column).map_err(err) };
            let status: String = r.get("status").map_err(err)?;
            let salvage = json("salvage")?;
            runs.push(RunInfo {
                id: RunId(r.get("id").map_err(err)?),
                status: RunStatus::parse(&status).map_err(|e| self.damaged("runs.status", e))?,
                cluster_id: r.get("etcd_cluster_id").map_err(err)?,
                source: r.get("source").map_err(err)?,
                prefix: r.get("prefix").map_err(err)?,
                started_at: r.get("started_at").map_err(err)?,
                finished_at: r.get("finished_at").map_err(err)?,
                head_revision: r.get("head_revision").map_err(err)?,
                compact_revision: r.get("compact_revision").map_err(err)?,
                history_from: r.get("history_from").map_err(err)?,
                keys_seen: r.get("keys_seen").map_err(err)?,
                revisions_added: r.get("revisions_added").map_err(err)?,
                gaps: Vec::new(),
                error: r.get("error").map_err(err)?,
                tool_version: r.get("tool_version").map_err(err)?,
                etcd_version: r.get("etcd_version").map_err(err)?,
                fetched: r.get("fetched").map_err(err)?,
                schema: r.get("schema").map_err(err)?,
                hash_key: r.get("hash_key").map_err(err)?,
                salvaged: salvage.is_some(),
                damage: self.parsed_json(salvage, "runs.salvage")?,
                encryption: self.parsed_json(json("encryption_policy")?, "runs.encryption_policy")?,
                file: match (
                    r.get::<_, Option<i64>>("file_size").map_err(err)?,
                    r.get::<_, Option<String>>("file_sha256").map_err(err)?,
                ) {
                    (Some(size), Some(sha256)) => Some(FileInfo {
                        size,
                        sha256,
                        first_revision: r.get("file_first_revision").map_err(err)?,
                        last_revision: r.get("file_last_revision").map_err(err)?,
                    }),
                    _ => None,
                },
            });
        }
        drop(rows);
        let mut gaps = self
            .conn
            .prepare("SELECT run_id, from_revision, to_revision FROM history_gaps ORDER BY from_revision")
            .map_err(|e| self.err(e))?;
        let gap_rows = gaps
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    Gap {
                        from_revision: r.get(1)?,
                        to_revision: r.get(2)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        for g in gap_rows {
            let (run, gap) = g.map_err(|e| self.err(e))?;
            if let Some(info) = runs.iter_mut().find(|i| i.id.0 == run) {
                info.gaps.push(gap);
            }
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::HistoryReader;

    /// `runs` over a database whose run row holds `set`.
    fn runs_with(set: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let store = Store::open_for_writing(&path).unwrap();
        store.load_hash_key(&Default::default()).unwrap();
        store.begin_run("test", "/registry/", "").unwrap();
        assert_eq!(store.runs().unwrap()[0].status, RunStatus::Running);
        super::super::damage(&path, &format!("UPDATE runs SET {set}"));
        let e = store.runs().unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        e
    }

    #[test]
    fn an_unknown_run_status_is_damage_not_running() {
        let e = runs_with("status = 'paused'");
        assert!(
            e.contains("runs.status") && e.contains("\"paused\" is not a run status"),
            "{e}"
        );
    }

    #[test]
    fn run_json_that_does_not_parse_is_damage() {
        assert!(runs_with("salvage = '{'").contains("runs.salvage"));
        assert!(runs_with("encryption_policy = '[1'").contains("runs.encryption_policy"));
    }

    #[test]
    fn statuses_round_trip() {
        for status in RunStatus::ALL {
            assert_eq!(RunStatus::parse(status.as_str()), Ok(status));
        }
    }
}

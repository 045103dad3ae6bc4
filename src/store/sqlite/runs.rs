//! Runs: one row per `snapshot` invocation, its status and what it saw.

use super::Store;
use crate::decode::gotime::now;
use crate::decrypt::policy::Policy;
use crate::source::LiveKey;
use crate::store::restore::Restore;
use crate::store::RunFact;
use crate::store::StoreError;
use crate::store::{FileInfo, Gap, Previous, RunId, RunInfo, RunStatus, RunTime, ServedBy, Shortfall};
use rusqlite::{params, OptionalExtension};

impl Store {
    /// Runs left `running` by a process that no longer holds the lock (killed
    /// or crashed) are marked interrupted. Called with the lock held.
    pub(in crate::store) fn abandon_stale_runs(&self) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'interrupted', error = coalesce(error, 'the process ended before the run finished') \
                 WHERE status = 'running'",
                [],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
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

    /// Adds to `runs` what `sql` selects per run (its first column the run
    /// id, the rest read by `row`), in the order selected.
    fn per_run<T>(
        &self,
        runs: &mut [RunInfo],
        sql: &str,
        row: impl Fn(&rusqlite::Row) -> rusqlite::Result<T>,
        mut add: impl FnMut(&mut RunInfo, T),
    ) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, row(r)?)))
            .map_err(|e| self.err(e))?;
        for found in rows {
            let (run, item) = found.map_err(|e| self.err(e))?;
            if let Some(info) = runs.iter_mut().find(|i| i.id.0 == run) {
                add(info, item);
            }
        }
        Ok(())
    }
}

impl crate::store::reader::RunReads for Store {
    fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT r.id, r.status, r.source, r.prefix, r.started_at, r.finished_at, r.head_revision, \
                 r.compact_revision, r.history_from, r.keys_seen, r.revisions_added, r.error, r.tool_version, \
                 r.file_size, r.file_sha256, r.file_first_revision, r.file_last_revision, r.etcd_version, \
                 r.encryption_policy, r.fetched, r.salvage, r.wal, r.schema, r.hash_key, r.restored, r.cluster_id AS cluster_row, {} \
                 FROM runs r LEFT JOIN clusters c ON c.id = r.cluster_id ORDER BY r.id",
                super::clusters::CLUSTER_COLUMNS
            ))
            .map_err(|e| self.err(e))?;
        let err = |e| self.err(e);
        let mut rows = stmt.query([]).map_err(err)?;
        let mut runs: Vec<RunInfo> = Vec::new();
        while let Some(r) = rows.next().map_err(err)? {
            let json = |column: &str| -> Result<Option<String>, StoreError> { r.get(column).map_err(err) };
            let status: String = r.get("status").map_err(err)?;
            let salvage = json("salvage")?;
            let cluster_row: Option<i64> = r.get("cluster_row").map_err(err)?;
            let at = r.as_ref().column_index("cluster_row").map_err(err)? + 1;
            let cluster = cluster_row.map(|_| self.cluster_at(r, at)).transpose()?;
            runs.push(RunInfo {
                id: RunId(r.get("id").map_err(err)?),
                status: RunStatus::parse(&status).map_err(|e| self.damaged("runs.status", e))?,
                cluster: cluster.as_ref().map(|c| c.label().to_string()),
                cluster_id: cluster.map(|c| c.etcd_cluster_id),
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
                wal: self.parsed_json(json("wal")?, "runs.wal")?,
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
                members: Vec::new(),
                restored: self.parsed_json(json("restored")?, "runs.restored")?,
            });
        }
        drop(rows);
        self.per_run(
            &mut runs,
            "SELECT run_id, at, endpoint, member_id, moved_because FROM run_members ORDER BY id",
            |r| {
                Ok(ServedBy {
                    at: r.get(1)?,
                    endpoint: r.get(2)?,
                    member_id: r.get(3)?,
                    moved_because: r.get(4)?,
                })
            },
            |info, by| info.members.push(by),
        )?;
        self.per_run(
            &mut runs,
            "SELECT run_id, from_revision, to_revision FROM history_gaps ORDER BY from_revision",
            |r| {
                Ok(Gap {
                    from_revision: r.get(1)?,
                    to_revision: r.get(2)?,
                })
            },
            |info, gap| info.gaps.push(gap),
        )?;
        Ok(runs)
    }

    fn run_times(&self, cluster: i64) -> Result<Vec<RunTime>, StoreError> {
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

    fn restores(&self, cluster: i64) -> Result<Vec<(RunId, Restore)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, restored FROM runs WHERE cluster_id = ?1 AND restored IS NOT NULL ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![cluster], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut restores = Vec::new();
        for row in rows {
            let (run, json) = row.map_err(|e| self.err(e))?;
            if let Some(restore) = self.parsed_json(Some(json), "runs.restored")? {
                restores.push((RunId(run), restore));
            }
        }
        Ok(restores)
    }

    fn encryption_policy(&self, cluster: i64) -> Result<Option<(Policy, i64)>, StoreError> {
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
}

impl crate::store::recorder::RunWrites for Store {
    fn begin_run(&self, source: &str, prefix: &str, filter: &str) -> Result<RunId, StoreError> {
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

    fn record(&self, run: RunId, fact: RunFact<'_>) -> Result<(), StoreError> {
        let (sql, values): (&str, Vec<Box<dyn rusqlite::ToSql>>) = match fact {
            RunFact::Schema(s) => ("UPDATE runs SET schema = ?2 WHERE id = ?1", vec![Box::new(s.to_string())]),
            RunFact::EtcdVersion(v) => ("UPDATE runs SET etcd_version = ?2 WHERE id = ?1", vec![Box::new(v.to_string())]),
            RunFact::Fetched(how) => ("UPDATE runs SET fetched = ?2 WHERE id = ?1", vec![Box::new(how.to_string())]),
            RunFact::Salvage(damage) => ("UPDATE runs SET salvage = ?2 WHERE id = ?1", vec![Box::new(serde_json::to_string(damage).expect("damage serializes"))]),
            RunFact::Wal(wal) => ("UPDATE runs SET wal = ?2 WHERE id = ?1", vec![Box::new(serde_json::to_string(wal).expect("a WAL account serializes"))]),
            RunFact::Restored(restore) => (
                "UPDATE runs SET restored = ?2 WHERE id = ?1",
                vec![Box::new(serde_json::to_string(restore).expect("a restore serializes"))],
            ),
            RunFact::EncryptionPolicy(policy) => (
                "UPDATE runs SET encryption_policy = ?2 WHERE id = ?1",
                vec![Box::new(serde_json::to_string(policy).expect("a policy serializes"))],
            ),
            RunFact::Target {
                cluster,
                head,
                compact,
                history_from,
            } => (
                "UPDATE runs SET cluster_id = ?2, head_revision = ?3, compact_revision = ?4, \
                 history_from = coalesce(history_from, ?5) WHERE id = ?1",
                vec![Box::new(cluster), Box::new(head), Box::new(compact), Box::new(history_from)],
            ),
            RunFact::File {
                size,
                sha256,
                first,
                last,
            } => (
                "UPDATE runs SET file_size = ?2, file_sha256 = ?3, file_first_revision = ?4, file_last_revision = ?5 \
                 WHERE id = ?1",
                vec![Box::new(size as i64), Box::new(sha256.to_string()), Box::new(first), Box::new(last)],
            ),
            RunFact::Coverage(from) => ("UPDATE runs SET covered_from = ?2 WHERE id = ?1", vec![Box::new(from)]),
            RunFact::CompleteThrough(revision) => (
                "UPDATE runs SET complete_through = ?2, head_revision = ?2 WHERE id = ?1",
                vec![Box::new(revision)],
            ),
            RunFact::Gap { cluster, gap } => (
                "INSERT INTO history_gaps (run_id, cluster_id, from_revision, to_revision) VALUES (?1, ?2, ?3, ?4)",
                vec![Box::new(cluster), Box::new(gap.from_revision), Box::new(gap.to_revision)],
            ),
            // Connecting again to the member that serves is no move.
            RunFact::Served(by) => (
                "INSERT INTO run_members (run_id, at, endpoint, member_id, moved_because) SELECT ?1, ?2, ?3, ?4, ?5 \
                 WHERE ?5 IS NOT NULL OR NOT EXISTS (SELECT 1 FROM run_members WHERE id = \
                 (SELECT max(id) FROM run_members WHERE run_id = ?1) AND endpoint = ?3 AND member_id = ?4)",
                vec![
                    Box::new(by.at.clone()),
                    Box::new(by.endpoint.clone()),
                    Box::new(by.member_id.clone()),
                    Box::new(by.moved_because.clone()),
                ],
            ),
        };
        let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&run.0];
        bound.extend(values.iter().map(|v| v.as_ref()));
        self.conn
            .execute(sql, bound.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn finish_run(
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

    fn previous_head(
        &self,
        cluster: i64,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        self.conn
            .query_row(
                "SELECT complete_through, coalesce(covered_from, history_from, 1), id, compact_revision FROM runs \
                 WHERE cluster_id = ?1 AND prefix = ?2 AND coalesce(resource_filter, ?4) = ?3 \
                 AND complete_through IS NOT NULL ORDER BY complete_through DESC LIMIT 1",
                params![cluster, prefix, filter, everything],
                |r| {
                    Ok(Previous {
                        head: r.get(0)?,
                        covered_from: r.get(1)?,
                        run: RunId(r.get(2)?),
                        compact: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn history_shortfall(
        &self,
        cluster: i64,
        covered_from: i64,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT count(*), max(r.mod_revision) FROM keys k JOIN revisions r ON r.key_id = k.id \
                 WHERE k.cluster_id = ?1 AND k.key = ?2 AND r.create_revision = ?3 AND r.deleted = 0 \
                 AND r.mod_revision <= ?4",
            )
            .map_err(|e| self.err(e))?;
        Shortfall::of(covered_from, live, recorded, |page| {
            page.iter()
                .map(|k| {
                    stmt.query_row(params![cluster, k.key, k.create_revision, k.mod_revision], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .map_err(|e| self.err(e))
                })
                .collect()
        })
    }

    fn live_keys(&self, cluster: i64, prefix: &[u8], head: i64) -> Result<i64, StoreError> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::reader::RunReads;
    use crate::store::recorder::HashKeyLoad;
    use crate::store::recorder::RunWrites;

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

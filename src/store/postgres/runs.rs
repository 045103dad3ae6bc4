//! Runs: one row per `snapshot` invocation, its status and what it saw.

use super::Store;
use crate::decode::gotime::now;
use crate::decrypt::policy::Policy;
use crate::source::LiveKey;
use crate::store::restore::Restore;
use crate::store::{
    FileInfo, Gap, Previous, RunFact, RunId, RunInfo, RunStatus, RunTime, ServedBy, Shortfall, StoreError,
};
use postgres::types::ToSql;
use postgres::Row;

impl Store {
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

    /// One row of `runs`' query.
    fn run_info(&self, r: &Row) -> Result<RunInfo, StoreError> {
        let status: String = r.get("status");
        let salvage: Option<String> = r.get("salvage");
        let cluster_row: Option<i64> = r.get("cluster_row");
        let at = r
            .columns()
            .iter()
            .position(|c| c.name() == "cluster_row")
            .expect("selected")
            + 1;
        let cluster = cluster_row.map(|_| self.cluster_at(r, at)).transpose()?;
        Ok(RunInfo {
            id: RunId(r.get("id")),
            status: RunStatus::parse(&status).map_err(|e| self.damaged("runs.status", e))?,
            cluster: cluster.as_ref().map(|c| c.label().to_string()),
            cluster_id: cluster.map(|c| c.etcd_cluster_id),
            source: r.get("source"),
            prefix: r.get("prefix"),
            started_at: r.get("started_at"),
            finished_at: r.get("finished_at"),
            head_revision: r.get("head_revision"),
            compact_revision: r.get("compact_revision"),
            history_from: r.get("history_from"),
            keys_seen: r.get("keys_seen"),
            revisions_added: r.get("revisions_added"),
            gaps: Vec::new(),
            error: r.get("error"),
            tool_version: r.get("tool_version"),
            etcd_version: r.get("etcd_version"),
            fetched: r.get("fetched"),
            schema: r.get("schema"),
            hash_key: r.get("hash_key"),
            salvaged: salvage.is_some(),
            damage: self.parsed_json(salvage, "runs.salvage")?,
            encryption: self.parsed_json(r.get("encryption_policy"), "runs.encryption_policy")?,
            wal: self.parsed_json(r.get("wal"), "runs.wal")?,
            file: match (
                r.get::<_, Option<i64>>("file_size"),
                r.get::<_, Option<String>>("file_sha256"),
            ) {
                (Some(size), Some(sha256)) => Some(FileInfo {
                    size,
                    sha256,
                    first_revision: r.get("file_first_revision"),
                    last_revision: r.get("file_last_revision"),
                }),
                _ => None,
            },
            members: Vec::new(),
            restored: self.parsed_json(r.get("restored"), "runs.restored")?,
        })
    }

    /// Adds what `sql` selects (run id first) to each run it names.
    fn per_run<T>(
        &self,
        runs: &mut [RunInfo],
        sql: &str,
        row: impl Fn(&Row) -> T,
        mut add: impl FnMut(&mut RunInfo, T),
    ) -> Result<(), StoreError> {
        let params: &[&(dyn ToSql + Sync)] = &[];
        for r in self.query(sql, params)? {
            let run: i64 = r.get(0);
            if let Ok(at) = runs.binary_search_by_key(&run, |i| i.id.0) {
                add(&mut runs[at], row(&r));
            }
        }
        Ok(())
    }
}

impl crate::store::reader::RunReads for Store {
    fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let rows = self.query(
            &format!(
                "SELECT r.id, r.status, r.source, r.prefix, r.started_at, r.finished_at, r.head_revision, \
                 r.compact_revision, r.history_from, r.keys_seen, r.revisions_added, r.error, r.tool_version, \
                 r.file_size, r.file_sha256, r.file_first_revision, r.file_last_revision, r.etcd_version, \
                 r.encryption_policy, r.fetched, r.salvage, r.wal, r.schema, r.hash_key, r.restored, r.cluster_id AS cluster_row, {} \
                 FROM runs r LEFT JOIN clusters c ON c.id = r.cluster_id ORDER BY r.id",
                super::clusters::CLUSTER_COLUMNS
            ),
            &[],
        )?;
        let mut runs = Vec::with_capacity(rows.len());
        for r in &rows {
            runs.push(self.run_info(r)?);
        }
        self.per_run(
            &mut runs,
            "SELECT run_id, at, endpoint, member_id, moved_because FROM run_members ORDER BY id",
            |r| ServedBy {
                at: r.get(1),
                endpoint: r.get(2),
                member_id: r.get(3),
                moved_because: r.get(4),
            },
            |info, by| info.members.push(by),
        )?;
        self.per_run(
            &mut runs,
            "SELECT run_id, from_revision, to_revision FROM history_gaps ORDER BY from_revision",
            |r| Gap {
                from_revision: r.get(1),
                to_revision: r.get(2),
            },
            |info, gap| info.gaps.push(gap),
        )?;
        Ok(runs)
    }

    fn run_times(&self, cluster: i64) -> Result<Vec<RunTime>, StoreError> {
        Ok(self
            .query(
                "SELECT head_revision, started_at, finished_at, source LIKE 'file:%' FROM runs \
                 WHERE cluster_id = $1 AND status = 'complete' AND head_revision IS NOT NULL ORDER BY id",
                &[&cluster],
            )?
            .iter()
            .map(|r| RunTime {
                head: r.get(0),
                started_at: r.get(1),
                finished_at: r.get(2),
                file: r.get(3),
            })
            .collect())
    }

    fn restores(&self, cluster: i64) -> Result<Vec<(RunId, Restore)>, StoreError> {
        let mut restores = Vec::new();
        for r in self.query(
            "SELECT id, restored FROM runs WHERE cluster_id = $1 AND restored IS NOT NULL ORDER BY id",
            &[&cluster],
        )? {
            if let Some(restore) = self.parsed_json(r.get(1), "runs.restored")? {
                restores.push((RunId(r.get(0)), restore));
            }
        }
        Ok(restores)
    }

    fn encryption_policy(&self, cluster: i64) -> Result<Option<(Policy, i64)>, StoreError> {
        let row = self.query_opt(
            "SELECT encryption_policy, head_revision FROM runs \
             WHERE cluster_id = $1 AND status = 'complete' AND encryption_policy IS NOT NULL \
             AND head_revision IS NOT NULL ORDER BY id DESC LIMIT 1",
            &[&cluster],
        )?;
        row.map(|r| {
            let (json, head): (String, i64) = (r.get(0), r.get(1));
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
        let row = self
            .query_opt(
                "INSERT INTO runs (source, prefix, resource_filter, started_at, status, tool_version, pid, hash_key) \
                 VALUES ($1, $2, $3, $4, 'running', $5, $6, $7) RETURNING id",
                &[
                    &source,
                    &prefix,
                    &filter,
                    &now(),
                    &env!("CARGO_PKG_VERSION"),
                    &i64::from(std::process::id()),
                    &key,
                ],
            )?
            .expect("INSERT RETURNING gives a row");
        Ok(RunId(row.get(0)))
    }

    fn record(&self, run: RunId, fact: RunFact<'_>) -> Result<(), StoreError> {
        let run = &run.0;
        match fact {
            RunFact::Schema(s) => self.execute("UPDATE runs SET schema = $2 WHERE id = $1", &[run, &s]),
            RunFact::EtcdVersion(v) => self.execute("UPDATE runs SET etcd_version = $2 WHERE id = $1", &[run, &v]),
            RunFact::Fetched(how) => self.execute("UPDATE runs SET fetched = $2 WHERE id = $1", &[run, &how]),
            RunFact::Salvage(damage) => self.execute(
                "UPDATE runs SET salvage = $2 WHERE id = $1",
                &[run, &serde_json::to_string(damage).expect("damage serializes")],
            ),
            RunFact::Restored(restore) => self.execute(
                "UPDATE runs SET restored = $2 WHERE id = $1",
                &[run, &serde_json::to_string(restore).expect("a restore serializes")],
            ),
            RunFact::Wal(wal) => self.execute(
                "UPDATE runs SET wal = $2 WHERE id = $1",
                &[run, &serde_json::to_string(wal).expect("a WAL account serializes")],
            ),
            RunFact::EncryptionPolicy(policy) => self.execute(
                "UPDATE runs SET encryption_policy = $2 WHERE id = $1",
                &[run, &serde_json::to_string(policy).expect("a policy serializes")],
            ),
            RunFact::Target {
                cluster,
                head,
                compact,
                history_from,
            } => self.execute(
                "UPDATE runs SET cluster_id = $2, head_revision = $3, compact_revision = $4, \
                 history_from = coalesce(history_from, $5) WHERE id = $1",
                &[run, &cluster, &head, &compact, &history_from],
            ),
            RunFact::File {
                size,
                sha256,
                first,
                last,
            } => self.execute(
                "UPDATE runs SET file_size = $2, file_sha256 = $3, file_first_revision = $4, file_last_revision = $5 \
                 WHERE id = $1",
                &[run, &(size as i64), &sha256, &first, &last],
            ),
            RunFact::Coverage(from) => self.execute("UPDATE runs SET covered_from = $2 WHERE id = $1", &[run, &from]),
            RunFact::CompleteThrough(revision) => self.execute(
                "UPDATE runs SET complete_through = $2, head_revision = $2 WHERE id = $1",
                &[run, &revision],
            ),
            RunFact::Gap { cluster, gap } => self.execute(
                "INSERT INTO history_gaps (run_id, cluster_id, from_revision, to_revision) VALUES ($1, $2, $3, $4)",
                &[run, &cluster, &gap.from_revision, &gap.to_revision],
            ),
            // Connecting again to the member that serves is no move.
            RunFact::Served(by) => self.execute(
                "INSERT INTO run_members (run_id, at, endpoint, member_id, moved_because) \
                 SELECT $1, $2, $3, $4, $5::text \
                 WHERE $5::text IS NOT NULL OR NOT EXISTS (SELECT 1 FROM run_members WHERE id = \
                 (SELECT max(id) FROM run_members WHERE run_id = $1) AND endpoint = $3 AND member_id = $4)",
                &[run, &by.at, &by.endpoint, &by.member_id, &by.moved_because],
            ),
        }?;
        Ok(())
    }

    fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        keys_seen: i64,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        // A run whose connection was lost still says how it ended.
        self.reconnect_if_lost()?;
        let added: i64 = self
            .query_opt("SELECT count(*) FROM revisions WHERE run_id = $1", &[&run.0])?
            .expect("count gives a row")
            .get(0);
        self.execute(
            "UPDATE runs SET status = $2, finished_at = $3, keys_seen = $4, revisions_added = $5, error = $6, \
             complete_through = CASE WHEN $2 = 'complete' THEN head_revision ELSE complete_through END WHERE id = $1",
            &[&run.0, &status.as_str(), &now(), &keys_seen, &added, &error],
        )?;
        self.refresh_statistics("revisions", added.max(0) as u64, super::RUN_TABLES)?;
        Ok(added)
    }

    fn previous_head(
        &self,
        cluster: i64,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        Ok(self
            .query_opt(
                "SELECT complete_through, coalesce(covered_from, history_from, 1), id, compact_revision FROM runs \
                 WHERE cluster_id = $1 AND prefix = $2 AND coalesce(resource_filter, $4) = $3 \
                 AND complete_through IS NOT NULL ORDER BY complete_through DESC LIMIT 1",
                &[&cluster, &prefix, &filter, &everything],
            )?
            .map(|r| Previous {
                head: r.get(0),
                covered_from: r.get(1),
                run: RunId(r.get(2)),
                compact: r.get(3),
            }))
    }

    fn history_shortfall(
        &self,
        cluster: i64,
        covered_from: i64,
        live: &[LiveKey],
        recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        // Each key is looked up by its unique index (`OFFSET 0` keeps the
        // lookup per key): a cluster's first run asks before the statistics
        // know its keys, and joining instead scanned all of the cluster's
        // keys for each of the page's (10 s a page at 200,000 keys).
        Shortfall::of(covered_from, live, recorded, |page| {
            let keys: Vec<&[u8]> = page.iter().map(|k| k.key.as_slice()).collect();
            let created: Vec<i64> = page.iter().map(|k| k.create_revision).collect();
            let modified: Vec<i64> = page.iter().map(|k| k.mod_revision).collect();
            Ok(self
                .query(
                    "SELECT count(r.key_id), max(r.mod_revision) \
                     FROM unnest($2::bytea[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS l (key, created, modified, n) \
                     LEFT JOIN LATERAL (SELECT id FROM keys WHERE cluster_id = $1 AND key = l.key OFFSET 0) k ON true \
                     LEFT JOIN revisions r ON r.key_id = k.id AND r.create_revision = l.created AND NOT r.deleted \
                     AND r.mod_revision <= l.modified \
                     GROUP BY l.n ORDER BY l.n",
                    &[&cluster, &keys, &created, &modified],
                )?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
        })
    }

    fn live_keys(&self, cluster: i64, prefix: &[u8], head: i64) -> Result<i64, StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        Ok(self
            .query_opt(
                "SELECT count(*) FROM keys k WHERE k.cluster_id = $1 AND k.key >= $2 AND k.key < $3 AND \
                 (SELECT r.deleted FROM revisions r WHERE r.key_id = k.id AND r.mod_revision <= $4 \
                  ORDER BY r.mod_revision DESC LIMIT 1) = false",
                &[&cluster, &prefix, &end, &head],
            )?
            .expect("count gives a row")
            .get(0))
    }
}

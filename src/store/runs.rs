//! Runs in the database: one row per `snapshot` invocation, its status and
//! what it saw, written and read once over [`Sql`].

use super::cluster::{cluster_at, CLUSTER_COLUMNS};
use super::reader::RunReads;
use super::recorder::{HashKeyLoad, RunFact, RunWrites};
use super::restore::Restore;
use super::sql::{first_row, one_row, Cursor, Sql};
use super::tables::Cell;
use super::{FileInfo, Gap, Previous, RunId, RunInfo, RunKind, RunStatus, RunTime, ServedBy, StoreError};
use crate::decrypt::policy::Policy;
use crate::source::Revision;
use crate::store::ClusterId;
use jiff::Timestamp;

/// What [`RunReads::runs`] selects, before the cluster's columns.
const RUN_COLUMNS: &str =
    "r.id, r.status, r.kind, r.source, r.prefix, r.started_at, r.finished_at, r.head_revision, \
     r.compact_revision, r.history_from, r.keys_seen, r.revisions_added, r.error, r.tool_version, \
     r.file_size, r.file_sha256, r.file_first_revision, r.file_last_revision, r.etcd_version, \
     r.encryption_policy, r.fetched, r.salvage, r.wal, r.schema, r.hash_key, r.restored";

/// A JSON column of a run read as its type: text that does not parse is
/// damage quoting it.
fn run_json<T: serde::de::DeserializeOwned>(c: &mut Cursor, column: &str) -> Result<Option<T>, StoreError> {
    c.parsed(column, |json| {
        serde_json::from_str(json).map_err(|e| format!("{json:?} does not parse ({e})"))
    })
}

/// One row of [`RUN_COLUMNS`] and the cluster's columns (NULL for a run
/// that never reached its cluster).
fn run_info(c: &mut Cursor) -> Result<RunInfo, StoreError> {
    let id = RunId(c.int("id")?);
    let status = c.parsed("status", RunStatus::parse)?;
    let status = status.ok_or_else(|| c.damage("status", "NULL"))?;
    let kind = c.parsed("kind", RunKind::parse)?;
    let kind = kind.ok_or_else(|| c.damage("kind", "NULL"))?;
    let (source, prefix, started_at) = (c.text("source")?, c.text("prefix")?, c.time("started_at")?);
    let finished_at = c.opt_time("finished_at")?;
    let (head_revision, compact_revision) = (
        c.opt_revision("head_revision")?,
        c.opt_revision("compact_revision")?,
    );
    let history_from = c.opt_revision("history_from")?;
    let (keys_seen, revisions_added) = (c.int("keys_seen")?, c.int("revisions_added")?);
    let (error, tool_version) = (c.opt_text("error")?, c.text("tool_version")?);
    let (size, sha256) = (c.opt_int("file_size")?, c.opt_text("file_sha256")?);
    let (first_revision, last_revision) = (
        c.opt_revision("file_first_revision")?,
        c.opt_revision("file_last_revision")?,
    );
    let etcd_version = c.opt_text("etcd_version")?;
    let encryption = run_json(c, "encryption_policy")?;
    let fetched = c.opt_text("fetched")?;
    let damage = run_json(c, "salvage")?;
    let wal = run_json(c, "wal")?;
    let (schema, hash_key) = (c.opt_text("schema")?, c.opt_text("hash_key")?);
    let restored = run_json(c, "restored")?;
    let cluster = match c.opt_int("cluster_id")? {
        Some(_) => Some(cluster_at(c)?),
        None => None,
    };
    Ok(RunInfo {
        id,
        status,
        cluster: cluster.as_ref().map(|c| c.label().to_string()),
        cluster_id: cluster.map(|c| c.etcd_cluster_id),
        kind,
        source,
        prefix,
        started_at,
        finished_at,
        head_revision,
        compact_revision,
        history_from,
        keys_seen,
        revisions_added,
        gaps: Vec::new(),
        error,
        tool_version,
        etcd_version,
        fetched,
        schema,
        hash_key,
        salvaged: damage.is_some(),
        damage,
        encryption,
        wal,
        file: size.zip(sha256).map(|(size, sha256)| FileInfo {
            size,
            sha256,
            first_revision,
            last_revision,
        }),
        members: Vec::new(),
        restored,
    })
}

/// Adds to `runs` (in id order) what `sql` selects per run (its first
/// column the run id, the rest read by `row`), in the order selected.
fn per_run<T>(
    db: &(impl Sql + ?Sized),
    table: &str,
    runs: &mut [RunInfo],
    sql: &str,
    row: impl Fn(&mut Cursor) -> Result<T, StoreError>,
    mut add: impl FnMut(&mut RunInfo, T),
) -> Result<(), StoreError> {
    db.each(table, sql, &[], &mut |cells| {
        let mut c = Cursor::new(db, table, cells);
        let run = c.int("run_id")?;
        if let Ok(at) = runs.binary_search_by_key(&run, |i| i.id.0) {
            add(&mut runs[at], row(&mut c)?);
        }
        Ok(())
    })
}

impl<T: Sql + ?Sized> RunReads for T {
    fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let mut runs = Vec::new();
        self.each(
            "runs",
            &format!(
                "SELECT {RUN_COLUMNS}, r.cluster_id, {CLUSTER_COLUMNS} \
                 FROM runs r LEFT JOIN clusters c ON c.id = r.cluster_id ORDER BY r.id"
            ),
            &[],
            &mut |row| {
                runs.push(run_info(&mut Cursor::new(self, "runs", row))?);
                Ok(())
            },
        )?;
        per_run(
            self,
            "run_members",
            &mut runs,
            "SELECT run_id, at, endpoint, member_id, moved_because FROM run_members ORDER BY id",
            |c| {
                Ok(ServedBy {
                    at: c.time("at")?,
                    endpoint: c.text("endpoint")?,
                    member_id: c.text("member_id")?,
                    moved_because: c.opt_text("moved_because")?,
                })
            },
            |info, by| info.members.push(by),
        )?;
        per_run(
            self,
            "history_gaps",
            &mut runs,
            "SELECT run_id, from_revision, to_revision FROM history_gaps ORDER BY from_revision",
            |c| {
                Ok(Gap {
                    from_revision: c.revision("from_revision")?,
                    to_revision: c.revision("to_revision")?,
                })
            },
            |info, gap| info.gaps.push(gap),
        )?;
        Ok(runs)
    }

    fn run_times(&self, cluster: ClusterId) -> Result<Vec<RunTime>, StoreError> {
        let mut out = Vec::new();
        self.each(
            "runs",
            "SELECT head_revision, started_at, finished_at, kind \
             FROM runs WHERE cluster_id = $1 AND status = 'complete' AND head_revision IS NOT NULL ORDER BY id",
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "runs", row);
                out.push(RunTime {
                    head: c.revision("head_revision")?,
                    started_at: c.time("started_at")?,
                    finished_at: c.opt_time("finished_at")?,
                    kind: c.parsed("kind", RunKind::parse)?.ok_or_else(|| c.damage("kind", "NULL"))?,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn restores(&self, cluster: ClusterId) -> Result<Vec<(RunId, Restore)>, StoreError> {
        let mut restores = Vec::new();
        self.each(
            "runs",
            "SELECT id, restored FROM runs WHERE cluster_id = $1 AND restored IS NOT NULL ORDER BY id",
            &[Cell::from(cluster)],
            &mut |row| {
                let mut c = Cursor::new(self, "runs", row);
                let id = RunId(c.int("id")?);
                if let Some(restore) = run_json(&mut c, "restored")? {
                    restores.push((id, restore));
                }
                Ok(())
            },
        )?;
        Ok(restores)
    }

    fn encryption_policy(&self, cluster: ClusterId) -> Result<Option<(Policy, Revision)>, StoreError> {
        let policy = first_row(
            self,
            "runs",
            "SELECT encryption_policy, head_revision FROM runs \
             WHERE cluster_id = $1 AND status = 'complete' AND encryption_policy IS NOT NULL \
             AND head_revision IS NOT NULL ORDER BY id DESC LIMIT 1",
            &[Cell::from(cluster)],
            |c| Ok(run_json(c, "encryption_policy")?.zip(Some(c.revision("head_revision")?))),
        )?;
        Ok(policy.flatten())
    }
}

/// A fact as JSON text.
fn json(value: &impl serde::Serialize) -> Cell {
    Cell::Text(serde_json::to_string(value).expect("a run fact serializes"))
}

/// The statement that records `fact` of run `$1`, and its other values.
fn fact_statement(fact: RunFact<'_>) -> (&'static str, Vec<Cell>) {
    let text = |t: &str| Cell::Text(t.to_string());
    match fact {
        RunFact::Schema(s) => ("UPDATE runs SET schema = $2 WHERE id = $1", vec![text(s)]),
        RunFact::EtcdVersion(v) => ("UPDATE runs SET etcd_version = $2 WHERE id = $1", vec![text(v)]),
        RunFact::Fetched(how) => ("UPDATE runs SET fetched = $2 WHERE id = $1", vec![text(how)]),
        RunFact::Salvage(damage) => ("UPDATE runs SET salvage = $2 WHERE id = $1", vec![json(damage)]),
        RunFact::Restored(restore) => ("UPDATE runs SET restored = $2 WHERE id = $1", vec![json(restore)]),
        RunFact::Wal(wal) => ("UPDATE runs SET wal = $2 WHERE id = $1", vec![json(wal)]),
        RunFact::EncryptionPolicy(policy) => (
            "UPDATE runs SET encryption_policy = $2 WHERE id = $1",
            vec![json(policy)],
        ),
        RunFact::Target {
            cluster,
            head,
            compact,
            history_from,
        } => (
            "UPDATE runs SET cluster_id = $2, head_revision = $3, compact_revision = $4, \
             history_from = coalesce(history_from, $5) WHERE id = $1",
            vec![Cell::from(cluster), head.into(), compact.into(), history_from.into()],
        ),
        RunFact::File {
            size,
            sha256,
            first,
            last,
        } => (
            "UPDATE runs SET file_size = $2, file_sha256 = $3, file_first_revision = $4, file_last_revision = $5 \
             WHERE id = $1",
            vec![
                Cell::Int(i64::try_from(size).unwrap_or(i64::MAX)),
                text(sha256),
                first.map_or(Cell::Null, Cell::from),
                last.map_or(Cell::Null, Cell::from),
            ],
        ),
        RunFact::Coverage(from) => ("UPDATE runs SET covered_from = $2 WHERE id = $1", vec![from.into()]),
        RunFact::CompleteThrough(revision) => (
            "UPDATE runs SET complete_through = $2, head_revision = $2 WHERE id = $1",
            vec![revision.into()],
        ),
        RunFact::Gap { cluster, gap } => (
            "INSERT INTO history_gaps (run_id, cluster_id, from_revision, to_revision) VALUES ($1, $2, $3, $4)",
            vec![Cell::from(cluster), gap.from_revision.into(), gap.to_revision.into()],
        ),
        // Connecting again to the member that serves is no move.
        RunFact::Served(by) => (
            "INSERT INTO run_members (run_id, at, endpoint, member_id, moved_because) \
             SELECT $1, $2, $3, $4, CAST($5 AS text) \
             WHERE CAST($5 AS text) IS NOT NULL OR NOT EXISTS (SELECT 1 FROM run_members WHERE id = \
             (SELECT max(id) FROM run_members WHERE run_id = $1) AND endpoint = $3 AND member_id = $4)",
            vec![
                Cell::from(by.at),
                text(&by.endpoint),
                text(&by.member_id),
                by.moved_because.as_deref().map_or(Cell::Null, text),
            ],
        ),
    }
}

impl<T: Sql + HashKeyLoad + ?Sized> RunWrites for T {
    fn begin_run(
        &self,
        kind: RunKind,
        source: &str,
        prefix: &str,
        filter: &str,
    ) -> Result<RunId, StoreError> {
        let key = self.hash_key()?.id();
        let id = one_row(
            self,
            "runs",
            "INSERT INTO runs (kind, source, prefix, resource_filter, started_at, status, tool_version, pid, hash_key) \
             VALUES ($8, $1, $2, $3, $4, 'running', $5, $6, $7) RETURNING id",
            &[
                Cell::Text(source.to_string()),
                Cell::Text(prefix.to_string()),
                Cell::Text(filter.to_string()),
                Cell::from(Timestamp::now()),
                Cell::Text(env!("CARGO_PKG_VERSION").to_string()),
                Cell::Int(i64::from(std::process::id())),
                Cell::Text(key),
                Cell::Text(kind.as_str().to_string()),
            ],
            |c| c.int("id"),
        )?;
        Ok(RunId(id))
    }

    fn record(&self, run: RunId, fact: RunFact<'_>) -> Result<(), StoreError> {
        let (sql, values) = fact_statement(fact);
        let mut params = vec![Cell::Int(run.0)];
        params.extend(values);
        self.execute(sql, &params)?;
        Ok(())
    }

    /// A run whose connection was lost still says how it ended.
    fn finish_run(
        &self,
        run: RunId,
        status: RunStatus,
        keys_seen: i64,
        error: Option<&str>,
    ) -> Result<i64, StoreError> {
        self.reconnect_if_lost()?;
        let added = one_row(
            self,
            "revisions",
            "SELECT count(*) FROM revisions WHERE run_id = $1",
            &[Cell::Int(run.0)],
            |c| c.int("count"),
        )?;
        self.execute(
            "UPDATE runs SET status = $2, finished_at = $3, keys_seen = $4, revisions_added = $5, error = $6, \
             complete_through = CASE WHEN $2 = 'complete' THEN head_revision ELSE complete_through END WHERE id = $1",
            &[
                Cell::Int(run.0),
                Cell::Text(status.as_str().to_string()),
                Cell::from(Timestamp::now()),
                Cell::Int(keys_seen),
                Cell::Int(added),
                error.map_or(Cell::Null, |e| Cell::Text(e.to_string())),
            ],
        )?;
        self.loaded(u64::try_from(added).unwrap_or(0), 0)?;
        Ok(added)
    }

    fn previous_head(
        &self,
        cluster: ClusterId,
        prefix: &str,
        filter: &str,
        everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        first_row(
            self,
            "runs",
            "SELECT complete_through, coalesce(covered_from, history_from, 1), id, compact_revision FROM runs \
             WHERE cluster_id = $1 AND prefix = $2 AND coalesce(resource_filter, $4) = $3 \
             AND complete_through IS NOT NULL ORDER BY complete_through DESC LIMIT 1",
            &[
                Cell::from(cluster),
                Cell::Text(prefix.to_string()),
                Cell::Text(filter.to_string()),
                Cell::Text(everything.to_string()),
            ],
            |c| {
                Ok(Previous {
                    head: c.revision("complete_through")?,
                    covered_from: c.revision("covered_from")?,
                    run: RunId(c.int("id")?),
                    compact: c.opt_revision("compact_revision")?,
                })
            },
        )
    }

    fn live_keys(&self, cluster: ClusterId, prefix: &[u8], head: Revision) -> Result<i64, StoreError> {
        let mut end = prefix.to_vec();
        end.push(0xff);
        one_row(
            self,
            "keys",
            "SELECT count(*) FROM keys k WHERE k.cluster_id = $1 AND k.key >= $2 AND k.key < $3 AND \
             (SELECT CASE WHEN r.deleted THEN 1 ELSE 0 END FROM revisions r \
              WHERE r.key_id = k.id AND r.mod_revision <= $4 ORDER BY r.mod_revision DESC LIMIT 1) = 0",
            &[
                Cell::from(cluster),
                Cell::Bytes(prefix.to_vec()),
                Cell::Bytes(end),
                head.into(),
            ],
            |c| c.int("count"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::recorder::HashKeyLoad;
    use crate::store::sqlite::Store;

    /// `runs` over a database whose run row holds `set`.
    fn runs_with(set: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let store = Store::open_for_writing(&path).unwrap();
        store.load_hash_key(&Default::default()).unwrap();
        store
            .begin_run(crate::store::RunKind::Live, "test", "/registry/", "")
            .unwrap();
        assert_eq!(store.runs().unwrap()[0].status, RunStatus::Running);
        crate::store::sqlite::damage(&path, &format!("UPDATE runs SET {set}"));
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

//! Moving runs between databases (`copy`): a SQLite file taken on a laptop
//! into the fleet's PostgreSQL, or back. Row ids differ between databases,
//! so every reference is mapped: clusters by etcd's cluster id, keys by
//! cluster and key, contents by hash, field paths by path, audit requests
//! by audit id; field-hash blobs name paths by id, so they are rewritten
//! with the target's ids and compressed again against the target's base.
//! What the target holds already is left as it is, so copying twice adds
//! nothing. The copy is one transaction of the target: one that fails
//! leaves it as it was. A source row that is not what its table holds (a
//! reference to no row, a row id that is no integer) fails the copy with
//! the table and column, never a panic.

use super::cluster::ClusterName;
use super::field_blob;
use super::tables::{at, columns, Cell, RowFilter};
use super::{Backend, StoreError};
use crate::ingest::blob::{pack, unpack, ZSTD};
use std::collections::{HashMap, HashSet};

/// Rows read from the source per page.
const BATCH: usize = 5000;
/// Contents remembered as present in the target before the memory is
/// dropped (bounds memory; a forgotten one is looked up again).
const KNOWN_CONTENTS: usize = 200_000;

/// Which runs to copy.
#[derive(Clone, Debug, Default)]
pub struct CopyWhich {
    /// Only runs of these clusters (row ids in the source).
    pub clusters: Option<Vec<i64>>,
    /// Only these runs (ids in the source).
    pub runs: Option<Vec<i64>>,
}

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    pub runs: u64,
    /// Runs the target held already.
    pub runs_present: u64,
    pub revisions: u64,
    pub contents: u64,
    pub findings: u64,
    pub audit_requests: u64,
    /// Clusters whose findings were not copied because the target has
    /// findings of its own for them (`analyze` the target).
    pub clusters_to_analyze: Vec<String>,
}

/// What [`Copy::stream`] does with each row.
type EachRow<'c, 'a> = dyn FnMut(&mut Copy<'a>, Vec<Cell>) -> Result<(), StoreError> + 'c;

/// A copy in progress: the maps from source to target ids.
struct Copy<'a> {
    from: &'a dyn Backend,
    to: &'a dyn Backend,
    clusters: HashMap<i64, i64>,
    runs: HashMap<i64, i64>,
    keys: HashMap<i64, i64>,
    paths: HashMap<i64, i64>,
    /// Field path ids that are the same in both databases.
    same_paths: bool,
    /// Content hashes known to be in the target.
    contents: HashSet<Vec<u8>>,
    copied: Copied,
}

/// Copies the runs `which` chooses from `from` into `to`, with what they
/// stored and what was learnt of their clusters (findings, audit requests,
/// the clock).
pub fn copy(from: &dyn Backend, to: &dyn Backend, which: &CopyWhich) -> Result<Copied, StoreError> {
    let mut c = Copy {
        from,
        to,
        clusters: HashMap::new(),
        runs: HashMap::new(),
        keys: HashMap::new(),
        paths: HashMap::new(),
        same_paths: true,
        contents: HashSet::new(),
        copied: Copied::default(),
    };
    to.begin_rows()?;
    match c.run_all(which) {
        Ok(()) => {
            to.commit_rows()?;
            to.loaded(c.copied.revisions, c.copied.audit_requests)?;
            Ok(c.copied)
        }
        Err(e) => {
            to.rollback_rows();
            Err(e)
        }
    }
}

impl<'a> Copy<'a> {
    fn run_all(&mut self, which: &CopyWhich) -> Result<(), StoreError> {
        self.settings()?;
        self.field_paths()?;
        let runs = self.chosen_runs(which)?;
        let clusters: Vec<i64> = {
            let mut ids: Vec<i64> = runs
                .iter()
                .filter_map(|r| r[at("runs", "cluster_id") + 1].int())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        };
        for &cluster in &clusters {
            self.cluster(cluster)?;
        }
        let mut new_runs = Vec::new();
        for run in &runs {
            if self.run(run)? {
                new_runs.push(int(self.from, "runs.id", &run[0])?);
            }
        }
        self.keys(&clusters)?;
        if !new_runs.is_empty() {
            self.per_run("history_gaps", &new_runs)?;
            self.per_run("run_members", &new_runs)?;
            self.revisions(&new_runs)?;
        }
        // Findings are of a cluster, not of a run: copied with its first
        // new runs.
        for &cluster in &clusters {
            let added = runs.iter().any(|r| {
                r[at("runs", "cluster_id") + 1].int() == Some(cluster)
                    && r[0].int().is_some_and(|id| new_runs.contains(&id))
            });
            if added {
                self.findings(cluster)?;
            }
        }
        self.audit(&clusters)?;
        for table in ["clock_marks", "clock_envelope"] {
            self.per_cluster(table, &clusters)?;
        }
        Ok(())
    }

    /// Reads `table`'s rows from the source in pages and hands each to
    /// `each` with the copy, so memory stays bounded however many rows.
    fn stream(
        &mut self,
        table: &str,
        cols: &[&str],
        filter: RowFilter,
        order: &str,
        each: &mut EachRow<'_, 'a>,
    ) -> Result<(), StoreError> {
        let from = self.from;
        let mut page: Vec<Vec<Cell>> = Vec::new();
        from.each_row(table, cols, &filter, order, &mut |r| {
            page.push(r.to_vec());
            if page.len() >= BATCH {
                for row in std::mem::take(&mut page) {
                    each(self, row)?;
                }
            }
            Ok(())
        })?;
        for row in page {
            each(self, row)?;
        }
        Ok(())
    }

    fn conflict(&self, message: String) -> StoreError {
        StoreError::Conflict {
            path: self.to.location().to_path_buf(),
            message,
        }
    }

    /// The target refused a row of `table` without holding one like it.
    fn refused(&self, table: &str) -> StoreError {
        self.conflict(format!("refused a row of {table} it does not hold"))
    }

    /// How field hashes are taken must agree (the target takes the
    /// source's when it has none).
    fn settings(&mut self) -> Result<(), StoreError> {
        let mut rows = Vec::new();
        self.from.each_row(
            "settings",
            columns("settings"),
            &RowFilter::All,
            "name",
            &mut |r| {
                rows.push(r.to_vec());
                Ok(())
            },
        )?;
        for row in rows {
            let name = row[0].text().unwrap_or_default().to_string();
            if !matches!(name.as_str(), "field_depth" | "sensitive_paths") {
                continue;
            }
            let mut theirs = None;
            self.to.each_row(
                "settings",
                &["value"],
                &RowFilter::Eq("name", row[0].clone()),
                "name",
                &mut |r| {
                    theirs = Some(r[0].clone());
                    Ok(())
                },
            )?;
            match theirs {
                None => {
                    self.to.insert_row("settings", columns("settings"), &row, false)?;
                }
                Some(v) if v == row[1] => {}
                Some(_) => {
                    return Err(self.conflict(format!(
                        "takes field hashes with another {name} than {}: their hashes would not compare",
                        self.from.location().display()
                    )))
                }
            }
        }
        Ok(())
    }

    fn field_paths(&mut self) -> Result<(), StoreError> {
        let mut source = Vec::new();
        let from = self.from;
        from.each_row("field_paths", &["id", "path"], &RowFilter::All, "id", &mut |r| {
            source.push((int(from, "field_paths.id", &r[0])?, r[1].clone()));
            Ok(())
        })?;
        for (id, path) in source {
            let values = [path];
            let to = match self.to.insert_row("field_paths", &["path"], &values, true)? {
                Some(to) => to,
                None => self
                    .to
                    .find_id("field_paths", &["path"], &values)?
                    .ok_or_else(|| self.refused("field_paths"))?,
            };
            self.same_paths &= to == id;
            self.paths.insert(id, to);
        }
        Ok(())
    }

    /// The runs to copy, each row `id` then [`columns`]`("runs")`; runs
    /// still running are left out.
    fn chosen_runs(&self, which: &CopyWhich) -> Result<Vec<Vec<Cell>>, StoreError> {
        let filter = match (&which.runs, &which.clusters) {
            (Some(runs), _) => RowFilter::In("id", runs.clone()),
            (None, Some(clusters)) => RowFilter::In("cluster_id", clusters.clone()),
            (None, None) => RowFilter::All,
        };
        let mut cols = vec!["id"];
        cols.extend(columns("runs"));
        let mut runs = Vec::new();
        self.from.each_row("runs", &cols, &filter, "id", &mut |r| {
            let status = r[at("runs", "status") + 1].text().unwrap_or_default();
            if status != "running" && !r[at("runs", "cluster_id") + 1].eq(&Cell::Null) {
                runs.push(r.to_vec());
            }
            Ok(())
        })?;
        if let Some(wanted) = &which.runs {
            for id in wanted {
                if !runs.iter().any(|r| r[0].int() == Some(*id)) {
                    return Err(StoreError::Conflict {
                        path: self.from.location().to_path_buf(),
                        message: format!("has no finished run {id} to copy (see `runs`)"),
                    });
                }
            }
        }
        Ok(runs)
    }

    /// Maps a source cluster to the target's (created when new, with the
    /// source's name when the target gives it none), taking the target's
    /// write lock of it as a run does.
    fn cluster(&mut self, cluster: i64) -> Result<(), StoreError> {
        let found = self.from.clusters()?.into_iter().find(|c| c.row.0 == cluster);
        let source = found.ok_or_else(|| StoreError::Damaged {
            path: self.from.location().to_path_buf(),
            what: format!("runs.cluster_id: no cluster {cluster}"),
        })?;
        let (to, _) = self.to.cluster(&source.etcd_cluster_id, None)?;
        let unnamed = self
            .to
            .clusters()?
            .iter()
            .any(|c| c.row == to && c.name.is_none());
        if let (true, Some(name)) = (unnamed, &source.name) {
            self.to
                .cluster(&source.etcd_cluster_id, Some::<&ClusterName>(name))?;
        }
        self.clusters.insert(cluster, to.0);
        Ok(())
    }

    /// Copies one run unless the target holds it (the same cluster,
    /// source, process, times, head and counts): whether it was copied.
    fn run(&mut self, run: &[Cell]) -> Result<bool, StoreError> {
        let cols = columns("runs");
        let mut values = run[1..].to_vec();
        let cluster = at("runs", "cluster_id");
        values[cluster] = Cell::Int(mapped(
            self.from,
            &self.clusters,
            "runs.cluster_id",
            &values[cluster],
        )?);
        let id = int(self.from, "runs.id", &run[0])?;
        let identity = [
            "cluster_id",
            "source",
            "pid",
            "started_at",
            "finished_at",
            "head_revision",
            "keys_seen",
            "revisions_added",
        ];
        let key: Vec<Cell> = identity.iter().map(|c| values[at("runs", c)].clone()).collect();
        if let Some(to) = self.to.find_id("runs", &identity, &key)? {
            self.runs.insert(id, to);
            self.copied.runs_present += 1;
            return Ok(false);
        }
        let to = self
            .to
            .insert_row("runs", cols, &values, true)?
            .ok_or_else(|| self.refused("runs"))?;
        self.runs.insert(id, to);
        self.copied.runs += 1;
        Ok(true)
    }

    fn keys(&mut self, clusters: &[i64]) -> Result<(), StoreError> {
        let mut cols = vec!["id"];
        cols.extend(columns("keys"));
        self.stream(
            "keys",
            &cols,
            RowFilter::In("cluster_id", clusters.to_vec()),
            "id",
            &mut |c, r| {
                let mut values = r[1..].to_vec();
                values[0] = Cell::Int(mapped(c.from, &c.clusters, "keys.cluster_id", &values[0])?);
                let to = match c.to.insert_row("keys", columns("keys"), &values, true)? {
                    Some(to) => to,
                    None => {
                        c.to.find_id("keys", &["cluster_id", "key"], &values[..2])?
                            .ok_or_else(|| c.refused("keys"))?
                    }
                };
                c.keys.insert(int(c.from, "keys.id", &r[0])?, to);
                Ok(())
            },
        )
    }

    /// Copies a run-level table's rows of the runs copied.
    fn per_run(&mut self, table: &'static str, runs: &[i64]) -> Result<(), StoreError> {
        let cols = columns(table);
        self.stream(
            table,
            cols,
            RowFilter::In("run_id", runs.to_vec()),
            "id",
            &mut |c, mut values| {
                let run = at(table, "run_id");
                values[run] = Cell::Int(mapped(c.from, &c.runs, &format!("{table}.run_id"), &values[run])?);
                if let Some(i) = cols.iter().position(|col| *col == "cluster_id") {
                    values[i] = Cell::Int(mapped(
                        c.from,
                        &c.clusters,
                        &format!("{table}.cluster_id"),
                        &values[i],
                    )?);
                }
                c.to.insert_row(table, cols, &values, false)?;
                Ok(())
            },
        )
    }

    /// Copies the revisions the copied runs stored, with their contents.
    fn revisions(&mut self, runs: &[i64]) -> Result<(), StoreError> {
        let (key, run, semantic, cluster) = (
            at("revisions", "key_id"),
            at("revisions", "run_id"),
            at("revisions", "semantic_sha256"),
            at("revisions", "cluster_id"),
        );
        self.stream(
            "revisions",
            columns("revisions"),
            RowFilter::In("run_id", runs.to_vec()),
            "key_id, mod_revision",
            &mut |c, mut values| {
                values[key] = Cell::Int(mapped(c.from, &c.keys, "revisions.key_id", &values[key])?);
                values[run] = Cell::Int(mapped(c.from, &c.runs, "revisions.run_id", &values[run])?);
                values[cluster] = Cell::Int(mapped(
                    c.from,
                    &c.clusters,
                    "revisions.cluster_id",
                    &values[cluster],
                )?);
                if let Cell::Bytes(hash) = &values[semantic] {
                    let hash = hash.clone();
                    c.content(&hash)?;
                }
                if c.to
                    .insert_row("revisions", columns("revisions"), &values, false)?
                    .is_some()
                {
                    c.copied.revisions += 1;
                }
                Ok(())
            },
        )
    }

    /// Makes sure the target holds the content with `hash` (and its base):
    /// its target id.
    fn content(&mut self, hash: &[u8]) -> Result<Option<i64>, StoreError> {
        if self.contents.contains(hash) {
            return Ok(None);
        }
        let by_hash = [Cell::Bytes(hash.to_vec())];
        if let Some(id) = self.to.find_id("semantic_values", &["hash"], &by_hash)? {
            self.remember(hash);
            return Ok(Some(id));
        }
        let mut cols = vec!["id"];
        cols.extend(columns("semantic_values"));
        let mut row = None;
        self.from.each_row(
            "semantic_values",
            &cols,
            &RowFilter::Eq("hash", by_hash[0].clone()),
            "id",
            &mut |r| {
                row = Some(r.to_vec());
                Ok(())
            },
        )?;
        let Some(row) = row else {
            return Err(StoreError::Damaged {
                path: self.from.location().to_path_buf(),
                what: format!(
                    "revisions.semantic_sha256: no stored content {}",
                    crate::hex::hex(hash)
                ),
            });
        };
        let values = self.repacked(&row)?;
        let id = self
            .to
            .insert_row("semantic_values", columns("semantic_values"), &values, true)?
            .ok_or_else(|| self.refused("semantic_values"))?;
        self.copied.contents += 1;
        self.remember(hash);
        Ok(Some(id))
    }

    fn remember(&mut self, hash: &[u8]) {
        if self.contents.len() >= KNOWN_CONTENTS {
            self.contents.clear();
        }
        self.contents.insert(hash.to_vec());
    }

    /// A source content row (`id` first) as the target stores it: its base
    /// copied first and referred to by the target's id, its blobs
    /// compressed against the target's base, its field ids the target's.
    fn repacked(&mut self, row: &[Cell]) -> Result<Vec<Cell>, StoreError> {
        let col = |name| at("semantic_values", name) + 1;
        let codec = row[col("codec")].text().unwrap_or(ZSTD).to_string();
        let mut values = row[1..].to_vec();
        let damaged = |what: String| StoreError::Damaged {
            path: self.from.location().to_path_buf(),
            what: format!("semantic_values: {what}"),
        };
        let remap = |c: &Copy, plain: &[u8]| -> Result<Vec<u8>, StoreError> {
            if c.same_paths {
                return Ok(plain.to_vec());
            }
            field_blob::remap(plain, &|id| c.paths.get(&id).copied()).map_err(|e| StoreError::Damaged {
                path: c.from.location().to_path_buf(),
                what: format!("semantic_values.fields: {e}"),
            })
        };
        if codec != ZSTD {
            // Written before zstd: blobs alone, fields raw.
            if let Some(fields) = row[col("fields")].bytes() {
                values[col("fields") - 1] = Cell::Bytes(remap(self, fields)?);
            }
            return Ok(values);
        }
        let base_id = row[col("base")].int();
        let blobs = ["canonical", "fields", "managed"];
        // The source's base blobs, compressed, to decompress this row's.
        let source_base: Option<Vec<Cell>> = match base_id {
            None => None,
            Some(b) => {
                let mut found = None;
                let mut cols = vec!["hash"];
                cols.extend(blobs);
                self.from.each_row(
                    "semantic_values",
                    &cols,
                    &RowFilter::Eq("id", Cell::Int(b)),
                    "id",
                    &mut |r| {
                        found = Some(r.to_vec());
                        Ok(())
                    },
                )?;
                Some(found.ok_or_else(|| damaged(format!("base {b} is not stored")))?)
            }
        };
        let target_base = match &source_base {
            None => None,
            Some(base) => {
                let hash = base[0].bytes().unwrap_or_default().to_vec();
                let id = match self.content(&hash)? {
                    Some(id) => id,
                    None => self
                        .to
                        .find_id("semantic_values", &["hash"], &[Cell::Bytes(hash.clone())])?
                        .ok_or_else(|| damaged("a base vanished from the target".into()))?,
                };
                let mut found = None;
                self.to.each_row(
                    "semantic_values",
                    &blobs,
                    &RowFilter::Eq("id", Cell::Int(id)),
                    "id",
                    &mut |r| {
                        found = Some(r.to_vec());
                        Ok(())
                    },
                )?;
                Some((
                    id,
                    found.ok_or_else(|| damaged("a base vanished from the target".into()))?,
                ))
            }
        };
        values[col("base") - 1] = target_base.as_ref().map_or(Cell::Null, |(id, _)| Cell::Int(*id));
        for (i, name) in blobs.iter().enumerate() {
            let Some(bytes) = row[col(name)].bytes() else {
                continue;
            };
            let io = |e: std::io::Error| damaged(format!("{name}: {e}"));
            let plain =
                unpack(ZSTD, bytes, source_base.as_ref().and_then(|b| b[i + 1].bytes())).map_err(io)?;
            let plain = if *name == "fields" {
                remap(self, &plain)?
            } else {
                plain
            };
            let dict = match &target_base {
                Some((_, base)) => match base[i].bytes() {
                    Some(b) => unpack(ZSTD, b, None).map_err(io)?,
                    None => Vec::new(),
                },
                None => Vec::new(),
            };
            values[col(name) - 1] = Cell::Bytes(pack(&plain, &dict));
        }
        Ok(values)
    }

    /// Copies a cluster's findings, unless the target has findings of
    /// that cluster already (its own analysis, to be run again).
    fn findings(&mut self, cluster: i64) -> Result<(), StoreError> {
        let to = self.clusters[&cluster];
        if self
            .to
            .find_id("findings", &["cluster_id"], &[Cell::Int(to)])?
            .is_some()
        {
            let mut name = String::new();
            self.from.each_row(
                "clusters",
                &["etcd_cluster_id", "name"],
                &RowFilter::Eq("id", Cell::Int(cluster)),
                "id",
                &mut |r| {
                    name = r[1].text().or(r[0].text()).unwrap_or_default().to_string();
                    Ok(())
                },
            )?;
            self.copied.clusters_to_analyze.push(name);
            return Ok(());
        }
        let cols = columns("findings");
        self.stream(
            "findings",
            cols,
            RowFilter::Eq("cluster_id", Cell::Int(cluster)),
            "id",
            &mut |c, mut values| {
                values[0] = Cell::Int(to);
                c.to.insert_row("findings", cols, &values, false)?;
                c.copied.findings += 1;
                Ok(())
            },
        )
    }

    /// Copies the clusters' audit requests and whom they attribute
    /// revisions to.
    fn audit(&mut self, clusters: &[i64]) -> Result<(), StoreError> {
        let cols = columns("audit_requests");
        let mut with_id = vec!["id"];
        with_id.extend(cols);
        let mut requests = HashMap::new();
        let filter = RowFilter::In("cluster_id", clusters.to_vec());
        self.stream("audit_requests", &with_id, filter, "id", &mut |c, row| {
            let mut values = row[1..].to_vec();
            values[0] = Cell::Int(mapped(
                c.from,
                &c.clusters,
                "audit_requests.cluster_id",
                &values[0],
            )?);
            let key = at("audit_requests", "key_id");
            if let Some(k) = values[key].int() {
                values[key] = c.keys.get(&k).map_or(Cell::Null, |&to| Cell::Int(to));
            }
            let to = match c.to.insert_row("audit_requests", cols, &values, true)? {
                Some(to) => {
                    c.copied.audit_requests += 1;
                    to
                }
                None => {
                    c.to.find_id("audit_requests", &["cluster_id", "audit_id"], &values[..2])?
                        .ok_or_else(|| c.refused("audit_requests"))?
                }
            };
            requests.insert(int(c.from, "audit_requests.id", &row[0])?, to);
            Ok(())
        })?;
        let cols = columns("revision_writers");
        let filter = RowFilter::KeysOfClusters(clusters.to_vec());
        self.stream(
            "revision_writers",
            cols,
            filter,
            "key_id, mod_revision",
            &mut |c, mut values| {
                values[0] = Cell::Int(mapped(c.from, &c.keys, "revision_writers.key_id", &values[0])?);
                values[2] = Cell::Int(mapped(
                    c.from,
                    &requests,
                    "revision_writers.request_id",
                    &values[2],
                )?);
                c.to.insert_row("revision_writers", cols, &values, false)?;
                Ok(())
            },
        )
    }

    /// Copies a cluster-level table's rows of the clusters.
    fn per_cluster(&mut self, table: &'static str, clusters: &[i64]) -> Result<(), StoreError> {
        let cols = columns(table);
        self.stream(
            table,
            cols,
            RowFilter::In("cluster_id", clusters.to_vec()),
            "revision",
            &mut |c, mut values| {
                values[0] = Cell::Int(mapped(
                    c.from,
                    &c.clusters,
                    &format!("{table}.cluster_id"),
                    &values[0],
                )?);
                c.to.insert_row(table, cols, &values, false)?;
                Ok(())
            },
        )
    }
}

/// A damaged source, with what is wrong (`table.column: ...`).
fn damaged(from: &dyn Backend, what: String) -> StoreError {
    StoreError::Damaged {
        path: from.location().to_path_buf(),
        what,
    }
}

/// A source row id in `column`: a cell that holds none is a damaged source.
fn int(from: &dyn Backend, column: &str, cell: &Cell) -> Result<i64, StoreError> {
    cell.int()
        .ok_or_else(|| damaged(from, format!("{column}: {cell:?} is not a row id")))
}

/// The target's id of the source row `column` refers to: a reference to a
/// row the copy has not met (the source does not hold it) is a damaged
/// source, never a guess.
fn mapped(from: &dyn Backend, map: &HashMap<i64, i64>, column: &str, cell: &Cell) -> Result<i64, StoreError> {
    let id = int(from, column, cell)?;
    map.get(&id).copied().ok_or_else(|| {
        damaged(
            from,
            format!("{column}: refers to row {id}, which the source does not hold"),
        )
    })
}

//! What a cluster stores and what it costs (`stats`): per resource, per key
//! (largest, busiest), per field manager and per namespace, over the stored
//! revisions a [`Scope`] keeps, computed in SQL written once over [`Sql`].
//!
//! The revisions in scope, with their key's cluster and names and whether
//! each is its key's newest in scope and not a tombstone (`live`), are
//! gathered once into a temporary table (`scoped_rows`), which every
//! aggregate then reads: each scanned and joined the whole history before.
//! Every aggregate is per cluster, labelled with the cluster's name.

use super::reader::{ClusterReads, UsageReads};
use super::sql::{scope_cells, Sql, Typed};
use super::tables::Cell;
use super::{ClusterId, Scope, StoreError};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// One resource (and group).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ResourceUsage {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub group: String,
    pub resource: String,
    /// Live at the newest stored revision in scope.
    pub objects: i64,
    pub revisions: i64,
    pub bytes_live: i64,
    pub bytes_all_revisions: i64,
    /// Revisions per encoding (`protobuf`, `json`, `cbor`, `encrypted`, ...).
    pub encodings: BTreeMap<String, i64>,
    /// Revisions (not tombstones) per provider and key, `identity` for plaintext.
    pub encryption: BTreeMap<String, i64>,
    /// Revisions per change class (`unclassified` before `analyze`).
    pub writes: BTreeMap<String, i64>,
}

/// A key by the bytes of its stored revisions.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct LargestKey {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub key: String,
    pub bytes_all_revisions: i64,
    pub revisions: i64,
    pub latest_size: i64,
}

/// A key by its stored revisions, with the writes that changed nothing.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BusiestKey {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub key: String,
    pub revisions: i64,
    /// Rewrites and encoding-only writes.
    pub changed_nothing: i64,
    pub changed_nothing_share: f64,
}

/// Writes a field manager made to one resource.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ManagerUsage {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub manager: String,
    pub group: String,
    pub resource: String,
    /// Revisions in which an entry of this manager changed.
    pub writes: i64,
    /// Of them, writes that changed only metadata.
    pub metadata_only: i64,
    /// Of them, writes that changed only managedFields and fields named
    /// like times (`renewTime`, `lastTransitionTime`, ...).
    pub timestamps_only: i64,
}

/// One namespace's totals (`-` for cluster-scoped objects).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct NamespaceUsage {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    pub namespace: String,
    pub objects: i64,
    pub revisions: i64,
    pub bytes_live: i64,
    pub bytes_all_revisions: i64,
}

/// What one requester (a user, or a user agent) sent, from the audit logs
/// `attribute` read.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct RequesterUsage {
    /// The cluster's name, or etcd's cluster id when it has none.
    pub cluster: String,
    /// The user or the user agent (`-` when the log named none).
    pub name: String,
    /// Stored revisions in scope attributed to its requests.
    pub writes: i64,
    /// Successful updates and patches of objects in scope that wrote nothing.
    pub no_op_writes: i64,
    /// Of its failed writes to objects in scope, those refused with 409
    /// Conflict.
    pub conflicts: i64,
    /// Writes to objects in scope that failed (4xx, 5xx).
    pub failed: i64,
}

/// Everything `stats` shows.
#[derive(Clone, Debug, Serialize)]
pub struct Usage {
    pub resources: Vec<ResourceUsage>,
    pub largest: Vec<LargestKey>,
    pub busiest: Vec<BusiestKey>,
    pub managers: Vec<ManagerUsage>,
    pub namespaces: Vec<NamespaceUsage>,
    /// Per user, from the audit logs (empty before `attribute`).
    pub users: Vec<RequesterUsage>,
    /// Per user agent, likewise.
    pub user_agents: Vec<RequesterUsage>,
}

/// The last segments of field paths whose change is a clock ticking.
const TIME_FIELDS: &[&str] = &[
    "managedFields",
    "renewTime",
    "acquireTime",
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastProbeTime",
    "lastUpdateTime",
    "lastTimestamp",
    "firstTimestamp",
    "eventTime",
    "lastScheduleTime",
    "lastSuccessfulTime",
    "time",
];

/// Resources as `stats` lists them: most bytes first, then by resource and
/// cluster.
fn sort_resources(resources: &mut [ResourceUsage]) {
    resources.sort_by(|a, b| {
        b.bytes_all_revisions
            .cmp(&a.bytes_all_revisions)
            .then(a.resource.cmp(&b.resource))
            .then(a.cluster.cmp(&b.cluster))
    });
}

/// Requests counted per user and per user agent of each cluster, as a
/// backend's rows add them.
#[derive(Default)]
struct Requesters {
    users: BTreeMap<(String, String), RequesterUsage>,
    agents: BTreeMap<(String, String), RequesterUsage>,
}

impl Requesters {
    /// Adds one row's writes, no-op writes, conflicts and failures
    /// (`counts`, in that order) to its user and its user agent.
    pub fn add(&mut self, cluster: &str, user: String, agent: Option<String>, counts: [i64; 4]) {
        for (map, name) in [
            (&mut self.users, user),
            (&mut self.agents, agent.unwrap_or_else(|| "-".into())),
        ] {
            let entry = map
                .entry((cluster.to_string(), name.clone()))
                .or_insert_with(|| RequesterUsage {
                    cluster: cluster.to_string(),
                    name,
                    ..Default::default()
                });
            entry.writes += counts[0];
            entry.no_op_writes += counts[1];
            entry.conflicts += counts[2];
            entry.failed += counts[3];
        }
    }

    /// The `top` busiest users and user agents.
    pub fn busiest(self, top: u32) -> (Vec<RequesterUsage>, Vec<RequesterUsage>) {
        let busiest = |map: BTreeMap<(String, String), RequesterUsage>| {
            let mut list: Vec<RequesterUsage> = map.into_values().collect();
            list.sort_by(|a, b| {
                (b.writes + b.no_op_writes + b.failed, &a.name)
                    .cmp(&(a.writes + a.no_op_writes + a.failed, &b.name))
                    .then(a.cluster.cmp(&b.cluster))
            });
            list.truncate(top as usize);
            list
        };
        (busiest(self.users), busiest(self.agents))
    }
}

impl<T: Sql + ClusterReads + ?Sized> UsageReads for T {
    fn usage(&self, scope: &Scope, top: u32) -> Result<Usage, StoreError> {
        let mut usage = None;
        self.reading(&mut || {
            usage = Some(Scoped::new(self, scope)?.usage(top)?);
            Ok(())
        })?;
        Ok(usage.expect("set when reading succeeds"))
    }

    fn resource_usage(&self, scope: &Scope) -> Result<Vec<ResourceUsage>, StoreError> {
        let mut resources = Vec::new();
        self.reading(&mut || {
            resources = Scoped::new(self, scope)?.resources()?;
            Ok(())
        })?;
        Ok(resources)
    }
}

/// The rows in scope, gathered into `scoped_rows`, and the names of the
/// clusters they are of.
struct Scoped<'a, D: Sql + ?Sized> {
    db: &'a D,
    labels: HashMap<ClusterId, String>,
}

impl<'a, D: Sql + ClusterReads + ?Sized> Scoped<'a, D> {
    fn new(db: &'a D, scope: &Scope) -> Result<Self, StoreError> {
        db.temp_table_as(
            "scoped_rows",
            &format!(
                "WITH scoped AS (SELECT r.key_id, r.mod_revision, r.deleted, r.value_size, r.encoding, \
                   r.encryption, r.change_class, r.changed_paths, r.changed_by, k.key, k.cluster_id AS cluster, \
                   coalesce(k.api_group, '') AS grp, coalesce(k.resource, '-') AS res, \
                   coalesce(k.namespace, '-') AS ns \
                   FROM revisions r JOIN keys k ON k.id = r.key_id WHERE {}), \
                 newest AS (SELECT key_id, max(mod_revision) AS m FROM scoped GROUP BY key_id) \
                 SELECT s.*, (n.m IS NOT NULL AND NOT s.deleted) AS live FROM scoped s \
                 LEFT JOIN newest n ON n.key_id = s.key_id AND n.m = s.mod_revision",
                db.dialect().scope
            ),
            &scope_cells(scope),
        )?;
        let labels = db
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        Ok(Scoped { db, labels })
    }
}

impl<D: Sql + ?Sized> Scoped<'_, D> {
    fn typed(&self) -> Typed<'_> {
        self.db.typed("scoped_rows")
    }

    /// The label of the cluster whose row id is `cell`.
    fn label(&self, cell: &Cell) -> Result<String, StoreError> {
        let row = ClusterId(self.typed().int(cell, "cluster")?);
        Ok(self.labels.get(&row).cloned().unwrap_or_else(|| row.to_string()))
    }

    /// Each row of `sql` over `scoped_rows`, as `read` makes it.
    fn each<R>(
        &self,
        sql: &str,
        params: &[Cell],
        mut read: impl FnMut(&Typed<'_>, &[Cell]) -> Result<R, StoreError>,
    ) -> Result<Vec<R>, StoreError> {
        let typed = self.typed();
        let mut out = Vec::new();
        self.db.each("scoped_rows", sql, params, &mut |row| {
            out.push(read(&typed, row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Objects, revisions and bytes per cluster and resource, with their
    /// encodings, encryption and change classes.
    fn resources(&self) -> Result<Vec<ResourceUsage>, StoreError> {
        let mut resources: BTreeMap<(i64, String, String), ResourceUsage> = BTreeMap::new();
        for (key, usage) in self.each(
            "SELECT grp, res, count(*) FILTER (WHERE live), count(*), \
             CAST(coalesce(sum(CASE WHEN live THEN value_size END), 0) AS bigint), \
             CAST(coalesce(sum(value_size), 0) AS bigint), cluster FROM scoped_rows GROUP BY cluster, grp, res",
            &[],
            |t, r| {
                let (group, resource) = (t.text(&r[0], "grp")?, t.text(&r[1], "res")?);
                let key = (t.int(&r[6], "cluster")?, group.clone(), resource.clone());
                let usage = ResourceUsage {
                    cluster: self.label(&r[6])?,
                    group,
                    resource,
                    objects: t.int(&r[2], "live")?,
                    revisions: t.int(&r[3], "revisions")?,
                    bytes_live: t.int(&r[4], "value_size")?,
                    bytes_all_revisions: t.int(&r[5], "value_size")?,
                    ..ResourceUsage::default()
                };
                Ok((key, usage))
            },
        )? {
            resources.insert(key, usage);
        }
        for (column, into) in [
            ("coalesce(encoding, 'deleted')", 0usize),
            (
                "CASE WHEN deleted THEN NULL ELSE coalesce(encryption, 'identity') END",
                1,
            ),
            ("coalesce(change_class, 'unclassified')", 2),
        ] {
            let counted = self.each(
                &format!(
                    "SELECT grp, res, {column} AS label, count(*), cluster FROM scoped_rows \
                     WHERE {column} IS NOT NULL GROUP BY cluster, grp, res, label"
                ),
                &[],
                |t, r| {
                    let key = (
                        t.int(&r[4], "cluster")?,
                        t.text(&r[0], "grp")?,
                        t.text(&r[1], "res")?,
                    );
                    Ok((key, t.text(&r[2], "label")?, t.int(&r[3], "count")?))
                },
            )?;
            for (key, label, n) in counted {
                if let Some(u) = resources.get_mut(&key) {
                    let map = match into {
                        0 => &mut u.encodings,
                        1 => &mut u.encryption,
                        _ => &mut u.writes,
                    };
                    map.insert(label, n);
                }
            }
        }
        let mut resources: Vec<ResourceUsage> = resources.into_values().collect();
        sort_resources(&mut resources);
        Ok(resources)
    }

    /// Everything `stats` shows, the `top` of each per-key list.
    fn usage(&self, top: u32) -> Result<Usage, StoreError> {
        let resources = self.resources()?;
        let limit = [Cell::Int(top.into())];
        let byte_order = self.db.dialect().byte_order;
        let largest = self.each(
            "SELECT key, CAST(sum(value_size) AS bigint), count(*), \
             max(CASE WHEN live THEN value_size ELSE 0 END), cluster \
             FROM scoped_rows GROUP BY key_id, key, cluster ORDER BY 2 DESC, key, cluster LIMIT $1",
            &limit,
            |t, r| {
                Ok(LargestKey {
                    cluster: self.label(&r[4])?,
                    key: t.lossy(&r[0], "key")?,
                    bytes_all_revisions: t.int(&r[1], "value_size")?,
                    revisions: t.int(&r[2], "revisions")?,
                    latest_size: t.int(&r[3], "value_size")?,
                })
            },
        )?;
        let busiest = self.each(
            "SELECT key, count(*), count(*) FILTER (WHERE change_class IN ('rewrite', 'encoding-only')), cluster \
             FROM scoped_rows GROUP BY key_id, key, cluster ORDER BY 2 DESC, key, cluster LIMIT $1",
            &limit,
            |t, r| {
                let (revisions, nothing) = (t.int(&r[1], "revisions")?, t.int(&r[2], "change_class")?);
                Ok(BusiestKey {
                    cluster: self.label(&r[3])?,
                    key: t.lossy(&r[0], "key")?,
                    revisions,
                    changed_nothing: nothing,
                    changed_nothing_share: if revisions > 0 {
                        nothing as f64 / revisions as f64
                    } else {
                        0.0
                    },
                })
            },
        )?;
        let times: Vec<String> = TIME_FIELDS.iter().map(|t| format!("'{t}'")).collect();
        let managers = self.each(
            &self
                .db
                .dialect()
                .manager_writes
                .replace("{times}", &times.join(", ")),
            &limit,
            |t, r| {
                Ok(ManagerUsage {
                    cluster: self.label(&r[6])?,
                    manager: t.text(&r[0], "changed_by")?,
                    group: t.text(&r[1], "grp")?,
                    resource: t.text(&r[2], "res")?,
                    writes: t.int(&r[3], "revisions")?,
                    metadata_only: t.int(&r[4], "change_class")?,
                    timestamps_only: t.int(&r[5], "changed_paths")?,
                })
            },
        )?;
        let namespaces = self.each(
            &format!(
                "SELECT ns, count(*) FILTER (WHERE live), count(*), \
                 CAST(coalesce(sum(CASE WHEN live THEN value_size END), 0) AS bigint), \
                 CAST(coalesce(sum(value_size), 0) AS bigint), cluster \
                 FROM scoped_rows GROUP BY cluster, ns ORDER BY 5 DESC, ns{byte_order}, cluster"
            ),
            &[],
            |t, r| {
                Ok(NamespaceUsage {
                    cluster: self.label(&r[5])?,
                    namespace: t.text(&r[0], "ns")?,
                    objects: t.int(&r[1], "live")?,
                    revisions: t.int(&r[2], "revisions")?,
                    bytes_live: t.int(&r[3], "value_size")?,
                    bytes_all_revisions: t.int(&r[4], "value_size")?,
                })
            },
        )?;
        let (users, user_agents) = self.requesters(top)?;
        Ok(Usage {
            resources,
            largest,
            busiest,
            managers,
            namespaces,
            users,
            user_agents,
        })
    }

    /// Writes, no-op writes and failures per user and per user agent over
    /// the rows in scope: revisions attributed to a request, and requests
    /// of the keys in scope that wrote nothing. The `top` busiest of each.
    fn requesters(&self, top: u32) -> Result<(Vec<RequesterUsage>, Vec<RequesterUsage>), StoreError> {
        let rows = self.each(
            "SELECT username, user_agent, CAST(sum(writes) AS bigint), CAST(sum(no_op) AS bigint), \
               CAST(sum(conflicts) AS bigint), CAST(sum(failed) AS bigint), cluster FROM ( \
               SELECT a.username, a.user_agent, count(*) AS writes, CAST(0 AS bigint) AS no_op, \
                 CAST(0 AS bigint) AS conflicts, CAST(0 AS bigint) AS failed, s.cluster \
                 FROM scoped_rows s JOIN revision_writers w ON w.key_id = s.key_id AND w.mod_revision = s.mod_revision \
                 JOIN audit_requests a ON a.id = w.request_id GROUP BY 1, 2, 7 \
               UNION ALL \
               SELECT a.username, a.user_agent, 0, count(*) FILTER (WHERE a.outcome = 'no-op'), \
                 count(*) FILTER (WHERE a.code = 409), count(*) FILTER (WHERE a.outcome = 'failed'), \
                 k.cluster_id FROM audit_requests a JOIN keys k ON k.id = a.key_id \
                 WHERE a.key_id IN (SELECT key_id FROM scoped_rows) GROUP BY 1, 2, 7) AS requests \
             GROUP BY 1, 2, 7",
            &[],
            |t, r| {
                let counts = [
                    t.int(&r[2], "writes")?,
                    t.int(&r[3], "no_op")?,
                    t.int(&r[4], "conflicts")?,
                    t.int(&r[5], "failed")?,
                ];
                let user = t.text(&r[0], "username")?;
                let agent = t.opt_text(&r[1], "user_agent")?;
                Ok((self.label(&r[6])?, user, agent, counts))
            },
        )?;
        let mut requesters = Requesters::default();
        for (cluster, user, agent, counts) in rows {
            requesters.add(&cluster, user, agent, counts);
        }
        Ok(requesters.busiest(top))
    }
}

impl<D: Sql + ?Sized> Drop for Scoped<'_, D> {
    fn drop(&mut self) {
        self.db.drop_temp("scoped_rows");
    }
}

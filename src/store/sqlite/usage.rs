//! What a cluster stores and what it costs (`stats`): per resource, per key
//! (largest, busiest), per field manager and per namespace, computed in SQL
//! over the stored revisions a [`Scope`] keeps.

use super::Store;
use crate::store::reader::ClusterReads;
use crate::store::usage::{sort_resources, Requesters, TIME_FIELDS};
use crate::store::StoreError;
use crate::store::{
    BusiestKey, LargestKey, ManagerUsage, NamespaceUsage, RequesterUsage, ResourceUsage, Scope, Usage,
};
use std::collections::{BTreeMap, HashMap};

/// The revisions in scope with their key's cluster and names and whether
/// each is its key's newest in scope and not a tombstone (`live`), gathered
/// once into a temporary table (`rows`, in SQLite's temporary database,
/// never the file), which every aggregate then reads: each scanned and
/// joined the whole history before. Queries bind `?1`, the row limit of
/// per-key lists. Every aggregate is per cluster; `labels` names them.
struct Scoped<'a> {
    store: &'a Store,
    labels: HashMap<i64, String>,
}

impl<'a> Scoped<'a> {
    fn new(store: &'a Store, scope: &Scope) -> Result<Self, StoreError> {
        let err = |e| store.err(e);
        store
            .conn
            .execute_batch("DROP TABLE IF EXISTS temp.rows")
            .map_err(err)?;
        let sql = format!(
            "CREATE TEMP TABLE rows AS \
             WITH scoped AS (SELECT r.key_id, r.mod_revision, r.deleted, r.value_size, r.encoding, r.encryption, \
               r.change_class, r.changed_paths, r.changed_by, k.key, k.cluster_id AS cluster, \
               coalesce(k.api_group, '') AS grp, coalesce(k.resource, '-') AS res, coalesce(k.namespace, '-') AS ns \
               FROM revisions r JOIN keys k ON k.id = r.key_id WHERE {}), \
             newest AS (SELECT key_id, max(mod_revision) AS m FROM scoped GROUP BY key_id) \
             SELECT s.*, (n.m IS NOT NULL AND s.deleted = 0) AS live FROM scoped s \
             LEFT JOIN newest n ON n.key_id = s.key_id AND n.m = s.mod_revision",
            super::stats::SCOPE
        );
        store
            .conn
            .execute(&sql, super::stats::scope_params(scope).as_slice())
            .map_err(err)?;
        let labels = store
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        Ok(Scoped { store, labels })
    }

    /// The label of a cluster by row id, read from column `at`.
    fn label(&self, r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<String> {
        let row: i64 = r.get(at)?;
        Ok(self.labels.get(&row).cloned().unwrap_or_else(|| row.to_string()))
    }

    /// `sql` over `rows`.
    fn query(&self, sql: &str) -> Result<rusqlite::Statement<'a>, StoreError> {
        self.store.conn.prepare(sql).map_err(|e| self.store.err(e))
    }
}

/// Writes, no-op writes and failures per user and per user agent over the
/// rows in scope: revisions attributed to a request, and requests of the
/// keys in scope that wrote nothing. The `top` busiest of each.
fn requesters(
    scoped: &Scoped<'_>,
    top: u32,
) -> Result<(Vec<RequesterUsage>, Vec<RequesterUsage>), StoreError> {
    let err = |e| scoped.store.err(e);
    let mut stmt = scoped.query(
        "SELECT username, user_agent, sum(writes), sum(no_op), sum(conflicts), sum(failed), cluster FROM ( \
           SELECT a.username, a.user_agent, count(*) AS writes, 0 AS no_op, 0 AS conflicts, 0 AS failed, rows.cluster \
             FROM rows JOIN revision_writers w ON w.key_id = rows.key_id AND w.mod_revision = rows.mod_revision \
             JOIN audit_requests a ON a.id = w.request_id GROUP BY 1, 2, 7 \
           UNION ALL \
           SELECT a.username, a.user_agent, 0, count(*) FILTER (WHERE a.outcome = 'no-op'), count(*) FILTER (WHERE a.code = 409), \
             count(*) FILTER (WHERE a.outcome = 'failed'), \
             k.cluster_id FROM audit_requests a JOIN keys k ON k.id = a.key_id \
             WHERE a.key_id IN (SELECT key_id FROM rows) GROUP BY 1, 2, 7) \
         GROUP BY 1, 2, 7",
    )?;
    let mut requesters = Requesters::default();
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let counts: [i64; 4] = [
            r.get(2).map_err(err)?,
            r.get(3).map_err(err)?,
            r.get(4).map_err(err)?,
            r.get(5).map_err(err)?,
        ];
        let cluster = scoped.label(r, 6).map_err(err)?;
        requesters.add(&cluster, r.get(0).map_err(err)?, r.get(1).map_err(err)?, counts);
    }
    Ok(requesters.busiest(top))
}

impl Drop for Scoped<'_> {
    fn drop(&mut self) {
        let _ = self.store.conn.execute_batch("DROP TABLE IF EXISTS temp.rows");
    }
}

impl Store {
    /// What `resource_usage` gives, over the rows gathered.
    fn resources_in(&self, scoped: &Scoped<'_>) -> Result<Vec<ResourceUsage>, StoreError> {
        let err = |e| self.err(e);
        let (query, bind) = (|sql: &str| scoped.query(sql), rusqlite::params![]);

        let mut resources: BTreeMap<(i64, String, String), ResourceUsage> = BTreeMap::new();
        let mut stmt = query(
            "SELECT grp, res, sum(live), count(*), coalesce(sum(CASE WHEN live THEN value_size END), 0), \
             coalesce(sum(value_size), 0), cluster FROM rows GROUP BY cluster, grp, res",
        )?;
        let mut rows = stmt.query(bind).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let (group, resource): (String, String) = (r.get(0).map_err(err)?, r.get(1).map_err(err)?);
            resources.insert(
                (r.get(6).map_err(err)?, group.clone(), resource.clone()),
                ResourceUsage {
                    cluster: scoped.label(r, 6).map_err(err)?,
                    group,
                    resource,
                    objects: r.get(2).map_err(err)?,
                    revisions: r.get(3).map_err(err)?,
                    bytes_live: r.get(4).map_err(err)?,
                    bytes_all_revisions: r.get(5).map_err(err)?,
                    ..ResourceUsage::default()
                },
            );
        }
        for (column, into) in [
            ("coalesce(encoding, 'deleted')", 0usize),
            (
                "CASE WHEN deleted THEN NULL ELSE coalesce(encryption, 'identity') END",
                1,
            ),
            ("coalesce(change_class, 'unclassified')", 2),
        ] {
            let mut stmt = query(&format!(
                "SELECT grp, res, {column} AS label, count(*), cluster FROM rows GROUP BY cluster, grp, res, label \
                 HAVING label IS NOT NULL"
            ))?;
            let mut rows = stmt.query(bind).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                let key: (i64, String, String) = (
                    r.get(4).map_err(err)?,
                    r.get(0).map_err(err)?,
                    r.get(1).map_err(err)?,
                );
                let (label, n): (String, i64) = (r.get(2).map_err(err)?, r.get(3).map_err(err)?);
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
}

impl crate::store::reader::UsageReads for Store {
    fn usage(&self, scope: &Scope, top: u32) -> Result<Usage, StoreError> {
        let err = |e| self.err(e);
        let scoped = Scoped::new(self, scope)?;
        let resources = self.resources_in(&scoped)?;
        let (query, bind) = (|sql: &str| scoped.query(sql), [i64::from(top)]);

        let text_key = |r: &rusqlite::Row<'_>| -> rusqlite::Result<String> {
            Ok(String::from_utf8_lossy(&r.get::<_, Vec<u8>>(0)?).into_owned())
        };
        let largest = query(
            "SELECT key, sum(value_size), count(*), max(CASE WHEN live THEN value_size ELSE 0 END), cluster FROM rows \
             GROUP BY key_id ORDER BY 2 DESC, key, cluster LIMIT ?1",
        )?
        .query_map(bind, |r| {
            Ok(LargestKey {
                cluster: scoped.label(r, 4)?,
                key: text_key(r)?,
                bytes_all_revisions: r.get(1)?,
                revisions: r.get(2)?,
                latest_size: r.get(3)?,
            })
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
        let busiest = query(
            "SELECT key, count(*), count(*) FILTER (WHERE change_class IN ('rewrite', 'encoding-only')), cluster FROM rows \
             GROUP BY key_id ORDER BY 2 DESC, key, cluster LIMIT ?1",
        )?
        .query_map(bind, |r| {
            let (revisions, nothing): (i64, i64) = (r.get(1)?, r.get(2)?);
            Ok(BusiestKey {
                cluster: scoped.label(r, 3)?,
                key: text_key(r)?,
                revisions,
                changed_nothing: nothing,
                changed_nothing_share: if revisions > 0 {
                    nothing as f64 / revisions as f64
                } else {
                    0.0
                },
            })
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;

        // Each write's managers: the entries its changed paths are
        // attributed to, once per write. A path's last member is what
        // follows its last `.` once escaped dots (`\.`, a dot inside a
        // key such as `data.build\.time`) are set aside.
        let times: Vec<String> = TIME_FIELDS.iter().map(|t| format!("'{t}'")).collect();
        let managers = query(&format!(
            "SELECT m.value AS manager, grp, res, count(*), count(*) FILTER (WHERE change_class = 'metadata-only'), \
             sum(NOT EXISTS (SELECT 1 FROM (SELECT replace(p.value, '\\.', char(1)) AS path FROM json_each(rows.changed_paths) p) v \
                 WHERE replace(v.path, rtrim(v.path, replace(v.path, '.', '')), '') NOT IN ({}))), rows.cluster \
             FROM rows, (SELECT DISTINCT w.key_id AS kid, w.mod_revision AS rev, m.value FROM rows AS w, \
                         json_each(w.changed_by) c, json_each(c.value) m WHERE w.changed_by IS NOT NULL) m \
             WHERE m.kid = rows.key_id AND m.rev = rows.mod_revision GROUP BY rows.cluster, manager, grp, res \
             ORDER BY 4 DESC, manager, rows.cluster LIMIT ?1",
            times.join(", ")
        ))?
        .query_map(bind, |r| {
            Ok(ManagerUsage {
                cluster: scoped.label(r, 6)?,
                manager: r.get(0)?,
                group: r.get(1)?,
                resource: r.get(2)?,
                writes: r.get(3)?,
                metadata_only: r.get(4)?,
                timestamps_only: r.get(5)?,
            })
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;

        let namespaces = query(
            "SELECT ns, sum(live), count(*), coalesce(sum(CASE WHEN live THEN value_size END), 0), \
             coalesce(sum(value_size), 0), cluster FROM rows GROUP BY cluster, ns ORDER BY 5 DESC, ns, cluster",
        )?
        .query_map([], |r| {
            Ok(NamespaceUsage {
                cluster: scoped.label(r, 5)?,
                namespace: r.get(0)?,
                objects: r.get(1)?,
                revisions: r.get(2)?,
                bytes_live: r.get(3)?,
                bytes_all_revisions: r.get(4)?,
            })
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
        let (users, user_agents) = requesters(&scoped, top)?;
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

    fn resource_usage(&self, scope: &Scope) -> Result<Vec<ResourceUsage>, StoreError> {
        self.resources_in(&Scoped::new(self, scope)?)
    }
}

//! What a cluster stores and what it costs (`stats`): per resource, per key
//! (largest, busiest), per field manager and per namespace, computed in SQL
//! over the stored revisions a [`Scope`] keeps.

use super::Store;
use crate::store::StoreError;
use crate::store::{
    BusiestKey, LargestKey, ManagerUsage, NamespaceUsage, RequesterUsage, ResourceUsage, Scope, Usage,
};
use std::collections::BTreeMap;

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

/// The revisions in scope with their key's names and whether each is its
/// key's newest in scope and not a tombstone (`live`), gathered once into a
/// temporary table (`rows`, in SQLite's temporary database, never the
/// file), which every aggregate then reads: each scanned and joined the
/// whole history before. Queries bind `?1`, the row limit of per-key lists.
struct Scoped<'a> {
    store: &'a Store,
}

impl<'a> Scoped<'a> {
    fn new(store: &'a Store, scope: &Scope, cluster: Option<i64>) -> Result<Self, StoreError> {
        let err = |e| store.err(e);
        store
            .conn
            .execute_batch("DROP TABLE IF EXISTS temp.rows")
            .map_err(err)?;
        let sql = format!(
            "CREATE TEMP TABLE rows AS \
             WITH scoped AS (SELECT r.key_id, r.mod_revision, r.deleted, r.value_size, r.encoding, r.encryption, \
               r.change_class, r.changed_paths, r.changed_by, k.key, coalesce(k.api_group, '') AS grp, \
               coalesce(k.resource, '-') AS res, coalesce(k.namespace, '-') AS ns \
               FROM revisions r JOIN keys k ON k.id = r.key_id WHERE {} AND (?6 IS NULL OR k.cluster_id = ?6)), \
             newest AS (SELECT key_id, max(mod_revision) AS m FROM scoped GROUP BY key_id) \
             SELECT s.*, (n.m IS NOT NULL AND s.deleted = 0) AS live FROM scoped s \
             LEFT JOIN newest n ON n.key_id = s.key_id AND n.m = s.mod_revision",
            super::stats::SCOPE
        );
        store
            .conn
            .execute(
                &sql,
                rusqlite::params![
                    scope.from_revision,
                    scope.to_revision,
                    scope.objects.namespace,
                    scope.objects.resource,
                    scope.objects.key_prefix,
                    cluster,
                    scope.objects.key
                ],
            )
            .map_err(err)?;
        Ok(Scoped { store })
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
    top: i64,
) -> Result<(Vec<RequesterUsage>, Vec<RequesterUsage>), StoreError> {
    let err = |e| scoped.store.err(e);
    let mut stmt = scoped.query(
        "SELECT username, user_agent, sum(writes), sum(no_op), sum(conflicts), sum(failed) FROM ( \
           SELECT a.username, a.user_agent, count(*) AS writes, 0 AS no_op, 0 AS conflicts, 0 AS failed \
             FROM rows JOIN revision_writers w ON w.key_id = rows.key_id AND w.mod_revision = rows.mod_revision \
             JOIN audit_requests a ON a.id = w.request_id GROUP BY 1, 2 \
           UNION ALL \
           SELECT a.username, a.user_agent, 0, sum(a.outcome = 'no-op'), sum(a.code = 409), sum(a.outcome = 'failed') \
             FROM audit_requests a WHERE a.key_id IN (SELECT key_id FROM rows) GROUP BY 1, 2) \
         GROUP BY 1, 2",
    )?;
    let mut users: BTreeMap<String, RequesterUsage> = BTreeMap::new();
    let mut agents: BTreeMap<String, RequesterUsage> = BTreeMap::new();
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let user: String = r.get(0).map_err(err)?;
        let agent: Option<String> = r.get(1).map_err(err)?;
        let counts: [i64; 4] = [
            r.get(2).map_err(err)?,
            r.get(3).map_err(err)?,
            r.get(4).map_err(err)?,
            r.get(5).map_err(err)?,
        ];
        for (map, name) in [
            (&mut users, user.clone()),
            (&mut agents, agent.unwrap_or_else(|| "-".into())),
        ] {
            let entry = map.entry(name.clone()).or_insert_with(|| RequesterUsage {
                name,
                ..Default::default()
            });
            entry.writes += counts[0];
            entry.no_op_writes += counts[1];
            entry.conflicts += counts[2];
            entry.failed += counts[3];
        }
    }
    let busiest = |map: BTreeMap<String, RequesterUsage>| {
        let mut list: Vec<RequesterUsage> = map.into_values().collect();
        list.sort_by(|a, b| {
            (b.writes + b.no_op_writes + b.failed, &a.name)
                .cmp(&(a.writes + a.no_op_writes + a.failed, &b.name))
        });
        list.truncate(top.max(0) as usize);
        list
    };
    Ok((busiest(users), busiest(agents)))
}

impl Drop for Scoped<'_> {
    fn drop(&mut self) {
        let _ = self.store.conn.execute_batch("DROP TABLE IF EXISTS temp.rows");
    }
}

impl Store {
    /// Per resource, what the revisions `scope` keeps (of one cluster when
    /// given) hold and cost: the `resources` of [`Store::usage`], which the
    /// report's summary shows too.
    pub(in crate::store) fn read_resource_usage(
        &self,
        scope: &Scope,
        cluster: Option<i64>,
    ) -> Result<Vec<ResourceUsage>, StoreError> {
        self.resources_in(&Scoped::new(self, scope, cluster)?)
    }

    /// What [`Store::read_resource_usage`] gives, over the rows gathered.
    fn resources_in(&self, scoped: &Scoped<'_>) -> Result<Vec<ResourceUsage>, StoreError> {
        let err = |e| self.err(e);
        let (query, bind) = (|sql: &str| scoped.query(sql), rusqlite::params![]);

        let mut resources: BTreeMap<(String, String), ResourceUsage> = BTreeMap::new();
        let mut stmt = query(
            "SELECT grp, res, sum(live), count(*), coalesce(sum(CASE WHEN live THEN value_size END), 0), \
             coalesce(sum(value_size), 0) FROM rows GROUP BY grp, res",
        )?;
        let mut rows = stmt.query(bind).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let (group, resource): (String, String) = (r.get(0).map_err(err)?, r.get(1).map_err(err)?);
            resources.insert(
                (group.clone(), resource.clone()),
                ResourceUsage {
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
                "SELECT grp, res, {column} AS label, count(*) FROM rows GROUP BY grp, res, label HAVING label IS NOT NULL"
            ))?;
            let mut rows = stmt.query(bind).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                let key: (String, String) = (r.get(0).map_err(err)?, r.get(1).map_err(err)?);
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
        resources.sort_by(|a, b| {
            b.bytes_all_revisions
                .cmp(&a.bytes_all_revisions)
                .then(a.resource.cmp(&b.resource))
        });
        Ok(resources)
    }

    /// `stats`: the usage of the revisions `scope` keeps (of one cluster
    /// when given); `top` rows of the per-key and per-manager lists.
    pub(in crate::store) fn read_usage(
        &self,
        scope: &Scope,
        cluster: Option<i64>,
        top: i64,
    ) -> Result<Usage, StoreError> {
        let err = |e| self.err(e);
        let scoped = Scoped::new(self, scope, cluster)?;
        let resources = self.resources_in(&scoped)?;
        let (query, bind) = (|sql: &str| scoped.query(sql), [top]);

        let text_key = |r: &rusqlite::Row<'_>| -> rusqlite::Result<String> {
            Ok(String::from_utf8_lossy(&r.get::<_, Vec<u8>>(0)?).into_owned())
        };
        let largest = query(
            "SELECT key, sum(value_size), count(*), max(CASE WHEN live THEN value_size ELSE 0 END) FROM rows \
             GROUP BY key_id ORDER BY 2 DESC, key LIMIT ?1",
        )?
        .query_map(bind, |r| {
            Ok(LargestKey {
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
            "SELECT key, count(*), sum(change_class IN ('rewrite', 'encoding-only')) FROM rows \
             GROUP BY key_id ORDER BY 2 DESC, key LIMIT ?1",
        )?
        .query_map(bind, |r| {
            let (revisions, nothing): (i64, i64) = (r.get(1)?, r.get(2)?);
            Ok(BusiestKey {
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
            "SELECT m.value AS manager, grp, res, count(*), sum(change_class = 'metadata-only'), \
             sum(NOT EXISTS (SELECT 1 FROM (SELECT replace(p.value, '\\.', char(1)) AS path FROM json_each(rows.changed_paths) p) v \
                 WHERE replace(v.path, rtrim(v.path, replace(v.path, '.', '')), '') NOT IN ({}))) \
             FROM rows, (SELECT DISTINCT w.key_id AS kid, w.mod_revision AS rev, m.value FROM rows AS w, \
                         json_each(w.changed_by) c, json_each(c.value) m WHERE w.changed_by IS NOT NULL) m \
             WHERE m.kid = rows.key_id AND m.rev = rows.mod_revision GROUP BY manager, grp, res \
             ORDER BY 4 DESC, manager LIMIT ?1",
            times.join(", ")
        ))?
        .query_map(bind, |r| {
            Ok(ManagerUsage {
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
             coalesce(sum(value_size), 0) FROM rows GROUP BY ns ORDER BY 5 DESC, ns",
        )?
        .query_map([], |r| {
            Ok(NamespaceUsage {
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
}

//! What a cluster stores and what it costs (`stats`): per resource, per key
//! (largest, busiest), per field manager and per namespace, computed in SQL
//! over the stored revisions a [`Scope`] keeps.

use super::stats::{scope_params, SCOPE};
use super::Store;
use crate::store::reader::ClusterReads;
use crate::store::usage::{sort_resources, Requesters, TIME_FIELDS};
use crate::store::StoreError;
use crate::store::{
    BusiestKey, LargestKey, ManagerUsage, NamespaceUsage, RequesterUsage, ResourceUsage, Scope, Usage,
};
use postgres::Row;
use std::collections::{BTreeMap, HashMap};

/// The revisions in scope with their key's cluster and names and whether
/// each is its key's newest in scope and not a tombstone (`live`), gathered
/// once into a temporary table (`scoped_rows`, dropped when the transaction
/// the caller opens ends), which every aggregate then reads on the server.
/// Every aggregate is per cluster; `labels` names them. Sums of bigints are
/// numeric in PostgreSQL: they are cast back.
struct Scoped<'a> {
    store: &'a Store,
    labels: HashMap<i64, String>,
}

impl<'a> Scoped<'a> {
    /// Gathers the rows; in a transaction.
    fn new(store: &'a Store, scope: &Scope) -> Result<Self, StoreError> {
        store.execute("DROP TABLE IF EXISTS pg_temp.scoped_rows", &[])?;
        let sql = format!(
            "CREATE TEMP TABLE scoped_rows ON COMMIT DROP AS \
             WITH scoped AS (SELECT r.key_id, r.mod_revision, r.deleted, r.value_size, r.encoding, r.encryption, \
               r.change_class, r.changed_paths, r.changed_by, k.key, k.cluster_id AS cluster, \
               coalesce(k.api_group, '') AS grp, coalesce(k.resource, '-') AS res, coalesce(k.namespace, '-') AS ns \
               FROM revisions r JOIN keys k ON k.id = r.key_id WHERE {SCOPE}), \
             newest AS (SELECT key_id, max(mod_revision) AS m FROM scoped GROUP BY key_id) \
             SELECT s.*, (n.m IS NOT NULL AND NOT s.deleted) AS live FROM scoped s \
             LEFT JOIN newest n ON n.key_id = s.key_id AND n.m = s.mod_revision"
        );
        store.execute(&sql, &scope_params(scope))?;
        let labels = store
            .clusters()?
            .into_iter()
            .map(|c| (c.row, c.label().to_string()))
            .collect();
        Ok(Scoped { store, labels })
    }

    /// The label of a cluster by row id, read from column `at`.
    fn label(&self, r: &Row, at: usize) -> Result<String, StoreError> {
        let row: i64 = self.get(r, at)?;
        Ok(self.labels.get(&row).cloned().unwrap_or_else(|| row.to_string()))
    }

    /// Column `at` of a row.
    fn get<'r, T: postgres::types::FromSql<'r>>(&self, r: &'r Row, at: usize) -> Result<T, StoreError> {
        r.try_get(at).map_err(|e| self.store.err(e))
    }

    /// Column `at`, a key's bytes, as (lossy) text.
    fn key(&self, r: &Row, at: usize) -> Result<String, StoreError> {
        Ok(String::from_utf8_lossy(self.get::<&[u8]>(r, at)?).into_owned())
    }
}

/// Writes, no-op writes and failures per user and per user agent over the
/// rows in scope: revisions attributed to a request, and requests of the
/// keys in scope that wrote nothing. The `top` busiest of each.
fn requesters(
    scoped: &Scoped<'_>,
    top: u32,
) -> Result<(Vec<RequesterUsage>, Vec<RequesterUsage>), StoreError> {
    let rows = scoped.store.query(
        "SELECT username, user_agent, sum(writes)::bigint, sum(no_op)::bigint, sum(conflicts)::bigint, \
           sum(failed)::bigint, cluster FROM ( \
           SELECT a.username, a.user_agent, count(*) AS writes, 0::bigint AS no_op, 0::bigint AS conflicts, \
             0::bigint AS failed, s.cluster \
             FROM scoped_rows s JOIN revision_writers w ON w.key_id = s.key_id AND w.mod_revision = s.mod_revision \
             JOIN audit_requests a ON a.id = w.request_id GROUP BY 1, 2, 7 \
           UNION ALL \
           SELECT a.username, a.user_agent, 0, count(*) FILTER (WHERE a.outcome = 'no-op'), \
             count(*) FILTER (WHERE a.code = 409), count(*) FILTER (WHERE a.outcome = 'failed'), \
             k.cluster_id FROM audit_requests a JOIN keys k ON k.id = a.key_id \
             WHERE a.key_id IN (SELECT key_id FROM scoped_rows) GROUP BY 1, 2, 7) AS requests \
         GROUP BY 1, 2, 7",
        &[],
    )?;
    let mut requesters = Requesters::default();
    for r in &rows {
        let counts: [i64; 4] = [
            scoped.get(r, 2)?,
            scoped.get(r, 3)?,
            scoped.get(r, 4)?,
            scoped.get(r, 5)?,
        ];
        requesters.add(&scoped.label(r, 6)?, scoped.get(r, 0)?, scoped.get(r, 1)?, counts);
    }
    Ok(requesters.busiest(top))
}

impl Store {
    /// What `resource_usage` gives, over the rows gathered.
    fn resources_in(&self, scoped: &Scoped<'_>) -> Result<Vec<ResourceUsage>, StoreError> {
        let mut resources: BTreeMap<(i64, String, String), ResourceUsage> = BTreeMap::new();
        for r in &self.query(
            "SELECT grp, res, count(*) FILTER (WHERE live), count(*), \
             coalesce(sum(CASE WHEN live THEN value_size END), 0)::bigint, coalesce(sum(value_size), 0)::bigint, \
             cluster FROM scoped_rows GROUP BY cluster, grp, res",
            &[],
        )? {
            let (group, resource): (String, String) = (scoped.get(r, 0)?, scoped.get(r, 1)?);
            resources.insert(
                (scoped.get(r, 6)?, group.clone(), resource.clone()),
                ResourceUsage {
                    cluster: scoped.label(r, 6)?,
                    group,
                    resource,
                    objects: scoped.get(r, 2)?,
                    revisions: scoped.get(r, 3)?,
                    bytes_live: scoped.get(r, 4)?,
                    bytes_all_revisions: scoped.get(r, 5)?,
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
            for r in &self.query(
                &format!(
                    "SELECT grp, res, {column} AS label, count(*), cluster FROM scoped_rows \
                     WHERE {column} IS NOT NULL GROUP BY cluster, grp, res, label"
                ),
                &[],
            )? {
                let key: (i64, String, String) = (scoped.get(r, 4)?, scoped.get(r, 0)?, scoped.get(r, 1)?);
                let (label, n): (String, i64) = (scoped.get(r, 2)?, scoped.get(r, 3)?);
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

    /// What `usage` gives, over the rows gathered.
    fn usage_in(&self, scoped: &Scoped<'_>, top: u32) -> Result<Usage, StoreError> {
        let resources = self.resources_in(scoped)?;
        let limit = i64::from(top);
        let query = |sql: &str| self.query(sql, &[&limit]);

        let largest = query(
            "SELECT key, sum(value_size)::bigint, count(*), max(CASE WHEN live THEN value_size ELSE 0 END), cluster \
             FROM scoped_rows GROUP BY key_id, key, cluster ORDER BY 2 DESC, key, cluster LIMIT $1",
        )?
        .iter()
        .map(|r| {
            Ok(LargestKey {
                cluster: scoped.label(r, 4)?,
                key: scoped.key(r, 0)?,
                bytes_all_revisions: scoped.get(r, 1)?,
                revisions: scoped.get(r, 2)?,
                latest_size: scoped.get(r, 3)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
        let busiest = query(
            "SELECT key, count(*), count(*) FILTER (WHERE change_class IN ('rewrite', 'encoding-only')), cluster \
             FROM scoped_rows GROUP BY key_id, key, cluster ORDER BY 2 DESC, key, cluster LIMIT $1",
        )?
        .iter()
        .map(|r| {
            let (revisions, nothing): (i64, i64) = (scoped.get(r, 1)?, scoped.get(r, 2)?);
            Ok(BusiestKey {
                cluster: scoped.label(r, 3)?,
                key: scoped.key(r, 0)?,
                revisions,
                changed_nothing: nothing,
                changed_nothing_share: if revisions > 0 {
                    nothing as f64 / revisions as f64
                } else {
                    0.0
                },
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;

        // Each write's managers: the entries its changed paths are
        // attributed to, once per write. A path's last member is what
        // follows its last `.` once escaped dots (`\.`, a dot inside a
        // key such as `data.build\.time`) are set aside.
        let times: Vec<String> = TIME_FIELDS.iter().map(|t| format!("'{t}'")).collect();
        let managers = query(&format!(
            r#"SELECT m.manager COLLATE "C" AS manager, grp, res, count(*),
                 count(*) FILTER (WHERE change_class = 'metadata-only'),
                 count(*) FILTER (WHERE NOT EXISTS (
                   SELECT 1 FROM jsonb_array_elements_text(s.changed_paths::jsonb) p(path)
                   WHERE regexp_replace(replace(p.path, '\.', chr(1)), '^.*\.', '') NOT IN ({}))),
                 s.cluster
               FROM scoped_rows s,
                 (SELECT DISTINCT w.key_id AS kid, w.mod_revision AS rev, m.manager FROM scoped_rows AS w,
                    jsonb_each(w.changed_by::jsonb) c, jsonb_array_elements_text(c.value) m(manager)
                  WHERE w.changed_by IS NOT NULL) m
               WHERE m.kid = s.key_id AND m.rev = s.mod_revision GROUP BY s.cluster, 1, grp, res
               ORDER BY 4 DESC, manager, s.cluster LIMIT $1"#,
            times.join(", ")
        ))?
        .iter()
        .map(|r| {
            Ok(ManagerUsage {
                cluster: scoped.label(r, 6)?,
                manager: scoped.get(r, 0)?,
                group: scoped.get(r, 1)?,
                resource: scoped.get(r, 2)?,
                writes: scoped.get(r, 3)?,
                metadata_only: scoped.get(r, 4)?,
                timestamps_only: scoped.get(r, 5)?,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;

        let namespaces = self
            .query(
                r#"SELECT ns, count(*) FILTER (WHERE live), count(*),
                     coalesce(sum(CASE WHEN live THEN value_size END), 0)::bigint,
                     coalesce(sum(value_size), 0)::bigint, cluster
                   FROM scoped_rows GROUP BY cluster, ns ORDER BY 5 DESC, ns COLLATE "C", cluster"#,
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(NamespaceUsage {
                    cluster: scoped.label(r, 5)?,
                    namespace: scoped.get(r, 0)?,
                    objects: scoped.get(r, 1)?,
                    revisions: scoped.get(r, 2)?,
                    bytes_live: scoped.get(r, 3)?,
                    bytes_all_revisions: scoped.get(r, 4)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let (users, user_agents) = requesters(scoped, top)?;
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

impl crate::store::reader::UsageReads for Store {
    fn usage(&self, scope: &Scope, top: u32) -> Result<Usage, StoreError> {
        self.in_transaction(|| self.usage_in(&Scoped::new(self, scope)?, top))
    }

    fn resource_usage(&self, scope: &Scope) -> Result<Vec<ResourceUsage>, StoreError> {
        self.in_transaction(|| self.resources_in(&Scoped::new(self, scope)?))
    }
}

//! What a cluster stores and what it costs (`stats`): per resource, per key
//! (largest, busiest), per field manager and per namespace,
//! over the stored revisions a [`Scope`] keeps (computed by the backend).

use serde::Serialize;
use std::collections::BTreeMap;

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
pub(in crate::store) const TIME_FIELDS: &[&str] = &[
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
pub(in crate::store) fn sort_resources(resources: &mut [ResourceUsage]) {
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
pub(in crate::store) struct Requesters {
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

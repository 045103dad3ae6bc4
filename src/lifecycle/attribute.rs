//! Who wrote each stored revision: read kube-apiserver audit logs, stage
//! every write request they record (once per auditID, never a body), then
//! join all staged requests to the stored revisions again.

use crate::analyze::{attribution, Analysis};
use crate::source::audit::{self, AuditEvent, AuditInput, ReadSummary, Stage};
use crate::store::audit::{AuditRequest, JoinSummary};
use crate::store::cluster::Cluster;
use crate::store::Backend;
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// Verbs that write an object.
const WRITE_VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// Subresources whose writes land on the parent object's key.
const PARENT_SUBRESOURCES: [&str; 8] = [
    "status",
    "scale",
    "binding",
    "finalize",
    "approval",
    "ephemeralcontainers",
    "resize",
    "eviction",
];

/// What one `attribute` read and found.
#[derive(Debug, Serialize)]
pub struct Attributed {
    /// The cluster the requests were joined to: its name, or etcd's cluster
    /// id (hex) when it has none.
    pub cluster: String,
    pub read: ReadSummary,
    /// Completed write requests the logs hold (reads, other stages and
    /// subresources that write no object are not).
    pub writes: u64,
    /// Of those, requests new to the database.
    pub staged: u64,
    /// Every staged request of the cluster, joined again.
    pub joined: JoinSummary,
    /// The detectors run again on the cluster, when asked.
    #[serde(skip)]
    pub analysis: Option<Analysis>,
}

/// The request an event completes, when it is a write to an object.
fn write_request(event: AuditEvent) -> Option<AuditRequest> {
    if !matches!(event.stage, Stage::ResponseComplete | Stage::Panic)
        || !WRITE_VERBS.contains(&event.verb.as_str())
    {
        return None;
    }
    let object = event.object?;
    if object
        .subresource
        .as_deref()
        .is_some_and(|s| !PARENT_SUBRESOURCES.contains(&s))
    {
        return None;
    }
    // A panic is answered with 500 whatever the event says.
    let code = match event.stage {
        Stage::Panic => Some(500),
        _ => event.code,
    };
    Some(AuditRequest {
        audit_id: event.audit_id,
        verb: event.verb,
        api_group: object.api_group,
        resource: object.resource,
        namespace: object.namespace,
        name: object.name,
        subresource: object.subresource,
        user: event.user,
        groups: event.groups,
        impersonated_user: event.impersonated_user,
        user_agent: event.user_agent,
        source_ips: event.source_ips,
        code,
        level: event.level.to_string(),
        response_revision: event.response_revision,
        precondition_revision: event.precondition_revision,
        time: event.stage_timestamp,
        log: event.origin.input,
    })
}

/// The cluster `wanted` names (its name or etcd's cluster id, hex), or the
/// only one the database holds.
fn cluster(store: &dyn Backend, wanted: Option<&str>) -> Result<Cluster> {
    let clusters = store.clusters()?;
    let database = store.location().display().to_string();
    match (wanted, &clusters[..]) {
        (Some(w), _) => Ok(crate::store::cluster::find(&clusters, w, &database)?.clone()),
        (None, [one]) => Ok(one.clone()),
        (None, []) => bail!("{database} holds no run yet: snapshot the cluster first"),
        (None, _) => bail!(
            "{database} holds several clusters ({}): say which the audit logs are of with --cluster",
            crate::store::cluster::listed(&clusters)
        ),
    }
}

/// Reads `inputs` into `store`, joins every staged request of the cluster
/// (`wanted`, by name or etcd's cluster id, or the only one) to its stored
/// revisions and, given `detectors`, analyzes the cluster again (the audit
/// detectors read what the join found).
pub fn attribute(
    store: &dyn Backend,
    inputs: &[AuditInput],
    wanted: Option<&str>,
    detectors: Option<&crate::analyze::Options>,
) -> Result<Attributed> {
    let cluster = cluster(store, wanted)?;
    let row = cluster.row;
    let mut found = attribute_cluster(store, inputs, cluster)?;
    if let Some(options) = detectors {
        found.analysis = Some(crate::analyze::analyze(store, Some(row), options)?);
    }
    Ok(found)
}

/// Reads `inputs` as the audit logs of `cluster` and joins.
pub(super) fn attribute_cluster(
    store: &dyn Backend,
    inputs: &[AuditInput],
    cluster: Cluster,
) -> Result<Attributed> {
    let (name, cluster) = (cluster.label().to_string(), cluster.row);
    let mut staging = store.stage_audit(cluster)?;
    let mut writes = 0;
    let read = audit::read(inputs, |event| {
        if let Some(request) = write_request(event) {
            writes += 1;
            staging.push(&request)?;
        }
        Ok(())
    })?;
    let staged = staging.staged()?;
    staging.finish()?;
    // Requests answered before the newest live run began wrote nothing
    // that run could not see.
    let history_read_at = store
        .run_times(cluster)?
        .iter()
        .filter(|r| r.kind.reads_etcd_now())
        .map(|r| r.started_at)
        .max();
    let joined = store
        .join_audit(cluster, &|revisions, requests| {
            attribution::join(revisions, requests, history_read_at)
        })
        .context("joining audit requests to stored revisions")?;
    Ok(Attributed {
        cluster: name,
        read,
        writes,
        staged,
        joined,
        analysis: None,
    })
}

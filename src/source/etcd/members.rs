//! Choosing the member a run reads from, as etcdctl users expect of
//! `--endpoints a,b,c`: every endpoint is a candidate, each is probed
//! (connect, then `Status`) within the dial timeout, and the first healthy
//! one in the order given serves; one that refuses, does not answer,
//! reports no leader or is a learner is skipped with the reason. A
//! connection holds exactly one member (etcd-client's balanced channel
//! fails every request while any of its endpoints refuses: etcd-client
//! issue #39), and moves to another when that one fails.

use super::http_version::version_over_http;
use super::{diagnose, is_denied, reason, Connection, EtcdError, Reading};
use crate::decode::key::COMPACT_REV_KEY;
use etcd_client::{Client, GetOptions};
use std::sync::Arc;

/// One member, connected and proven to answer.
pub(super) struct Member {
    pub client: Client,
    pub endpoint: String,
    /// etcd's member id, from the answers' headers.
    pub id: u64,
    /// The version it reported, as it spelt it; empty when neither `Status`
    /// nor `/version` told it.
    pub version: String,
    /// The size of its data file, when the credentials may ask `Status`.
    pub db_size: Option<i64>,
}

/// What happened to the choice of member, for the run to report: skipped
/// endpoints become warnings, each member that serves a record of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberEvent {
    /// An endpoint was not used.
    Skipped { endpoint: String, reason: String },
    /// This member serves from now on; `moved_because` says why the one
    /// before stopped serving (`None` for the first).
    Serving {
        endpoint: String,
        member_id: u64,
        at: jiff::Timestamp,
        moved_because: Option<String>,
    },
}

impl MemberEvent {
    /// The warning a user sees: for an endpoint skipped, or a move away
    /// from a member that failed.
    pub fn warning(&self) -> Option<String> {
        match self {
            MemberEvent::Skipped { endpoint, reason } => {
                Some(format!("skipping etcd endpoint {endpoint}: {reason}"))
            }
            MemberEvent::Serving {
                endpoint,
                member_id,
                moved_because: Some(why),
                ..
            } => Some(format!(
                "{why}; reading from {endpoint} (member {member_id:x}) now"
            )),
            MemberEvent::Serving { .. } => None,
        }
    }
}

/// Why a probed endpoint will not serve.
pub(super) enum Refused {
    /// This member is down, slow, without a leader or a learner: another
    /// may do.
    Unhealthy(String),
    /// Any member would refuse the same: the run cannot go on.
    Fatal(EtcdError),
}

impl From<String> for Refused {
    fn from(reason: String) -> Refused {
        Refused::Unhealthy(reason)
    }
}

/// Connects to `endpoint` alone and asks it how it is.
async fn probe(
    connection: &Connection,
    options: &etcd_client::ConnectOptions,
    endpoint: &str,
) -> Result<Member, Refused> {
    let dial = connection.dial_timeout;
    let no_answer = || format!("no answer within {dial:?}");
    let client = tokio::time::timeout(dial, Client::connect([endpoint], Some(options.clone())))
        .await
        .map_err(|_| no_answer())?;
    let client = match client {
        Ok(client) => client,
        Err(e) => return Err(Refused::Unhealthy(diagnose::why(&e, connection, endpoint).await)),
    };
    let status = tokio::time::timeout(dial, client.maintenance_client().status())
        .await
        .map_err(|_| no_answer())?;
    match status {
        Ok(status) => {
            // Requests carry `hasleader`, so a member without a leader
            // refuses them; an older answer may still say so.
            if status.leader() == 0 {
                return Err(Refused::Unhealthy("reports no leader".into()));
            }
            if status.is_learner() {
                let learner = "is a learner (it serves no linearizable reads)";
                return Err(Refused::Unhealthy(learner.into()));
            }
            Ok(Member {
                id: status.header().map_or(0, |h| h.member_id()),
                version: status.version().to_string(),
                db_size: Some(status.db_size()),
                client,
                endpoint: endpoint.to_string(),
            })
        }
        // Some releases (3.4.45) reserve Status for administrators: a plain
        // read proves the endpoint, TLS, credentials and leader then, and
        // the version comes from `/version` on the same port.
        Err(e) if is_denied(&e) => {
            let read = tokio::time::timeout(
                dial,
                client
                    .kv_client()
                    .get(COMPACT_REV_KEY, Some(GetOptions::new().with_count_only())),
            )
            .await
            .map_err(|_| no_answer())?;
            let read = match read {
                Ok(read) => read,
                Err(e) if is_denied(&e) => {
                    let reading = Reading::Key(COMPACT_REV_KEY.as_bytes());
                    return Err(Refused::Fatal(
                        reading.denied(endpoint, connection.user.as_deref()),
                    ));
                }
                Err(e) => return Err(Refused::Unhealthy(reason(&e))),
            };
            Ok(Member {
                id: read.header().map_or(0, |h| h.member_id()),
                version: version_over_http(connection, endpoint).await.unwrap_or_default(),
                db_size: None,
                client,
                endpoint: endpoint.to_string(),
            })
        }
        Err(e) => Err(Refused::Unhealthy(diagnose::why(&e, connection, endpoint).await)),
    }
}

/// Every endpoint probed at once: each with the member or why not, in the
/// order given.
pub(super) async fn probe_all(
    connection: &Connection,
) -> Result<Vec<(String, Result<Member, Refused>)>, EtcdError> {
    let options = connection.options()?;
    let probes = connection
        .endpoints
        .iter()
        .map(|e| async { (e.clone(), probe(connection, &options, e).await) });
    Ok(futures_util::future::join_all(probes).await)
}

/// The first healthy member, with what happened to the others; one error
/// naming each endpoint and why when none is.
pub(super) async fn choose(connection: &Connection) -> Result<(Member, Vec<MemberEvent>), EtcdError> {
    if connection.endpoints.is_empty() {
        return Err(EtcdError::NoEndpoints);
    }
    let mut events = Vec::new();
    let mut chosen = None;
    let mut refused = Vec::new();
    for (endpoint, probed) in probe_all(connection).await? {
        match probed {
            Ok(member) if chosen.is_none() => chosen = Some(member),
            // A healthy member beyond the chosen one: a candidate later.
            Ok(_) => {}
            Err(Refused::Fatal(e)) => return Err(e),
            Err(Refused::Unhealthy(reason)) => {
                refused.push(format!("{endpoint}: {reason}"));
                events.push(MemberEvent::Skipped { endpoint, reason });
            }
        }
    }
    let Some(member) = chosen else {
        return Err(match (connection.endpoints.len(), events.pop()) {
            (1, Some(MemberEvent::Skipped { endpoint, reason })) => EtcdError::Connect {
                endpoints: endpoint,
                reason,
            },
            _ => EtcdError::NoMember(refused.join("; ")),
        });
    };
    events.push(serving(&member, None));
    Ok((member, events))
}

/// The event of `member` starting to serve.
pub(super) fn serving(member: &Member, moved_because: Option<String>) -> MemberEvent {
    MemberEvent::Serving {
        endpoint: member.endpoint.clone(),
        member_id: member.id,
        at: jiff::Timestamp::now(),
        moved_because,
    }
}

/// After `failed` stopped serving: the first other healthy member, else
/// `failed` itself if it answers again (a restarted member), else none.
pub(super) async fn replacement(connection: &Connection, failed: &Arc<Member>) -> Option<Member> {
    let mut again = None;
    for (endpoint, probed) in probe_all(connection).await.ok()? {
        match probed {
            Ok(member) if endpoint != failed.endpoint => return Some(member),
            Ok(member) => again = Some(member),
            Err(_) => {}
        }
    }
    again
}

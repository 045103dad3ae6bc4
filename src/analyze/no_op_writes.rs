//! `no-op-writes`: one requester's successful updates and patches of one
//! object that wrote nothing, because the apiserver found nothing to change
//! (reference §9.3): a client or controller that rewrites blindly. It costs
//! the apiserver a read, a conversion and an admission chain each time,
//! and its watchers nothing, so nothing else shows it. Needs `attribute`.
//! Low; medium from [`MANY`] on.
//!
//! A controller acts on its informer's cache, which lags the writes the
//! apiserver answers, its own among them. One that writes an object and
//! reconciles it again before its cache has the write sends what is there
//! already: the kube-controller-manager's ClusterRole aggregation and the
//! apiserver's FlowSchema status writer do so, several times a second,
//! while a cluster starts. A no-op answered within [`STALE_VIEW`] of a
//! write to the object is that catching up, not a blind rewrite, and is
//! not counted.

use super::detector::{Findings, Registration};
use crate::store::audit::{AuditedObject, AuditedRequest, Outcome};
use crate::store::finding::{Finding, Severity};
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "no-op-writes";

/// Judges each object's audited requests on their own.
pub const DETECTOR: Registration = Registration::audited(NAME, Severity::Low, detect);

/// No-op writes by one requester to one object before it is a finding:
/// one is a client re-applying what is there, which is normal.
pub const AT_LEAST: usize = 3;

/// No-op writes from which a finding is medium.
pub const MANY: usize = 100;

/// How long after a write to an object a no-op write to it may come from a
/// view that had not caught up with it yet: an informer's lag, with room
/// for a loaded control plane.
pub const STALE_VIEW: jiff::SignedDuration = jiff::SignedDuration::from_secs(10);

/// Audit IDs a finding lists, at most.
const LISTED: usize = 10;

/// Who sent a request: the user and the client (its user agent).
pub(super) fn requester(r: &AuditedRequest) -> (&str, Option<&str>) {
    (&r.user, r.user_agent.as_deref())
}

/// One requester's requests, the way a finding names them.
pub(super) fn describe(user: &str, agent: Option<&str>) -> String {
    match agent {
        Some(a) => format!("{user} ({a})"),
        None => user.to_string(),
    }
}

pub fn detect(object: &AuditedObject, requests: &[AuditedRequest], out: &mut Findings) {
    // Objects the database holds, as every detector judges.
    if object.key.is_none() {
        return;
    }
    let mut by_requester: BTreeMap<(&str, Option<&str>), Vec<&AuditedRequest>> = BTreeMap::new();
    let mut last_write: Option<jiff::Timestamp> = None;
    for r in requests {
        match r.outcome {
            Outcome::Wrote => last_write = Some(r.time),
            Outcome::NoOp if last_write.is_none_or(|w| r.time.duration_since(w) > STALE_VIEW) => {
                by_requester.entry(requester(r)).or_default().push(r);
            }
            _ => {}
        }
    }
    for ((user, agent), no_ops) in by_requester {
        if no_ops.len() < AT_LEAST {
            continue;
        }
        let (first, last) = (no_ops[0], no_ops[no_ops.len() - 1]);
        let mut verbs: BTreeMap<String, usize> = BTreeMap::new();
        for r in &no_ops {
            let verb = match &r.subresource {
                Some(s) => format!("{} {s}", r.verb),
                None => r.verb.clone(),
            };
            *verbs.entry(verb).or_default() += 1;
        }
        let seconds = last.time.duration_since(first.time).as_secs_f64();
        out.push(Finding {
            detector: NAME,
            severity: if no_ops.len() >= MANY { Severity::Medium } else { Severity::Low },
            keys: object.key.iter().cloned().collect(),
            revisions: Vec::new(),
            summary: format!(
                "{} sent {} writes to {object} that changed nothing, {} to {}",
                describe(user, agent),
                no_ops.len(),
                first.time_text,
                last.time_text
            ),
            details: json!({
                "object": object,
                "user": user,
                "user_agent": agent,
                "count": no_ops.len(),
                "verbs": verbs,
                "first": first.time_text,
                "last": last.time_text,
                "span_seconds": seconds,
                "per_minute": if seconds > 0.0 { Some(no_ops.len() as f64 * 60.0 / seconds) } else { None },
                "audit_ids": no_ops.iter().take(LISTED).map(|r| &r.audit_id).collect::<Vec<_>>(),
            }),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::detector::Findings;

    /// A request of the aggregation controller answered `second`s in.
    fn request(second: i64, outcome: Outcome) -> AuditedRequest {
        AuditedRequest {
            audit_id: format!("a{second}"),
            user: "system:serviceaccount:kube-system:clusterrole-aggregation-controller".into(),
            user_agent: Some("kube-controller-manager/v1.37.2".into()),
            verb: "patch".into(),
            subresource: None,
            code: Some(200),
            outcome,
            time: jiff::Timestamp::from_second(1_800_000_000 + second).unwrap(),
            time_text: format!("+{second}s"),
            revision: None,
        }
    }

    fn found(requests: &[AuditedRequest]) -> Vec<Finding> {
        let object = AuditedObject {
            api_group: "rbac.authorization.k8s.io".into(),
            resource: "clusterroles".into(),
            namespace: None,
            name: "admin".into(),
            key: Some("/registry/clusterroles/admin".into()),
        };
        Findings::of(|out| detect(&object, requests, out))
    }

    #[test]
    fn no_ops_catching_up_with_a_write_are_not_blind_rewrites() {
        use Outcome::*;
        // A controller starting: each write followed by no-ops from a cache
        // that has not seen it yet.
        let starting: Vec<AuditedRequest> = [0, 1, 2, 20, 21, 40, 45, 50]
            .iter()
            .map(|&s| request(s, if s % 20 == 0 { Wrote } else { NoOp }))
            .collect();
        assert!(found(&starting).is_empty());
        // The same no-ops long after the last write: a blind rewriter.
        let blind = [request(0, Wrote), request(11, NoOp), request(40, NoOp), request(100, NoOp)];
        let f = found(&blind);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].details["count"], 3);
        assert_eq!(f[0].details["first"], "+11s");
        // Only the ones catching up are left out.
        let mixed = [
            request(0, NoOp),
            request(30, Wrote),
            request(31, NoOp),
            request(60, NoOp),
            request(90, NoOp),
        ];
        assert_eq!(found(&mixed)[0].details["audit_ids"], serde_json::json!(["a0", "a60", "a90"]));
        assert!(found(&[request(0, NoOp), request(30, Wrote), request(31, NoOp), request(35, NoOp)]).is_empty());
    }
}

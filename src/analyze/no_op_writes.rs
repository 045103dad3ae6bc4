//! `no-op-writes`: one requester's successful updates and patches of one
//! object that wrote nothing, because the apiserver found nothing to change
//! (reference §9.3): a client or controller that rewrites blindly. It costs
//! the apiserver a read, a conversion and an admission chain each time,
//! and its watchers nothing, so nothing else shows it. Needs `attribute`.
//! Low; medium from [`MANY`] on.

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
    for r in requests.iter().filter(|r| r.outcome == Outcome::NoOp) {
        by_requester.entry(requester(r)).or_default().push(r);
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

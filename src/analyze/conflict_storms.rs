//! `conflict-storms`: one requester's writes to one object failing with
//! 409 Conflict again and again: an update sent with a stale
//! resourceVersion and retried without reading the object again, while
//! other writers win. Each lost round costs a request and delays the
//! requester's change. Needs `attribute`. Medium; high from [`MANY`] on.

use super::detector::{Findings, Registration};
use super::no_op_writes::{describe, requester};
use crate::store::audit::{AuditedObject, AuditedRequest, Outcome};
use crate::store::finding::{Finding, Severity};
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "conflict-storms";

/// Judges each object's audited requests on their own.
pub const DETECTOR: Registration = Registration::audited(NAME, Severity::Medium, detect);

/// Conflicts of one requester on one object before it is a finding.
pub const AT_LEAST: usize = 3;

/// Conflicts from which a finding is high.
pub const MANY: usize = 50;

/// Winning writes a finding lists, at most.
const LISTED: usize = 20;

pub fn detect(object: &AuditedObject, requests: &[AuditedRequest], out: &mut Findings) {
    // Objects the database holds, as every detector judges.
    if object.key.is_none() {
        return;
    }
    let mut by_requester: BTreeMap<(&str, Option<&str>), Vec<&AuditedRequest>> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.code == Some(409)) {
        by_requester.entry(requester(r)).or_default().push(r);
    }
    for ((user, agent), conflicts) in by_requester {
        if conflicts.len() < AT_LEAST {
            continue;
        }
        let (first, last) = (conflicts[0], conflicts[conflicts.len() - 1]);
        // The writes that won in the meantime, whoever sent them.
        let won: Vec<&AuditedRequest> = requests
            .iter()
            .filter(|r| r.outcome == Outcome::Wrote && r.time >= first.time && r.time <= last.time)
            .collect();
        let own_wins = won.iter().filter(|r| requester(r) == (user, agent)).count();
        out.push(Finding {
            detector: NAME,
            severity: if conflicts.len() >= MANY { Severity::High } else { Severity::Medium },
            keys: object.key.iter().cloned().collect(),
            revisions: won.iter().filter_map(|r| r.revision).collect(),
            summary: format!(
                "{} lost {} writes to {object} to conflicts (409), {} to {}; {} writes won meanwhile",
                describe(user, agent),
                conflicts.len(),
                first.time_text,
                last.time_text,
                won.len()
            ),
            details: json!({
                "object": object,
                "user": user,
                "user_agent": agent,
                "count": conflicts.len(),
                "first": first.time_text,
                "last": last.time_text,
                "span_seconds": last.time.duration_since(first.time).as_secs_f64(),
                "own_writes_won": own_wins,
                "writes_won": won.len(),
                "won": won.iter().take(LISTED).map(|r| json!({
                    "user": r.user, "user_agent": r.user_agent, "verb": r.verb,
                    "revision": r.revision, "time": r.time_text,
                })).collect::<Vec<_>>(),
            }),
        });
    }
}

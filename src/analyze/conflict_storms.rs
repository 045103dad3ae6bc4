//! `conflict-storms`: one requester's writes to one object failing with
//! 409 Conflict again and again: an update sent with a stale
//! resourceVersion and retried without reading the object again, while
//! other writers win. Each lost round costs a request and delays the
//! requester's change. Needs `attribute`. Medium; high from [`MANY`] on.
//!
//! A single 409 followed by the requester's own successful write is
//! optimistic concurrency working: controllers race their own informers
//! and each other, and a real deployment controller gets dozens over a few
//! rollouts, each retried with the object read again. So only a run of
//! [`AT_LEAST`] conflicts with no successful write of the requester in
//! between is a storm; the conflicts each write answered are counted in the
//! finding's details, not judged.

use super::detector::{Findings, Registration};
use super::no_op_writes::{describe, requester};
use crate::store::audit::{AuditedObject, AuditedRequest, Outcome};
use crate::store::finding::{Finding, Severity};
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "conflict-storms";

/// Judges each object's audited requests on their own.
pub const DETECTOR: Registration = Registration::audited(NAME, Severity::Medium, detect);

/// Conflicts of one requester on one object, in a row without a write of
/// its own that succeeded, before it is a finding.
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
    // Each requester's requests, in the order they were answered.
    let mut by_requester: BTreeMap<(&str, Option<&str>), Vec<&AuditedRequest>> = BTreeMap::new();
    for r in requests {
        by_requester.entry(requester(r)).or_default().push(r);
    }
    for ((user, agent), own) in by_requester {
        let total = own.iter().filter(|r| r.code == Some(409)).count();
        let storms = runs_of_conflicts(&own);
        let conflicts: Vec<&AuditedRequest> = storms.iter().flatten().copied().collect();
        if conflicts.is_empty() {
            continue;
        }
        let longest = storms.iter().map(Vec::len).max().unwrap_or(0);
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
                "{} lost {} writes to {object} to conflicts (409), up to {longest} in a row without a write of its own, {} to {}; {} writes won meanwhile",
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
                "longest_run": longest,
                "conflicts_in_all": total,
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

/// The runs of at least [`AT_LEAST`] conflicts among one requester's
/// requests (in order) that no successful write of its own interrupts. A
/// success that changed nothing (a no-op) does not end a run: the requester
/// still has not got its change in.
fn runs_of_conflicts<'r>(own: &[&'r AuditedRequest]) -> Vec<Vec<&'r AuditedRequest>> {
    let mut runs = Vec::new();
    let mut run: Vec<&AuditedRequest> = Vec::new();
    for &r in own {
        let succeeded = r.code.is_some_and(|c| (200..300).contains(&c)) && r.outcome != Outcome::NoOp;
        if r.code == Some(409) {
            run.push(r);
        } else if succeeded {
            if run.len() >= AT_LEAST {
                runs.push(std::mem::take(&mut run));
            }
            run.clear();
        }
    }
    if run.len() >= AT_LEAST {
        runs.push(run);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(n: u32, code: u16, outcome: Outcome) -> AuditedRequest {
        AuditedRequest {
            audit_id: format!("a{n}"),
            user: "system:serviceaccount:kube-system:deployment-controller".into(),
            user_agent: None,
            verb: "update".into(),
            subresource: Some("status".into()),
            code: Some(code),
            outcome,
            time: jiff::Timestamp::from_second(1_800_000_000 + i64::from(n)).unwrap(),
            time_text: String::new(),
            revision: None,
        }
    }

    #[test]
    fn a_conflict_retried_successfully_is_routine_a_run_of_them_is_a_storm() {
        use Outcome::*;
        // A controller racing its informer: each 409 followed by its own
        // successful write, five times over.
        let routine: Vec<AuditedRequest> = (0..10)
            .map(|n| if n % 2 == 0 { request(n, 409, Failed) } else { request(n, 200, Wrote) })
            .collect();
        assert!(runs_of_conflicts(&routine.iter().collect::<Vec<_>>()).is_empty());
        // Three in a row, no-ops between them: a storm; a fourth after a win
        // starts over.
        let storm = [
            request(0, 409, Failed),
            request(1, 200, NoOp),
            request(2, 409, Failed),
            request(3, 409, Failed),
            request(4, 200, Wrote),
            request(5, 409, Failed),
        ];
        let runs = runs_of_conflicts(&storm.iter().collect::<Vec<_>>());
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].iter().map(|r| r.audit_id.as_str()).collect::<Vec<_>>(), ["a0", "a2", "a3"]);
    }
}

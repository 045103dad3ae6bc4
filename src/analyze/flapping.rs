//! `flapping`: a field whose value returns to an earlier value within one key
//! generation (A → B → A), again and again: two writers fighting over it, or
//! a stale writer undoing another's change. Reported from a number of
//! returns on, with the values (hashes where sensitive), the revisions and
//! the field managers on each side. A desired-state field (anything outside
//! `status`) is a finding however many wrote it; a `status` field only when
//! its values came from more than one field manager, since one controller's
//! counters going 3 → 4 → 3 during a rollout are its job, not a fight.

use super::detector::{Detector, Findings, KeyInput, Reads, Make, Registration};
use crate::source::Revision;
use crate::canon::path::{FieldPath, MANAGED_FIELDS};
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::{Gap, Looked, StoreError};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

pub const NAME: &str = "flapping";

/// Follows each field of each key's history.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::Medium,
    topic: None,
    make: Make::With(|_| Ok(Box::new(Flapping))),
};

struct Flapping;

impl Detector for Flapping {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        let values = &mut *input.values;
        out.extend(detect(input.history, DEFAULT_MIN_RETURNS, input.gaps, &mut |r, p| {
            match values.at(r.semantic_sha256.as_deref(), p) {
                Looked::Found(Value::Null) | Looked::Redacted | Looked::Absent => None,
                Looked::Found(v) => Some(v.clone()),
            }
        }));
        Ok(())
    }
}

/// Returns to an earlier value needed for a finding.
pub const DEFAULT_MIN_RETURNS: usize = 2;

/// Paths whose changes are bookkeeping, not someone's intent.
fn ignored(path: &FieldPath) -> bool {
    matches!(
        path.as_str(),
        MANAGED_FIELDS | "metadata.generation" | "status.observedGeneration"
    )
}

/// One change of the field: the revision and the value hash it took.
struct Step<'a> {
    row: &'a ObjectRevision,
    hash: Option<[u8; 16]>,
}

fn hex(h: &Option<[u8; 16]>) -> String {
    h.map(|h| crate::hex::short(&h))
        .unwrap_or_else(|| "(absent)".into())
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(39).collect::<String>())
    } else {
        s
    }
}

/// Findings for one key's history (oldest first). `value_at(row, path)`
/// gives a field's value when it may be shown; `gaps` are the revision
/// ranges lost to compaction.
pub fn detect(
    history: &[ObjectRevision],
    min_returns: usize,
    gaps: &[Gap],
    value_at: &mut dyn FnMut(&ObjectRevision, &FieldPath) -> Option<Value>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut generations: BTreeMap<Revision, Vec<&ObjectRevision>> = BTreeMap::new();
    for r in history.iter().filter(|r| !r.deleted && !r.fields.is_empty()) {
        generations.entry(r.create_revision).or_default().push(r);
    }
    for rows in generations.values() {
        // Each return needs a step back to an earlier value: fewer
        // revisions than that cannot flap.
        if rows.len() < min_returns + 2 {
            continue;
        }
        // Leaf paths: a path with children is covered by them.
        let paths = every_path(rows);
        let leaves: Vec<&FieldPath> = (0..paths.len())
            .filter(|&i| !ignored(paths[i]) && !has_children(&paths[i + 1..], paths[i]))
            .map(|i| paths[i])
            .collect();
        // The leaves and each revision's fields are both in path order:
        // one pass over each revision's fields finds every leaf's hash.
        let mut cursors: Vec<_> = rows.iter().map(|r| r.fields.iter().peekable()).collect();
        for path in leaves {
            let mut steps: Vec<Step> = Vec::new();
            for (r, fields) in rows.iter().zip(cursors.iter_mut()) {
                while fields.next_if(|(p, _)| *p < path).is_some() {}
                let hash = fields.peek().filter(|(p, _)| *p == path).map(|(_, h)| **h);
                if steps.last().is_none_or(|s| s.hash != hash) {
                    steps.push(Step { row: r, hash });
                }
            }
            let returns: Vec<usize> = (2..steps.len())
                .filter(|&i| steps[..i - 1].iter().any(|s| s.hash == steps[i].hash))
                .collect();
            if returns.len() < min_returns || (is_status(path) && writers(path, &steps) < 2) {
                continue;
            }
            findings.push(finding(path, &steps, returns.len(), gaps, value_at));
        }
    }
    findings
}

/// Every path any of `rows` has a field at, sorted: the revisions' own
/// sorted paths merged, not sorted again.
fn every_path<'a>(rows: &[&'a ObjectRevision]) -> Vec<&'a FieldPath> {
    let mut all: Vec<&FieldPath> = Vec::new();
    for r in rows {
        let mut merged = Vec::with_capacity(all.len().max(r.fields.len()));
        let (mut a, mut b) = (all.iter().copied().peekable(), r.fields.keys().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => a.next(),
                (Some(x), Some(y)) if y < x => b.next(),
                (Some(_), Some(_)) => {
                    b.next();
                    a.next()
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            merged.extend(next);
        }
        all = merged;
    }
    all
}

/// Whether a path of `after` (the paths sorted after `p`) lies under `p`.
/// Every path under it starts with its text, so those come first.
fn has_children(after: &[&FieldPath], p: &FieldPath) -> bool {
    after
        .iter()
        .take_while(|q| q.as_str().starts_with(p.as_str()))
        .any(|q| q.is_under(p))
}

/// Whether `path` is observed state.
fn is_status(path: &FieldPath) -> bool {
    path.top().as_deref() == Some("status")
}

/// How many field managers wrote the changes of `path`.
fn writers(path: &FieldPath, steps: &[Step]) -> usize {
    let by: BTreeSet<&String> = steps[1..]
        .iter()
        .flat_map(|s| s.row.changed_by.get(path).into_iter().flatten())
        .collect();
    by.len()
}

fn finding(
    path: &FieldPath,
    steps: &[Step],
    returns: usize,
    gaps: &[Gap],
    value_at: &mut dyn FnMut(&ObjectRevision, &FieldPath) -> Option<Value>,
) -> Finding {
    let first = steps[0].row;
    let shown: Vec<String> = steps
        .iter()
        .take(12)
        .map(|s| {
            value_at(s.row, path)
                .map(|v| short(&v))
                .unwrap_or_else(|| hex(&s.hash))
        })
        .collect();
    let mut sides: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in &steps[1..] {
        let value = value_at(s.row, path)
            .map(|v| short(&v))
            .unwrap_or_else(|| hex(&s.hash));
        let by = s.row.changed_by.get(path).cloned().unwrap_or_default();
        sides.entry(value).or_default().extend(by);
    }
    let managers: BTreeSet<&String> = sides.values().flatten().collect();
    let (from, to) = (
        steps[0].row.mod_revision,
        steps.last().expect("steps").row.mod_revision,
    );
    let lost: Vec<&Gap> = gaps
        .iter()
        .filter(|g| g.from_revision <= to && g.to_revision >= from)
        .collect();
    let coverage = if lost.is_empty() {
        String::new()
    } else {
        let ranges: Vec<String> = lost.iter().map(ToString::to_string).collect();
        format!(
            "; coverage partial: revisions {} lost to compaction",
            ranges.join(", ")
        )
    };
    let writers = match managers.len() {
        0 => "; managedFields name no writer, so a fight cannot be told from one writer's changes".to_string(),
        1 => format!(
            ", written by {} alone: one writer's changes, not a fight",
            managers.first().expect("one manager")
        ),
        _ => format!(
            ", written by {}",
            managers
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(" and by ")
        ),
    };
    Finding {
        detector: NAME,
        severity: if managers.len() > 1 { Severity::Medium } else { Severity::Info },
        keys: vec![first.key.clone()],
        revisions: steps.iter().map(|s| s.row.mod_revision).collect(),
        summary: format!(
            "{path} of {} flipped {}{} ({returns} returns to an earlier value, revisions {from}-{to}){writers}{coverage}",
            first.object(),
            shown.join("→"),
            if steps.len() > 12 { "→…" } else { "" }
        ),
        details: serde_json::json!({
            "object": first.object(), "path": path, "returns": returns,
            "changes": steps.iter().map(|s| serde_json::json!({
                "revision": s.row.mod_revision, "value_hash": hex(&s.hash),
                "value": value_at(s.row, path), "managers": s.row.changed_by.get(path)})).collect::<Vec<_>>(),
            "managers_by_value": sides,
            "coverage": if lost.is_empty() { "complete" } else { "partial" },
            "gaps": lost,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(n: i64, replicas: u8, by: &str) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/deployments/ns/web".into(),
            mod_revision: Revision(n),
            create_revision: Revision(1),
            kind: Some("Deployment".into()),
            namespace: Some("ns".into()),
            name: Some("web".into()),
            fields: BTreeMap::from([
                (FieldPath::field("spec"), [replicas + 100; 16]),
                (FieldPath::fields(["spec", "replicas"]), [replicas; 16]),
            ]),
            changed_by: BTreeMap::from([(FieldPath::fields(["spec", "replicas"]), vec![by.to_string()])]),
            ..Default::default()
        }
    }

    fn values(r: &ObjectRevision, _: &FieldPath) -> Option<Value> {
        Some(Value::from(r.fields["spec.replicas"][0]))
    }

    #[test]
    fn alternating_values_flap_and_monotonic_ones_do_not() {
        let flips = [
            rev(1, 3, "a"),
            rev(2, 5, "b"),
            rev(3, 3, "a"),
            rev(4, 5, "b"),
            rev(5, 3, "a"),
        ];
        let f = detect(&flips, DEFAULT_MIN_RETURNS, &[], &mut values);
        assert_eq!(f.len(), 1, "only the leaf spec.replicas");
        assert_eq!(f[0].summary, "spec.replicas of Deployment ns/web flipped 3→5→3→5→3 (3 returns to an earlier value, revisions 1-5), written by a and by b");
        assert_eq!(f[0].severity, Severity::Medium);
        let up = [rev(1, 1, "a"), rev(2, 2, "a"), rev(3, 3, "a")];
        assert!(detect(&up, DEFAULT_MIN_RETURNS, &[], &mut values).is_empty());
        let gap = Gap {
            from_revision: Revision(2),
            to_revision: Revision(2),
        };
        let partial = detect(&flips, DEFAULT_MIN_RETURNS, &[gap], &mut values);
        assert!(
            partial[0]
                .summary
                .ends_with("coverage partial: revisions 2-2 lost to compaction"),
            "{}",
            partial[0].summary
        );
    }

    /// The same flips on `status.replicas`.
    fn status(n: i64, replicas: u8, by: &str) -> ObjectRevision {
        let mut r = rev(n, replicas, by);
        r.fields = BTreeMap::from([
            (FieldPath::field("status"), [replicas + 100; 16]),
            (FieldPath::fields(["status", "replicas"]), [replicas; 16]),
        ]);
        r.changed_by = BTreeMap::from([(FieldPath::fields(["status", "replicas"]), vec![by.to_string()])]);
        r
    }

    #[test]
    fn status_counters_of_one_writer_are_not_a_fight_two_writers_are() {
        let rollout: Vec<ObjectRevision> = [3, 4, 3, 4, 3]
            .iter()
            .enumerate()
            .map(|(i, &n)| status(i as i64 + 1, n, "kube-controller-manager"))
            .collect();
        assert!(detect(&rollout, DEFAULT_MIN_RETURNS, &[], &mut values).is_empty());
        let fight = [
            status(1, 3, "a"),
            status(2, 4, "b"),
            status(3, 3, "a"),
            status(4, 4, "b"),
            status(5, 3, "a"),
        ];
        let f = detect(&fight, DEFAULT_MIN_RETURNS, &[], &mut |_, _| None);
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.starts_with("status.replicas"), "{}", f[0].summary);
        // Desired state flips with one writer are reported as information.
        let one = [
            rev(1, 3, "a"),
            rev(2, 5, "a"),
            rev(3, 3, "a"),
            rev(4, 5, "a"),
            rev(5, 3, "a"),
        ];
        let f = detect(&one, DEFAULT_MIN_RETURNS, &[], &mut values);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].summary.ends_with("written by a alone: one writer's changes, not a fight"), "{}", f[0].summary);
    }
}

//! `generation-mismatch`: `spec` changed while `metadata.generation` did not
//! increase (for objects that carry a generation), and
//! `status.observedGeneration` going backwards (a stale status writer
//! overwrote newer status).
//!
//! One spec write is meant to leave the generation alone: the scheduler's
//! `pods/binding`, which sets a Pod's `spec.nodeName` (with its
//! `PodScheduled` condition) in one revision and keeps `metadata.generation`
//! (kube-apiserver's `pkg/registry/core/pod/storage`, the binding REST's
//! `setPodNodeAndMetadata`). Every scheduled Pod has one; it is not a
//! finding.

use super::detector::Registration;
use crate::source::Revision;
use crate::canon::path::FieldPath;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;

pub const NAME: &str = "generation-mismatch";

/// Judges each key's history on its own.
pub const DETECTOR: Registration = Registration::per_key(NAME, Severity::Medium, detect);

/// A finding for one key's history (oldest first), if it has mismatches.
pub fn detect(history: &[ObjectRevision]) -> Option<Finding> {
    let mut events = Vec::new();
    let mut revisions = Vec::new();
    let mut stale_status = false;
    for pair in history.windows(2) {
        let (prev, cur) = (&pair[0], &pair[1]);
        if prev.deleted || cur.deleted || prev.create_revision != cur.create_revision {
            continue;
        }
        let spec_changed = cur
            .changed_paths
            .iter()
            .any(|p| p.top().as_deref() == Some("spec"))
            && !is_binding(prev, cur);
        if let (true, Some(before), Some(after)) = (spec_changed, prev.generation, cur.generation) {
            if before > 0 && after <= before {
                let by: Vec<String> = cur
                    .changed_paths
                    .iter()
                    .filter_map(|p| cur.changed_by.get(p))
                    .flatten()
                    .cloned()
                    .collect();
                events.push(
                    serde_json::json!({"revision": cur.mod_revision, "kind": "spec-without-generation",
                    "generation": after, "changed_paths": cur.changed_paths, "managers": by}),
                );
                revisions.push(cur.mod_revision);
            }
        }
        if let (Some(before), Some(after)) = (prev.facts.observed_generation, cur.facts.observed_generation) {
            if after < before {
                let by = cur
                    .changed_by
                    .get(&FieldPath::fields(["status", "observedGeneration"]))
                    .cloned()
                    .unwrap_or_default();
                events.push(
                    serde_json::json!({"revision": cur.mod_revision, "kind": "observed-generation-decreased",
                    "from": before, "to": after, "managers": by}),
                );
                revisions.push(cur.mod_revision);
                stale_status = true;
            }
        }
    }
    let last = events.last()?.clone();
    finding(history, events, revisions, stale_status, &last)
}

/// Whether `cur` is the scheduler binding a Pod to a node: the only spec
/// change is `spec.nodeName`, which `prev` did not have.
fn is_binding(prev: &ObjectRevision, cur: &ObjectRevision) -> bool {
    let node = FieldPath::fields(["spec", "nodeName"]);
    cur.resource.as_deref() == Some("pods")
        && cur.group.as_deref().unwrap_or_default().is_empty()
        && !prev.fields.contains_key(&node)
        && cur.fields.contains_key(&node)
        && cur
            .changed_paths
            .iter()
            .filter(|p| p.top().as_deref() == Some("spec"))
            .all(|p| *p == node)
}

fn finding(
    history: &[ObjectRevision],
    events: Vec<serde_json::Value>,
    revisions: Vec<Revision>,
    stale_status: bool,
    last: &serde_json::Value,
) -> Option<Finding> {
    let object = history
        .iter()
        .rev()
        .find(|r| !r.deleted)
        .map(|r| r.object())
        .unwrap_or_else(|| history[0].key.clone());
    let describe = |e: &serde_json::Value| match e["kind"].as_str() {
        Some("observed-generation-decreased") => {
            format!(
                "status.observedGeneration went {} → {} at revision {}",
                e["from"], e["to"], e["revision"]
            )
        }
        _ => format!(
            "spec changed at revision {} without a generation bump (generation stays {})",
            e["revision"], e["generation"]
        ),
    };
    let more = if events.len() > 1 {
        format!(" and {} more", events.len() - 1)
    } else {
        String::new()
    };
    Some(Finding {
        detector: NAME,
        severity: if stale_status {
            Severity::High
        } else {
            Severity::Medium
        },
        keys: vec![history[0].key.clone()],
        revisions,
        summary: format!("{object}: {}{more}", describe(last)),
        details: serde_json::json!({"object": object, "events": events}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn rev(n: i64, generation: i64, observed: i64, spec_changed: bool) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/deployments/ns/web".into(),
            mod_revision: Revision(n),
            create_revision: Revision(1),
            kind: Some("Deployment".into()),
            namespace: Some("ns".into()),
            name: Some("web".into()),
            generation: Some(generation),
            facts: crate::canon::facts::ObjectFacts {
                observed_generation: Some(observed),
                ..Default::default()
            },
            changed_paths: if spec_changed {
                vec![FieldPath::fields(["spec", "replicas"])]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    /// A Pod's revision with `spec.nodeName` when `node` is set and spec
    /// changes at `changed`.
    fn pod(n: i64, node: bool, changed: &[&str]) -> ObjectRevision {
        let mut fields = BTreeMap::from([(FieldPath::fields(["spec", "containers"]), [1; 16])]);
        if node {
            fields.insert(FieldPath::fields(["spec", "nodeName"]), [2; 16]);
        }
        ObjectRevision {
            key: "/registry/pods/ns/web-1".into(),
            resource: Some("pods".into()),
            group: Some(String::new()),
            mod_revision: Revision(n),
            create_revision: Revision(1),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some("web-1".into()),
            generation: Some(1),
            changed_paths: changed.iter().map(|p| FieldPath::fields(["spec", p])).collect(),
            fields,
            ..Default::default()
        }
    }

    #[test]
    fn the_schedulers_binding_is_not_a_mismatch_other_pod_spec_changes_are() {
        let bound = [pod(1, false, &[]), pod(2, true, &["nodeName"])];
        assert!(detect(&bound).is_none());
        // The node changed again, or something else changed with it.
        assert!(detect(&[pod(1, true, &[]), pod(2, true, &["nodeName"])]).is_some());
        assert!(detect(&[pod(1, false, &[]), pod(2, true, &["nodeName", "containers"])]).is_some());
        // The same change on a resource the binding does not write.
        let mut other = bound.clone();
        other[1].resource = Some("widgets".into());
        assert!(detect(&other).is_some());
    }

    #[test]
    fn spec_without_bump_and_observed_generation_going_back() {
        assert!(detect(&[rev(1, 1, 1, false), rev(2, 2, 1, true), rev(3, 2, 2, false)]).is_none());
        let f = detect(&[rev(1, 1, 1, false), rev(2, 1, 1, true)]).unwrap();
        assert_eq!(
            f.summary,
            "Deployment ns/web: spec changed at revision 2 without a generation bump (generation stays 1)"
        );
        let g = detect(&[rev(1, 4, 4, false), rev(2, 4, 3, false)]).unwrap();
        assert_eq!(
            (g.severity, g.summary.as_str()),
            (
                Severity::High,
                "Deployment ns/web: status.observedGeneration went 4 → 3 at revision 2"
            )
        );
    }
}

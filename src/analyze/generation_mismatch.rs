//! `generation-mismatch`: `spec` changed while `metadata.generation` did not
//! increase (for objects that carry a generation), and
//! `status.observedGeneration` going backwards (a stale status writer
//! overwrote newer status).

use super::detector::Registration;
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
            .any(|p| p.top().as_deref() == Some("spec"));
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
        summary: format!("{object}: {}{more}", describe(&last)),
        details: serde_json::json!({"object": object, "events": events}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(n: i64, generation: i64, observed: i64, spec_changed: bool) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/deployments/ns/web".into(),
            mod_revision: n,
            create_revision: 1,
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

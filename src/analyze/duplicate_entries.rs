//! `duplicate-entries`: repeated entries within one revision's lists
//! (ownerReferences, finalizers, RBAC subjects, pod-spec lists keyed by
//! name), with the revision where each first appeared and how the list grew.

use super::detector::{Detector, Findings, KeyInput, Reads, Make, Registration};
use crate::source::Revision;
use crate::canon::duplicates::{list_sizes, Duplicate};
use crate::canon::path::FieldPath;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::StoreError;
use std::collections::BTreeMap;

pub const NAME: &str = "duplicate-entries";

/// Reads each key's recorded repeats, and the list sizes of its stored
/// contents when it has any.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::Medium,
    topic: None,
    make: Make::With(|_| Ok(Box::new(Repeats))),
};

struct Repeats;

impl Detector for Repeats {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        if !input.history.iter().any(|r| r.duplicates.is_some()) {
            return Ok(());
        }
        let mut sizes = BTreeMap::new();
        for r in input.history {
            if let Some(hash) = r.semantic_sha256.as_deref() {
                if let Some(value) = input.store.canonical_value(hash)? {
                    sizes.insert(r.mod_revision, list_sizes(&value));
                }
            }
        }
        let found = detect(input.history, &sizes).map_err(|what| input.damaged(what))?;
        out.extend(found);
        Ok(())
    }
}

/// A finding for one key's history (oldest first). `sizes` gives, per
/// revision, the sizes of the object's top-level lists. A stored list of
/// repeats that does not parse is an error naming it.
pub fn detect(
    history: &[ObjectRevision],
    sizes: &BTreeMap<Revision, BTreeMap<FieldPath, usize>>,
) -> Result<Option<Finding>, String> {
    let mut first_seen: BTreeMap<(FieldPath, String), (Revision, usize)> = BTreeMap::new();
    let mut last_with: Option<&ObjectRevision> = None;
    for r in history {
        let Some(json) = &r.duplicates else { continue };
        let dups: Vec<Duplicate> = serde_json::from_str(json)
            .map_err(|e| format!("revisions.duplicates of {} at revision {}: {e}", r.key, r.mod_revision))?;
        for d in dups {
            first_seen
                .entry((d.path, d.entry))
                .or_insert((r.mod_revision, d.count));
        }
        last_with = Some(r);
    }
    let Some(last) = last_with else {
        return Ok(None);
    };
    let severity = if first_seen
        .keys()
        .any(|(p, _)| matches!(p.top().as_deref(), Some("metadata" | "subjects")))
    {
        Severity::Medium
    } else {
        Severity::Low
    };
    let paths: Vec<&FieldPath> = first_seen.keys().map(|(p, _)| p).collect();
    let growth: BTreeMap<&FieldPath, Vec<(Revision, usize)>> = paths
        .iter()
        .map(|p| {
            let mut steps: Vec<(Revision, usize)> = Vec::new();
            for (rev, s) in sizes {
                if let Some(&n) = s.get(*p) {
                    if steps.last().is_none_or(|(_, prev)| *prev != n) {
                        steps.push((*rev, n));
                    }
                }
            }
            (*p, steps)
        })
        .collect();
    let first_rev = first_seen
        .values()
        .map(|(r, _)| *r)
        .min()
        .unwrap_or(last.mod_revision);
    let listed: Vec<String> = first_seen
        .iter()
        .map(|((path, entry), (rev, count))| format!("{path}: {entry} ×{count} since revision {rev}"))
        .collect();
    let grew: Vec<String> = growth
        .iter()
        .filter(|(_, steps)| steps.len() > 1)
        .map(|(p, steps)| {
            let s: Vec<String> = steps.iter().map(|(r, n)| format!("{n}@{r}")).collect();
            format!("{p} grew {}", s.join(" → "))
        })
        .collect();
    Ok(Some(Finding {
        detector: NAME,
        severity,
        keys: vec![last.key.clone()],
        revisions: first_seen
            .values()
            .map(|(r, _)| *r)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        summary: format!(
            "{} has repeated list entries ({}){}",
            last.object(),
            listed.join("; "),
            if grew.is_empty() {
                String::new()
            } else {
                format!("; {}", grew.join("; "))
            }
        ),
        details: serde_json::json!({
            "object": last.object(),
            "first_revision": first_rev,
            "duplicates": first_seen.iter().map(|((path, entry), (rev, count))| serde_json::json!({
                "path": path, "entry": entry, "count": count, "first_revision": rev})).collect::<Vec<_>>(),
            "growth": growth.iter().map(|(p, steps)| serde_json::json!({"path": p, "sizes": steps.iter().map(|(r, n)| serde_json::json!({"revision": r, "size": n})).collect::<Vec<_>>()})).collect::<Vec<_>>(),
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_first_revision_and_the_growth() {
        let rev = |n: i64, dups: Option<&str>| ObjectRevision {
            key: "/registry/deployments/ns/web".into(),
            mod_revision: Revision(n),
            create_revision: Revision(2),
            kind: Some("Deployment".into()),
            namespace: Some("ns".into()),
            name: Some("web".into()),
            duplicates: dups.map(str::to_string),
            ..Default::default()
        };
        let dup = r#"[{"path":"metadata.ownerReferences","entry":"uid a","count":2}]"#;
        let history = [rev(2, None), rev(5, Some(dup)), rev(6, Some(dup))];
        let sizes = BTreeMap::from([
            (Revision(2), BTreeMap::from([("metadata.ownerReferences".parse().unwrap(), 1)])),
            (Revision(5), BTreeMap::from([("metadata.ownerReferences".parse().unwrap(), 2)])),
            (Revision(6), BTreeMap::from([("metadata.ownerReferences".parse().unwrap(), 2)])),
        ]);
        let f = detect(&history, &sizes).unwrap().unwrap();
        assert_eq!((f.severity, f.revisions.clone()), (Severity::Medium, vec![Revision(5)]));
        assert_eq!(
            f.summary,
            "Deployment ns/web has repeated list entries (metadata.ownerReferences: uid a ×2 since revision 5); metadata.ownerReferences grew 1@2 → 2@5"
        );
        assert!(detect(&history[..1], &sizes).unwrap().is_none());
    }

    #[test]
    fn a_stored_list_that_does_not_parse_is_named_not_skipped() {
        let r = ObjectRevision {
            key: "/registry/pods/ns/p".into(),
            mod_revision: Revision(7),
            duplicates: Some("[{\"path\": \"data..x\"}]".into()),
            ..Default::default()
        };
        let e = detect(&[r], &BTreeMap::new()).unwrap_err();
        assert!(e.starts_with("revisions.duplicates of /registry/pods/ns/p at revision 7: "), "{e}");
    }

}

//! `encoding-only`: revisions whose bytes changed but whose content did not:
//! another media type (JSON ↔ protobuf), another storage version, a
//! re-encryption, or a different serialization of the same object.
//!
//! A planned rewrite of every object of a resource (an encryption-key
//! rotation, a storage-version migration, done as the documentation says
//! with `kubectl get -o json | kubectl replace -f -`) re-encodes each object
//! once with the same transition. Those are one `info` finding for the
//! operation, not one per object. Such a rewrite also changes
//! `metadata.managedFields` (and the last-applied annotation), so a
//! revision that changed only those along with its storage version or
//! encryption key counts as one of its re-encodes.

use super::detector::{Detector, Findings, KeyInput, Make, Reads, Registration, Whole};
use crate::source::Revision;
use crate::canon::change::{ChangeCause, ChangeClass};
use crate::canon::path::MANAGED_FIELDS;
use crate::decrypt::label::IDENTITY;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::StoreError;
use std::collections::BTreeMap;

pub const NAME: &str = "encoding-only";

/// Judges each key's history, and gathers the keys a planned rewrite
/// re-encoded once each.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::Low,
    topic: None,
    make: Make::With(|_| Ok(Box::new(EncodingOnly::default()))),
};

/// Objects a planned-rewrite finding names; the count is always exact.
const OBJECTS_SHOWN: usize = 10;

/// Keys re-encoded exactly once, by (resource, cause, transition).
#[derive(Default)]
struct EncodingOnly {
    rewrites: BTreeMap<(String, &'static str, String), Rewrite>,
}

/// The keys one transition re-encoded once each.
struct Rewrite {
    /// The first key's own finding, for a transition only it had.
    alone: Option<Finding>,
    count: usize,
    objects: Vec<String>,
    keys: Vec<String>,
    revisions: (Revision, Revision),
}

impl Detector for EncodingOnly {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        let history = input.history;
        let own = detect(history);
        let Some((group, r)) = once_reencoded(history) else {
            out.extend(own);
            return Ok(());
        };
        let rewrite = self.rewrites.entry(group).or_insert_with(|| Rewrite {
            alone: None,
            count: 0,
            objects: Vec::new(),
            keys: Vec::new(),
            revisions: (r.mod_revision, r.mod_revision),
        });
        if rewrite.count == 0 {
            rewrite.alone = own;
        }
        rewrite.count += 1;
        if rewrite.objects.len() < OBJECTS_SHOWN {
            rewrite.objects.push(r.object());
            rewrite.keys.push(r.key.clone());
        }
        rewrite.revisions = (rewrite.revisions.0.min(r.mod_revision), rewrite.revisions.1.max(r.mod_revision));
        Ok(())
    }

    fn finish(self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        for ((resource, cause, change), rewrite) in self.rewrites {
            if rewrite.count == 1 {
                out.extend(rewrite.alone);
                continue;
            }
            let (from, to) = rewrite.revisions;
            let more = match rewrite.count.saturating_sub(rewrite.objects.len()) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            out.push(Finding {
                detector: NAME,
                severity: Severity::Info,
                keys: rewrite.keys,
                revisions: vec![from, to],
                summary: format!(
                    "{} {resource} rewritten once each without a content change ({cause}: {change}) at revisions {from}-{to}: a planned rewrite of every object, as a key rotation or a storage-version migration does ({}{more})",
                    rewrite.count,
                    rewrite.objects.join(", ")
                ),
                details: serde_json::json!({
                    "resource": resource, "cause": cause, "change": change, "count": rewrite.count,
                    "from_revision": from, "to_revision": to, "objects": rewrite.objects,
                }),
            });
        }
    }
}

/// When `history`'s only re-encode is one revision that changed its
/// storage version, encryption or media type and nothing else of its
/// content (but for managedFields and annotations, which a `kubectl
/// replace` rewrite changes): its (resource, cause, transition) and that
/// revision.
fn once_reencoded(history: &[ObjectRevision]) -> Option<((String, &'static str, String), &ObjectRevision)> {
    let mut found = None;
    for (i, r) in history.iter().enumerate().skip(1) {
        let prev = &history[i - 1];
        if r.deleted || prev.deleted || r.create_revision != prev.create_revision {
            continue;
        }
        let cause = if r.api_version != prev.api_version {
            ChangeCause::StorageVersion
        } else if r.encryption != prev.encryption {
            ChangeCause::Encryption
        } else if r.encoding != prev.encoding {
            ChangeCause::MediaType
        } else {
            if r.class == Some(ChangeClass::EncodingOnly) {
                return None;
            }
            continue;
        };
        let rewritten = match r.class {
            Some(ChangeClass::EncodingOnly) => true,
            Some(ChangeClass::MetadataOnly) => {
                cause != ChangeCause::MediaType
                    && r.changed_paths
                        .iter()
                        .all(|p| p.as_str() == MANAGED_FIELDS || p.as_str() == "metadata.annotations")
            }
            _ => false,
        };
        if !rewritten {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let mut as_cause = r.clone();
        as_cause.cause = Some(cause);
        found = Some((cause, describe(Some(prev), &as_cause), r));
    }
    let (cause, change, r) = found?;
    let resource = crate::decode::key::qualified(r.resource.as_deref()?, r.group.as_deref().unwrap_or_default());
    Some(((resource, cause.as_str(), change), r))
}

fn describe(prev: Option<&ObjectRevision>, r: &ObjectRevision) -> String {
    let pair = |a: Option<&Option<String>>, b: &Option<String>| {
        format!(
            "{} → {}",
            a.and_then(|a| a.as_deref()).unwrap_or("-"),
            b.as_deref().unwrap_or("-")
        )
    };
    match r.cause {
        Some(ChangeCause::MediaType) => pair(prev.map(|p| &p.encoding), &r.encoding),
        Some(ChangeCause::StorageVersion) => pair(prev.map(|p| &p.api_version), &r.api_version),
        Some(ChangeCause::Encryption) => {
            let label =
                |e: Option<&Option<String>>| e.and_then(|e| e.as_deref()).unwrap_or(IDENTITY).to_string();
            format!(
                "{} → {}",
                label(prev.map(|p| &p.encryption)),
                label(Some(&r.encryption))
            )
        }
        Some(ChangeCause::Serialization | ChangeCause::HashKey) | None => {
            "same encoding, different bytes".to_string()
        }
    }
}

/// A finding for one key's history (oldest first), if it has encoding-only
/// revisions.
pub fn detect(history: &[ObjectRevision]) -> Option<Finding> {
    let hits: Vec<(Option<&ObjectRevision>, &ObjectRevision)> = history
        .iter()
        .enumerate()
        .filter(|(_, r)| r.class == Some(ChangeClass::EncodingOnly))
        .map(|(i, r)| (i.checked_sub(1).map(|p| &history[p]), r))
        .collect();
    let (_, first) = hits.first()?;
    let mut causes: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, r) in &hits {
        *causes
            .entry(r.cause.unwrap_or(ChangeCause::Serialization).as_str())
            .or_default() += 1;
    }
    let n = hits.len();
    // A storage migration re-encodes every object once on purpose; repeated
    // or unexplained re-encodes deserve a look.
    let severity = if n >= 10 {
        Severity::Medium
    } else if causes.keys().all(|c| *c == ChangeCause::StorageVersion.as_str()) {
        Severity::Info
    } else {
        Severity::Low
    };
    let changes: Vec<serde_json::Value> = hits
        .iter()
        .map(|(p, r)| serde_json::json!({"revision": r.mod_revision, "cause": r.cause, "change": describe(*p, r)}))
        .collect();
    let (last_prev, last) = hits.last().expect("non-empty");
    let cause_text: Vec<String> = causes
        .iter()
        .map(|(c, k)| {
            if *k == 1 {
                c.to_string()
            } else {
                format!("{c} ×{k}")
            }
        })
        .collect();
    Some(Finding {
        detector: NAME,
        severity,
        keys: vec![first.key.clone()],
        revisions: hits.iter().map(|(_, r)| r.mod_revision).collect(),
        summary: format!(
            "{} re-encoded {n} time{} without a content change ({}; last: {} at revision {})",
            first.object(),
            if n == 1 { "" } else { "s" },
            cause_text.join(", "),
            describe(*last_prev, last),
            last.mod_revision
        ),
        details: serde_json::json!({"object": first.object(), "count": n, "causes": causes, "changes": changes}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::path::FieldPath;

    /// A Secret `name` created at revision 10 and rewritten at `at` under
    /// key2, its managedFields changed along.
    fn rotated(name: &str, at: i64) -> Vec<ObjectRevision> {
        let base = ObjectRevision {
            key: format!("/registry/secrets/shop/{name}"),
            resource: Some("secrets".into()),
            kind: Some("Secret".into()),
            namespace: Some("shop".into()),
            name: Some(name.into()),
            create_revision: Revision(10),
            ..Default::default()
        };
        vec![
            ObjectRevision {
                mod_revision: Revision(10),
                class: Some(ChangeClass::Create),
                encryption: Some("aescbc:key1".into()),
                ..base.clone()
            },
            ObjectRevision {
                mod_revision: Revision(at),
                class: Some(ChangeClass::MetadataOnly),
                encryption: Some("aescbc:key2".into()),
                changed_paths: vec![FieldPath::parse(MANAGED_FIELDS).unwrap()],
                ..base
            },
        ]
    }

    #[test]
    fn once_reencoded_names_the_transition_of_a_replace() {
        let history = rotated("a", 20);
        let ((resource, cause, change), r) = once_reencoded(&history).unwrap();
        assert_eq!(
            (resource.as_str(), cause, change.as_str(), r.mod_revision),
            ("secrets", "encryption", "aescbc:key1 → aescbc:key2", Revision(20))
        );
        // A real content change along with the new key is not a rewrite.
        let mut edited = rotated("b", 20);
        edited[1].class = Some(ChangeClass::Mixed);
        assert!(once_reencoded(&edited).is_none());
    }

    #[test]
    fn names_the_cause_and_the_transition() {
        let base = ObjectRevision {
            key: "/registry/deployments/shop/web".into(),
            kind: Some("Deployment".into()),
            namespace: Some("shop".into()),
            name: Some("web".into()),
            ..Default::default()
        };
        let old = ObjectRevision {
            mod_revision: Revision(20),
            class: Some(ChangeClass::Create),
            api_version: Some("apps/v1beta2".into()),
            ..base.clone()
        };
        let new = ObjectRevision {
            mod_revision: Revision(30),
            class: Some(ChangeClass::EncodingOnly),
            cause: Some(ChangeCause::StorageVersion),
            api_version: Some("apps/v1".into()),
            ..base
        };
        let f = detect(&[old, new]).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.summary,
            "Deployment shop/web re-encoded 1 time without a content change (storage-version; last: apps/v1beta2 → apps/v1 at revision 30)"
        );
    }
}

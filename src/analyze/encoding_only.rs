//! `encoding-only`: revisions whose bytes changed but whose content did not:
//! another media type (JSON ↔ protobuf), another storage version, a
//! re-encryption, or a different serialization of the same object.

use super::detector::Registration;
use crate::canon::change::{ChangeCause, ChangeClass};
use crate::decrypt::label::IDENTITY;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use std::collections::BTreeMap;

pub const NAME: &str = "encoding-only";

/// Judges each key's history on its own.
pub const DETECTOR: Registration = Registration::per_key(NAME, Severity::Low, detect);

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
            mod_revision: 20,
            class: Some(ChangeClass::Create),
            api_version: Some("apps/v1beta2".into()),
            ..base.clone()
        };
        let new = ObjectRevision {
            mod_revision: 30,
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

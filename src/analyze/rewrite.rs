//! `rewrite`: revisions whose value is byte-identical to the previous one.
//! etcd never skips a put, so each is a write some client made with nothing
//! to change (reference §4: a stale writer, a controller without a no-op
//! check, or the apiserver rewriting a stale encrypted value).

use super::detector::Registration;
use crate::source::Revision;
use crate::canon::change::ChangeClass;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;

pub const NAME: &str = "rewrite";

/// Judges each key's history on its own.
pub const DETECTOR: Registration = Registration::per_key(NAME, Severity::Low, detect);

/// A finding for one key's history (oldest first), if it has rewrites.
pub fn detect(history: &[ObjectRevision]) -> Option<Finding> {
    let rewrites: Vec<&ObjectRevision> = history
        .iter()
        .filter(|r| r.class == Some(ChangeClass::Rewrite))
        .collect();
    let first = rewrites.first()?;
    let revisions: Vec<Revision> = rewrites.iter().map(|r| r.mod_revision).collect();
    let n = revisions.len();
    let severity = if n >= 10 { Severity::Medium } else { Severity::Low };
    let shown: Vec<String> = revisions.iter().take(8).map(Revision::to_string).collect();
    let more = if n > 8 {
        format!(", … {} more", n - 8)
    } else {
        String::new()
    };
    let managers: Vec<&str> = rewrites
        .iter()
        .filter_map(|r| r.facts.managers.as_deref())
        .collect();
    Some(Finding {
        detector: NAME,
        severity,
        keys: vec![first.key.clone()],
        revisions: revisions.clone(),
        summary: format!(
            "{} written {n} time{} with byte-identical content (revision{} {}{more})",
            first.object(),
            if n == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" },
            shown.join(", ")
        ),
        details: serde_json::json!({
            "object": first.object(),
            "count": n,
            "revisions": revisions,
            "encoding": first.encoding,
            "managers": managers,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(n: i64, class: &str) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/configmaps/shop/c".into(),
            mod_revision: Revision(n),
            class: Some(ChangeClass::parse(class).unwrap()),
            kind: Some("ConfigMap".into()),
            namespace: Some("shop".into()),
            name: Some("c".into()),
            ..Default::default()
        }
    }

    #[test]
    fn counts_rewrites_only() {
        assert!(detect(&[rev(1, "create"), rev(2, "spec")]).is_none());
        let f = detect(&[
            rev(1, "create"),
            rev(2, "rewrite"),
            rev(3, "spec"),
            rev(4, "rewrite"),
        ])
        .unwrap();
        assert_eq!((f.severity, f.revisions.clone()), (Severity::Low, vec![Revision(2), Revision(4)]));
        assert_eq!(
            f.summary,
            "ConfigMap shop/c written 2 times with byte-identical content (revisions 2, 4)"
        );
        let many: Vec<_> = (1..=12).map(|n| rev(n, "rewrite")).collect();
        assert_eq!(detect(&many).unwrap().severity, Severity::Medium);
    }
}

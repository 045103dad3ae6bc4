//! `history-invariants`: stored history that breaks a rule etcd itself
//! keeps (the rules etcd's robustness tests check, `tests/robustness/
//! validate/`, and its key index keeps, `server/storage/mvcc/key_index.go`).
//! etcd cannot break them, so a break is a damaged data file, an etcd bug
//! or a store that lost or mixed rows; a shared revision under the prefix
//! is also a multi-key txn, which kube-apiserver never sends. High.
//!
//! Every rule holds whatever the database misses (compaction gaps,
//! `prune`, a narrower `--resource` filter), so history with holes never
//! breaks one:
//!
//! - per key, within one generation (one create revision): a live revision
//!   has version 1 exactly when it is the create (`mod_revision ==
//!   create_revision`), never a create revision after itself, and versions
//!   that count up by at least one and at most the revisions between;
//! - per key, generations follow each other: a later one begins after the
//!   earlier one's last stored write and after a stored tombstone;
//! - per cluster, one revision is one key's write, except tombstones only
//!   (keys deleted together when the lease they share expires, as Events
//!   are).
//!
//! That a create happens only where the key was absent (a tombstone
//! between two generations) is not checked here: compaction can hide the
//! delete, which a run infers instead (`deleted_after`, see
//! `lifecycle::vanished`).

use super::detector::{Detector, Findings, KeyInput, Make, Reads, Registration, Whole};
use crate::source::Revision;
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::shared_revision::{SharedRevision, SharedRevisions};
use crate::store::StoreError;
use serde_json::{json, Value};

pub const NAME: &str = "history-invariants";

/// Judges each key's history, then the revisions keys share.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::High,
    topic: None,
    make: Make::With(|setup| {
        Ok(Box::new(Invariants(
            setup.store.shared_revisions(setup.cluster, LISTED_SHARED)?,
        )))
    }),
};

/// Shared revisions read and made findings of, one each; past it, one
/// finding counts the rest.
pub const LISTED_SHARED: usize = 10_000;

/// Keys a shared-revision finding names in its summary.
const KEYS_NAMED: usize = 3;

struct Invariants(SharedRevisions);

impl Detector for Invariants {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        out.extend(per_key(input.history));
        Ok(())
    }

    fn finish(self: Box<Self>, _: &Whole<'_>, out: &mut Findings) {
        out.extend(shared(&self.0));
    }
}

/// One rule a pair (or one) of a key's stored revisions breaks.
struct Break<'a> {
    rule: &'static str,
    rows: Vec<&'a ObjectRevision>,
}

/// Every break in one key's history (oldest first), as one finding.
pub fn per_key(history: &[ObjectRevision]) -> Option<Finding> {
    let mut breaks: Vec<Break> = Vec::new();
    let mut previous: Option<&ObjectRevision> = None;
    for r in history {
        if !r.deleted {
            if let Some(rule) = alone(r) {
                breaks.push(Break { rule, rows: vec![r] });
            }
        }
        if let Some(p) = previous {
            if let Some(rule) = pair(p, r) {
                breaks.push(Break { rule, rows: vec![p, r] });
            }
        }
        previous = Some(r);
    }
    let first = breaks.first()?;
    let key = first.rows[0].key.clone();
    let mut revisions: Vec<Revision> = breaks
        .iter()
        .flat_map(|b| b.rows.iter().map(|r| r.mod_revision))
        .collect();
    revisions.sort_unstable();
    revisions.dedup();
    let more = match breaks.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more break)".into(),
        n => format!(" (and {n} more breaks)"),
    };
    Some(Finding {
        detector: NAME,
        severity: Severity::High,
        keys: vec![key.clone()],
        revisions,
        summary: format!(
            "{key}: {} at {}{more}",
            first.rule,
            first
                .rows
                .iter()
                .map(|r| quote(r))
                .collect::<Vec<_>>()
                .join(" then ")
        ),
        details: json!({
            "breaks": breaks.iter().map(|b| json!({
                "rule": b.rule,
                "rows": b.rows.iter().map(|r| row(r)).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
    })
}

/// The rule a live revision breaks on its own.
fn alone(r: &ObjectRevision) -> Option<&'static str> {
    if r.create_revision > r.mod_revision {
        Some("a revision created after it was written")
    } else if r.version < 1 {
        Some("a live revision with no version")
    } else if (r.mod_revision == r.create_revision) != (r.version == 1) {
        Some("a create whose version is not 1, or version 1 that is not a create")
    } else {
        None
    }
}

/// The rule two stored revisions of a key in a row break.
fn pair(p: &ObjectRevision, n: &ObjectRevision) -> Option<&'static str> {
    if n.mod_revision <= p.mod_revision {
        return Some("revisions that do not increase");
    }
    if n.deleted {
        return None;
    }
    if p.deleted {
        return (n.create_revision <= p.mod_revision).then_some("a generation that goes on past its tombstone");
    }
    if n.create_revision != p.create_revision {
        return (n.create_revision <= p.mod_revision)
            .then_some("a generation created while an earlier one still held the key");
    }
    let counted = n.version - p.version;
    (counted < 1 || counted > n.mod_revision - p.mod_revision)
        .then_some("versions that do not count the writes between")
}

/// A row as a finding's summary quotes it.
fn quote(r: &ObjectRevision) -> String {
    if r.deleted {
        format!("@{} (delete)", r.mod_revision)
    } else {
        format!(
            "@{} (created @{}, version {})",
            r.mod_revision, r.create_revision, r.version
        )
    }
}

/// A row as a finding's details quote it.
fn row(r: &ObjectRevision) -> Value {
    json!({
        "mod_revision": r.mod_revision,
        "create_revision": r.create_revision,
        "version": r.version,
        "deleted": r.deleted,
    })
}

/// One finding per shared revision listed, and one counting the rest.
pub fn shared(found: &SharedRevisions) -> Vec<Finding> {
    let mut out: Vec<Finding> = found.listed.iter().map(shared_one).collect();
    let rest = found.total.saturating_sub(found.listed.len() as u64);
    if let (true, Some(last)) = (rest > 0, found.listed.last()) {
        out.push(Finding {
            detector: NAME,
            severity: Severity::High,
            keys: Vec::new(),
            revisions: Vec::new(),
            summary: format!(
                "{rest} more revisions after {} are each held by more than one key (not listed one by one)",
                last.revision
            ),
            details: json!({ "unlisted": rest, "after": last.revision }),
        });
    }
    out
}

/// The finding of one revision several keys hold.
fn shared_one(s: &SharedRevision) -> Finding {
    let mut named: Vec<String> = s
        .rows
        .iter()
        .take(KEYS_NAMED)
        .map(|r| {
            let what = if r.deleted { "deleted" } else { "written" };
            format!("{} {what}", r.key)
        })
        .collect();
    if s.rows.len() > KEYS_NAMED {
        named.push(format!("{} more", s.rows.len() - KEYS_NAMED));
    }
    Finding {
        detector: NAME,
        severity: Severity::High,
        keys: s.rows.iter().map(|r| r.key.clone()).collect(),
        revisions: vec![s.revision],
        summary: format!(
            "revision {} wrote {} keys in one txn, which kube-apiserver never sends: {}",
            s.revision,
            s.rows.len(),
            named.join(", ")
        ),
        details: json!({
            "rule": "one revision is one key's write (except keys deleted together)",
            "rows": s.rows.iter().map(|r| json!({
                "key": r.key,
                "create_revision": r.create_revision,
                "version": r.version,
                "deleted": r.deleted,
            })).collect::<Vec<_>>(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::shared_revision::SharedRow;

    fn live(m: i64, c: i64, v: i64) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/configmaps/shop/app".into(),
            mod_revision: Revision(m),
            create_revision: Revision(c),
            version: v,
            ..Default::default()
        }
    }

    fn delete(m: i64, c: i64) -> ObjectRevision {
        ObjectRevision {
            deleted: true,
            ..live(m, c, 0)
        }
    }

    #[test]
    fn histories_etcd_writes_break_nothing_even_with_holes() {
        // Create, two updates, a delete, a create again.
        let whole = [live(5, 5, 1), live(7, 5, 2), live(9, 5, 3), delete(10, 5), live(12, 12, 1)];
        assert!(per_key(&whole).is_none());
        // The same with revisions missing: compaction (history from 7),
        // a prune (9 gone), a hidden delete and create (the generation of
        // 12 follows 7 with no tombstone stored).
        assert!(per_key(&[live(7, 5, 2), live(12, 12, 1), live(20, 12, 4)]).is_none());
        assert!(per_key(&[delete(10, 5), live(14, 12, 2)]).is_none());
        assert!(per_key(&[]).is_none());
    }

    #[test]
    fn each_rule_broken_is_quoted() {
        let one = |h: &[ObjectRevision]| per_key(h).expect("a break").summary;
        assert_eq!(
            one(&[live(5, 5, 2)]),
            "/registry/configmaps/shop/app: a create whose version is not 1, or version 1 that is not a create at @5 (created @5, version 2)"
        );
        assert!(one(&[live(5, 3, 1)]).contains("version 1 that is not a create"));
        assert!(one(&[live(5, 8, 1)]).contains("created after it was written"));
        assert!(one(&[live(5, 3, 0)]).contains("no version"));
        // Versions: going back, standing still, more writes than revisions.
        assert!(one(&[live(6, 5, 3), live(8, 5, 2)]).contains("do not count"));
        assert!(one(&[live(6, 5, 2), live(8, 5, 2)]).contains("do not count"));
        assert!(one(&[live(6, 5, 2), live(8, 5, 5)]).contains("do not count"));
        assert!(per_key(&[live(6, 5, 2), live(8, 5, 4)]).is_none());
        // Generations that overlap, or go on past a tombstone.
        assert!(one(&[live(5, 5, 1), live(9, 4, 2)]).contains("still held the key"));
        assert!(one(&[live(8, 5, 2), live(9, 7, 2)]).contains("still held the key"));
        assert_eq!(
            one(&[delete(10, 5), live(12, 5, 3)]),
            "/registry/configmaps/shop/app: a generation that goes on past its tombstone at @10 (delete) then @12 (created @5, version 3)"
        );
        let f = per_key(&[live(5, 5, 2), live(7, 5, 2)]).unwrap();
        assert_eq!(f.revisions, vec![Revision(5), Revision(7)]);
        assert!(f.summary.ends_with("(and 1 more break)"));
        assert_eq!(f.details["breaks"][1]["rows"][1]["version"], 2);
    }

    fn row(key: &str, deleted: bool) -> SharedRow {
        SharedRow {
            key: key.into(),
            create_revision: Revision(3),
            version: if deleted { 0 } else { 1 },
            deleted,
        }
    }

    #[test]
    fn shared_revisions_are_listed_then_counted() {
        let found = SharedRevisions {
            listed: vec![SharedRevision {
                revision: Revision(40),
                rows: vec![
                    row("/registry/a", false),
                    row("/registry/b", true),
                    row("/registry/c", false),
                    row("/registry/d", false),
                ],
            }],
            total: 3,
        };
        let f = shared(&found);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].summary,
            "revision 40 wrote 4 keys in one txn, which kube-apiserver never sends: /registry/a written, /registry/b deleted, /registry/c written, 1 more"
        );
        assert_eq!(f[0].keys.len(), 4);
        assert_eq!(f[0].revisions, vec![Revision(40)]);
        assert_eq!(
            f[1].summary,
            "2 more revisions after 40 are each held by more than one key (not listed one by one)"
        );
        assert!(shared(&SharedRevisions::default()).is_empty());
    }
}

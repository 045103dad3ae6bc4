//! `stuck-deletion`: an object whose deletion was asked for
//! (`metadata.deletionTimestamp`) longer ago than `--stuck-after` and that
//! still exists: a finalizer nobody removes. Names the finalizers, the
//! field managers that added each, how long it has been stuck and, for a
//! Namespace, what is still inside it.

use super::detector::{Findings, Registration};
use super::clock::Clock;
use crate::duration::human;
use super::objects::{Generation, Live, Objects};
use crate::store::finding::{Finding, Severity};
use std::collections::BTreeMap;
use std::time::Duration;

pub const NAME: &str = "stuck-deletion";

/// Judges the object set at the head, by the cluster's clock.
pub const DETECTOR: Registration = Registration::at_head(NAME, Severity::Medium, "stuck deletions", detect);

/// How long a deletion may take before it is a finding.
pub const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(15 * 60);

/// Objects of a Namespace listed by name in its finding.
const SHOWN: usize = 10;

/// Findings for the live objects whose deletion is older than `after`.
pub fn detect(objects: &Objects, clock: &Clock, after: Duration, out: &mut Findings) {
    let Some(now) = clock.now() else { return };
    out.extend(objects.live().filter_map(|(g, live)| {
        let since: jiff::Timestamp = live.deletion_timestamp()?.parse().ok()?;
        let stuck = now.as_second() - since.as_second();
        (stuck >= after.as_secs() as i64).then(|| finding(objects, g, live, stuck))
    }));
}

fn finding(objects: &Objects, g: Generation, live: Live, stuck: i64) -> Finding {
    let finalizers: Vec<String> = live
        .finalizers()
        .map(|f| match f.managers().as_slice() {
            [] => f.name().to_string(),
            by => format!("{} (added by {})", f.name(), by.join(", ")),
        })
        .collect();
    let holding = match finalizers.as_slice() {
        [] => "no finalizer left (the apiserver or garbage collector has not finished it)".to_string(),
        [one] => format!("held by finalizer {one}"),
        many => format!("held by finalizers {}", many.join(", ")),
    };
    // A Namespace is deleted only once everything in it is.
    let inside: Vec<Generation> = match (g.kind(), g.group(), g.name()) {
        (Some("Namespace"), "", Some(ns)) => objects
            .live()
            .map(|(o, _)| o)
            .filter(|o| o.namespace() == Some(ns))
            .collect(),
        _ => Vec::new(),
    };
    let mut by_resource: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &inside {
        *by_resource.entry(o.resource()).or_default() += 1;
    }
    let contents = if inside.is_empty() {
        String::new()
    } else {
        let counts: Vec<String> = by_resource.iter().map(|(r, n)| format!("{n} {r}")).collect();
        format!("; still inside: {}", counts.join(", "))
    };
    let inspect = match (g.namespace(), g.name()) {
        (Some(ns), Some(name)) => format!(
            "kubectl get {} -n {ns} {name} -o jsonpath='{{.metadata.finalizers}}'",
            g.resource()
        ),
        (None, Some(name)) => format!(
            "kubectl get {} {name} -o jsonpath='{{.metadata.finalizers}}'",
            g.resource()
        ),
        _ => String::new(),
    };
    Finding {
        detector: NAME,
        severity: Severity::Medium,
        keys: vec![g.key().to_string()],
        revisions: vec![live.revision()],
        summary: format!(
            "{} has been deleting for {} (deletionTimestamp {}), {holding}{contents}",
            g.object(),
            human(stuck),
            live.deletion_timestamp().unwrap_or_default()
        ),
        details: serde_json::json!({
            "object": g.object(),
            "uid": g.uid(),
            "deletion_timestamp": live.deletion_timestamp(),
            "stuck_seconds": stuck,
            "finalizers": live.finalizers().map(|f| serde_json::json!({"name": f.name(), "managers": f.managers()})).collect::<Vec<_>>(),
            "inside": inside.iter().take(100).map(|o| o.object()).collect::<Vec<_>>(),
            "inside_count": inside.len(),
            "inside_shown": inside.iter().take(SHOWN).map(|o| o.object()).collect::<Vec<_>>(),
            "inspect": inspect,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::objects::tests::rev;
    use crate::store::RunTime;

    fn clock(now: &str) -> Clock {
        let mut c = Clock::new(&[RunTime {
            head: crate::source::Revision(100),
            started_at: now.parse().unwrap(),
            finished_at: Some(now.parse().unwrap()),
            kind: crate::store::RunKind::Live,
        }]);
        c.finish();
        c
    }

    fn deleting(
        kind: &str,
        ns: &str,
        name: &str,
        at: &str,
        finalizers: &str,
    ) -> Vec<crate::store::object::ObjectRevision> {
        let mut r = rev(kind, ns, name, &format!("uid-{name}"), 5, 2);
        r.facts.deletion_timestamp = Some(at.into());
        r.facts.finalizers = Some(finalizers.into());
        vec![r]
    }

    #[test]
    fn old_deletions_are_stuck_young_ones_are_not() {
        let mut objects = Objects::default();
        objects.push(&deleting(
            "ConfigMap",
            "shop",
            "old",
            "2026-12-01T09:00:00Z",
            r#"[{"name": "example.com/cleanup", "managers": ["operator"]}]"#,
        )).unwrap();
        objects.push(&deleting(
            "ConfigMap",
            "shop",
            "young",
            "2026-12-01T09:55:00Z",
            "[]",
        )).unwrap();
        objects.push(&[rev("ConfigMap", "shop", "fine", "u", 3, 3)]).unwrap();
        let found = Findings::of(|out| detect(&objects, &clock("2026-12-01T10:00:00Z"), DEFAULT_STUCK_AFTER, out));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].keys, ["/registry/configmap/shop/old"]);
        assert!(found[0].summary.contains("for 1h 0m"), "{}", found[0].summary);
        assert!(
            found[0]
                .summary
                .contains("held by finalizer example.com/cleanup (added by operator)"),
            "{}",
            found[0].summary
        );
    }

    #[test]
    fn a_namespace_names_what_is_still_inside() {
        let mut objects = Objects::default();
        objects.push(&deleting(
            "Namespace",
            "",
            "shop",
            "2026-12-01T08:00:00Z",
            r#"[{"name": "kubernetes"}]"#,
        )).unwrap();
        objects.push(&[rev("ConfigMap", "shop", "a", "u1", 3, 3)]).unwrap();
        objects.push(&[rev("ConfigMap", "shop", "b", "u2", 4, 4)]).unwrap();
        objects.push(&[rev("ConfigMap", "other", "c", "u3", 4, 4)]).unwrap();
        let found = Findings::of(|out| detect(&objects, &clock("2026-12-01T10:00:00Z"), DEFAULT_STUCK_AFTER, out));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].summary.contains("still inside: 2 configmap"),
            "{}",
            found[0].summary
        );
        assert_eq!(found[0].details["inside_count"], 2);
    }
}

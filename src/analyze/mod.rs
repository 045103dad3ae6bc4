//! Detectors: pure functions from stored, classified history to findings.
//! `analyze` first gives every new revision its change class, then reads the
//! history once, key by key and oldest first, holding one key's revisions at
//! a time: key-local detectors run on each key; the revisions the
//! excess-siblings sweep needs are kept aside and swept in revision order.

pub mod clock;
pub mod dangling_owner;
pub mod drift;
pub mod duplicate_entries;
pub mod encoding_only;
pub mod encryption_at_rest;
pub mod excess_siblings;
pub mod flapping;
pub mod generation_mismatch;
pub mod objects;
pub mod owner_cycle;
pub mod prunable_fields;
pub mod recreated;
pub mod rewrite;
pub mod stuck_deletion;

use crate::canon::duplicates::list_sizes;
use crate::store::finding::Finding;
use crate::store::object::ObjectRevision;
use crate::store::{ClassifyStats, Looked, Store, StoreError, ValueReader};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// Every detector's name.
pub const DETECTORS: &[&str] = &[
    rewrite::NAME,
    encoding_only::NAME,
    recreated::NAME,
    excess_siblings::NAME,
    duplicate_entries::NAME,
    flapping::NAME,
    generation_mismatch::NAME,
    encryption_at_rest::NAME,
    stuck_deletion::NAME,
    dangling_owner::NAME,
    owner_cycle::NAME,
    prunable_fields::NAME,
];

/// How the detectors judge.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long a deletion or the garbage collection of a dependent may take
    /// before it is a finding (`--stuck-after`).
    pub stuck_after: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stuck_after: stuck_deletion::DEFAULT_STUCK_AFTER,
        }
    }
}

/// What an `analyze` did.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub classify: ClassifyStats,
    pub findings: Vec<Finding>,
}

/// The revisions of one key the excess-siblings sweep needs: generation
/// starts, tombstones, liveness changes and changes of a desired count,
/// without the per-field data. Keeps the sweep's input small.
fn sibling_events(history: &[ObjectRevision]) -> Vec<ObjectRevision> {
    if !history
        .iter()
        .any(|r| r.facts.owner_uid.is_some() || r.facts.generate_name.is_some() || r.facts.desired.is_some())
    {
        return Vec::new();
    }
    let live = |r: &ObjectRevision| {
        r.facts.deletion_timestamp.is_none()
            && !matches!(r.facts.phase.as_deref(), Some("Succeeded" | "Failed"))
    };
    let mut out = Vec::new();
    let mut prev: Option<&ObjectRevision> = None;
    for r in history {
        let keep = match prev {
            None => true,
            Some(p) => {
                r.deleted
                    || p.deleted
                    || p.create_revision != r.create_revision
                    || live(p) != live(r)
                    || p.facts.desired != r.facts.desired
            }
        };
        if keep {
            out.push(ObjectRevision {
                fields: BTreeMap::new(),
                changed_by: BTreeMap::new(),
                changed_paths: Vec::new(),
                duplicates: None,
                ..r.clone()
            });
        }
        prev = Some(r);
    }
    out
}

fn detect_cluster(store: &Store, cluster: i64, options: &Options) -> Result<Vec<Finding>, StoreError> {
    let gaps = store.gaps(cluster)?;
    let mut clock = clock::Clock::new(&store.run_times(cluster)?);
    let mut objects = objects::Objects::default();
    let schemas = prunable_fields::Schemas::new(store.contents_of(
        cluster,
        prunable_fields::CRD_GROUP,
        prunable_fields::CRD_RESOURCE,
    )?);
    let policy = store.encryption_policy(cluster)?;
    let mut encryption = policy
        .as_ref()
        .map(|(policy, head)| encryption_at_rest::Audit::new(policy, *head));
    let mut findings = Vec::new();
    let mut sibling_revisions: Vec<ObjectRevision> = Vec::new();
    let mut failure = None;
    store.key_histories(cluster, &mut |history| {
        findings.extend(rewrite::detect(history));
        findings.extend(encoding_only::detect(history));
        findings.extend(recreated::detect(history));
        findings.extend(generation_mismatch::detect(history));
        if let Some(audit) = &mut encryption {
            audit.push(history);
        }
        clock.observe(history);
        objects.push(history);
        // Stored values are read only for the keys that need them.
        let mut values = ValueReader::new(store);
        findings.extend(flapping::detect(
            history,
            flapping::DEFAULT_MIN_RETURNS,
            &gaps,
            &mut |r, p| match values.at(r.semantic_sha256.as_deref(), p) {
                Looked::Found(Value::Null) | Looked::Redacted | Looked::Absent => None,
                Looked::Found(v) => Some(v.clone()),
            },
        ));
        let defined = history
            .last()
            .and_then(|r| Some((r.group.as_deref()?, r.resource.as_deref()?)));
        if defined.is_some_and(|(group, resource)| schemas.defines(group, resource)) {
            findings.extend(prunable_fields::detect(history, &schemas, &mut |r| match values
                .content(r.semantic_sha256.as_deref())
            {
                Looked::Found(v) => Some(v.clone()),
                Looked::Redacted | Looked::Absent => None,
            }));
        }
        if let Err(e) = values.finish() {
            failure.get_or_insert(e);
        }
        if history.iter().any(|r| r.duplicates.is_some()) {
            let mut sizes = BTreeMap::new();
            for r in history {
                match r
                    .semantic_sha256
                    .as_deref()
                    .map(|h| store.canonical_value(h))
                    .transpose()
                {
                    Ok(Some(Some(value))) => {
                        sizes.insert(r.mod_revision, list_sizes(&value));
                    }
                    Ok(_) => {}
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            findings.extend(duplicate_entries::detect(history, &sizes));
        }
        sibling_revisions.extend(sibling_events(history));
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    sibling_revisions.sort_by_key(|r| r.mod_revision);
    let mut sweep = excess_siblings::Sweep::new(excess_siblings::DEFAULT_WINDOW_SECONDS);
    sibling_revisions.iter().for_each(|r| sweep.push(r));
    findings.extend(sweep.finish());
    findings.extend(
        encryption
            .map(encryption_at_rest::Audit::finish)
            .unwrap_or_default(),
    );
    clock.finish();
    findings.extend(stuck_deletion::detect(&objects, &clock, options.stuck_after));
    findings.extend(dangling_owner::detect(&objects, &clock, options.stuck_after));
    findings.extend(owner_cycle::detect(&objects));
    Ok(findings)
}

/// Classifies pending revisions, then runs the detectors for `cluster` (or
/// every cluster) and stores their findings; unchanged findings are kept as
/// they were.
pub fn analyze(store: &Store, cluster: Option<i64>, options: &Options) -> Result<Analysis, StoreError> {
    let classify = store.classify_pending()?;
    let clusters = match cluster {
        Some(c) => vec![c],
        None => store.clusters()?,
    };
    let mut all = Vec::new();
    for c in clusters {
        let findings = detect_cluster(store, c, options)?;
        store.replace_findings(c, DETECTORS, &findings)?;
        all.extend(findings);
    }
    Ok(Analysis {
        classify,
        findings: all,
    })
}

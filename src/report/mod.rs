//! Post-mortem reports: what was recorded, what the detectors found grouped
//! by detector, resource and namespace (exact counts, a few findings of
//! each group with their evidence and the timelines of their keys), in
//! text, Markdown, JSON or HTML. One file per format; the content is
//! gathered once, here, in memory that does not grow with the number of
//! findings.

pub mod escape;
pub mod fleet;
pub mod html;
pub mod json_array;
pub mod left;
pub mod markdown;
pub mod metrics;
pub mod text;
pub mod when;

use crate::decode::key::qualified;
use crate::source::Revision;
use crate::store::finding::Severity;
use crate::store::{FindingQuery, HistoryReader, HistoryRow, RunInfo, Scope, StoreError, StoredFinding};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// What a report covers.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub scope: Scope,
    /// Only findings at or above this severity.
    pub severity: Option<Severity>,
}

/// Counts for the summary tables.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// detector → severity → count.
    pub findings: BTreeMap<String, BTreeMap<String, usize>>,
    pub writes_by_class: Vec<(String, i64)>,
    pub writes_by_resource: Vec<(String, i64)>,
    pub busiest_keys: Vec<(String, i64)>,
    /// Stuck deletions, owner problems and prunable fields, each its own line.
    pub lifecycle: Vec<LifecycleLine>,
    /// Per resource, what `stats` shows: objects, revisions, bytes,
    /// encodings, encryption, writes per class.
    pub resources: Vec<crate::store::ResourceUsage>,
}

impl Summary {
    /// The report's first line: nothing to worry about when no finding is
    /// at `low` or above, else how many need a look, by severity.
    pub fn verdict(&self) -> String {
        use crate::store::finding::Severity;
        let mut by_severity: BTreeMap<Severity, usize> = BTreeMap::new();
        for (severity, n) in self.findings.values().flatten() {
            if let Ok(s) = Severity::parse(severity) {
                *by_severity.entry(s).or_default() += n;
            }
        }
        let info = by_severity.remove(&Severity::Info).unwrap_or(0);
        let attention: usize = by_severity.values().sum();
        if attention == 0 {
            return match info {
                0 => "Nothing to worry about: no findings.".to_string(),
                n => format!("Nothing to worry about: no finding at low or above ({n} for information)."),
            };
        }
        let parts: Vec<String> = by_severity
            .iter()
            .rev()
            .map(|(s, n)| format!("{n} {}", s.as_str()))
            .collect();
        format!(
            "{attention} finding{} to look at: {}.",
            if attention == 1 { "" } else { "s" },
            parts.join(", ")
        )
    }
}

/// A summary line about objects' lifecycles, from the findings of some
/// detectors.
#[derive(Clone, Debug, Serialize)]
pub struct LifecycleLine {
    pub topic: &'static str,
    pub findings: usize,
    /// How many distinct objects are involved.
    pub object_count: usize,
    /// The first of them (`Kind ns/name`), at most twenty.
    pub objects: Vec<String>,
}

/// Findings of a group shown with their evidence and timelines.
pub const SAMPLE: usize = 3;
/// Groups shown with a sample; the rest are a line each.
pub const GROUPS_SHOWN: usize = 60;
/// Objects a lifecycle line names.
const OBJECTS_NAMED: usize = 20;
/// Revisions a timeline shows: the first few, the last ones, and every
/// revision a sampled finding names.
const TIMELINE_HEAD: usize = 5;
const TIMELINE_TAIL: usize = 25;

/// The lifecycle lines: each topic the registered detectors feed, in
/// registry order, with the detectors that feed it.
fn topics() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in crate::analyze::REGISTRY {
        let Some(topic) = r.topic else { continue };
        match out.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, detectors)) => detectors.push(r.name),
            None => out.push((topic, vec![r.name])),
        }
    }
    out
}

/// A lifecycle line as findings arrive: their number, the distinct objects
/// (counted by a hash of each name) and the first names.
struct LifecycleCount {
    line: LifecycleLine,
    detectors: Vec<&'static str>,
    seen: HashSet<u64>,
}

impl LifecycleCount {
    fn add(&mut self, f: &StoredFinding) {
        if !self.detectors.contains(&f.detector.as_str()) {
            return;
        }
        self.line.findings += 1;
        let members = f.details["members"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| &m["object"]);
        for object in members
            .chain(std::iter::once(&f.details["object"]))
            .filter_map(|o| o.as_str())
        {
            if self.seen.insert(hash_of(object)) {
                self.line.object_count += 1;
                if self.line.objects.len() < OBJECTS_NAMED {
                    self.line.objects.push(object.to_string());
                }
            }
        }
    }

    fn finish(mut self) -> LifecycleLine {
        self.line.objects.sort();
        self.line
    }
}

impl LifecycleLine {
    /// `ConfigMap shop/a, Namespace doomed, … 1 more`: the first `shown`
    /// objects by name.
    pub fn names(&self, shown: usize) -> String {
        let more = self.object_count.saturating_sub(shown.min(self.objects.len()));
        let mut names: Vec<&str> = self.objects.iter().take(shown).map(String::as_str).collect();
        let tail = format!("… {more} more");
        if more > 0 {
            names.push(&tail);
        }
        names.join(", ")
    }

    /// `3: ConfigMap shop/a, Namespace doomed, … 1 more`, or `none`.
    pub fn text(&self, shown: usize) -> String {
        if self.findings == 0 {
            return "none".into();
        }
        format!("{}: {}", self.findings, self.names(shown))
    }
}

/// Findings of one detector about one resource in one namespace: their
/// exact number and revision span, a few of them with their evidence, and
/// the command that lists them all.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub detector: String,
    /// The highest severity among them.
    pub severity: Severity,
    /// The resource of each finding's first key (`pods`, `deployments.apps`);
    /// `None` for keys outside the resource layout.
    pub resource: Option<String>,
    /// Their namespace; `None` for cluster-scoped objects, or when the group
    /// spans every namespace (`every_object`).
    pub namespace: Option<String>,
    /// The detector found this on every object of the resource stored at
    /// the head: one cause, said once.
    pub every_object: bool,
    pub count: usize,
    pub first_revision: Option<Revision>,
    pub last_revision: Option<Revision>,
    /// The first findings, with their evidence (empty for groups past
    /// [`GROUPS_SHOWN`]).
    pub sample: Vec<StoredFinding>,
    /// The `findings` command that lists the whole group.
    pub command: String,
    /// The objects (first keys) involved, by a hash of each.
    #[serde(skip)]
    objects: HashSet<u64>,
}

impl Group {
    /// Findings of the group the sample leaves out.
    pub fn more(&self) -> usize {
        self.count - self.sample.len()
    }

    /// `owner-cycle · pods · ns shop` (or `every pods object`).
    pub fn title(&self) -> String {
        let resource = self.resource.as_deref().unwrap_or("other keys");
        match (&self.namespace, self.every_object) {
            (_, true) => format!("{} · every {resource} object", self.detector),
            (Some(ns), false) => format!("{} · {resource} · namespace {ns}", self.detector),
            (None, false) => format!("{} · {resource}", self.detector),
        }
    }
}

/// A key involved in findings, with its revisions in range (at most
/// [`TIMELINE_HEAD`] + [`TIMELINE_TAIL`] and those the findings name).
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    pub key: String,
    pub revisions: Vec<HistoryRow>,
    /// Revisions in range not shown.
    pub omitted: usize,
    /// Revision → how the object left there, for deletes compaction hid
    /// (see [`left::left`]).
    pub left: std::collections::BTreeMap<Revision, String>,
}

/// Everything a report shows but the full list of findings, which
/// [`each_finding`] streams (`-o json` carries it).
#[derive(Clone, Debug, Serialize)]
pub struct ReportData {
    pub generated_at: String,
    pub database: String,
    /// The cluster the report is about (its name, or etcd's cluster id);
    /// `None` for a database that holds none.
    pub cluster: Option<String>,
    pub from_revision: Option<Revision>,
    pub to_revision: Option<Revision>,
    pub runs: Vec<RunInfo>,
    pub summary: Summary,
    /// Every finding, grouped; most severe and largest first.
    pub groups: Vec<Group>,
    pub timelines: Vec<Timeline>,
}

fn in_range(rev: Revision, scope: &Scope) -> bool {
    scope.from_revision.is_none_or(|f| rev >= f) && scope.to_revision.is_none_or(|t| rev <= t)
}

/// Calls `visit` with every finding the report covers, as they are read:
/// those the filter keeps with a revision in range (or none at all).
pub fn each_finding(
    store: &dyn HistoryReader,
    filter: &Filter,
    visit: &mut dyn FnMut(StoredFinding) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let query = FindingQuery {
        objects: filter.scope.objects.clone(),
        detector: None,
        severity: filter.severity,
    };
    for f in store.findings(&query) {
        let f = f?;
        if f.revisions.is_empty() || f.revisions.iter().any(|r| in_range(*r, &filter.scope)) {
            visit(f)?;
        }
    }
    Ok(())
}

/// The groups' identity: detector, resource, namespace.
type GroupKey = (String, Option<String>, Option<String>);

/// The resource and namespace a finding is about: its first key's, read
/// with the storage prefix of its cluster's runs.
fn subject(f: &StoredFinding, prefixes: &HashMap<String, String>) -> (Option<String>, Option<String>) {
    let prefix = prefixes.get(&f.cluster_id).map_or("/registry/", String::as_str);
    match f.keys.first().map(|k| crate::decode::key::parse_key(k, prefix)) {
        Some(Ok(p)) if p.special.is_none() => (Some(qualified(&p.resource, &p.group)), p.namespace),
        _ => (None, None),
    }
}

/// The `findings` command that lists a group (of `cluster`, when the
/// database holds several).
fn command(detector: &str, resource: Option<&str>, namespace: Option<&str>, cluster: Option<&str>) -> String {
    let mut c = format!("findings --detector {detector}");
    if let Some(name) = cluster {
        c += &format!(" --cluster {name}");
    }
    if let Some(r) = resource {
        // `findings --resource` takes the resource as keys store it.
        let plural = r.split_once('.').map_or(r, |(plural, _)| plural);
        c += &format!(" --resource {plural}");
    }
    if let Some(ns) = namespace {
        c += &format!(" --namespace {ns}");
    }
    c
}

/// Merges each detector's groups of a resource into one when it found
/// every object of the resource (one cause for all, said once); `cluster`
/// goes into the merged group's command.
fn merge_every_object(
    groups: Vec<Group>,
    resources: &[crate::store::ResourceUsage],
    cluster: Option<&str>,
) -> Vec<Group> {
    let objects: HashMap<String, i64> = resources
        .iter()
        .map(|u| (qualified(&u.resource, &u.group), u.objects))
        .collect();
    // Namespaces hold distinct objects: the sum over a resource's groups
    // counts each object once.
    let mut per_resource: HashMap<(String, String), usize> = HashMap::new();
    for g in &groups {
        if let Some(r) = &g.resource {
            *per_resource.entry((g.detector.clone(), r.clone())).or_default() += g.objects.len();
        }
    }
    let every = |g: &Group| {
        g.resource.as_ref().is_some_and(|r| {
            let n = objects.get(r).copied().unwrap_or(0);
            n > 1 && per_resource[&(g.detector.clone(), r.clone())] as i64 >= n
        })
    };
    let mut merged: Vec<Group> = Vec::new();
    for g in groups {
        if !every(&g) {
            merged.push(g);
            continue;
        }
        match merged
            .iter_mut()
            .find(|m| m.every_object && m.detector == g.detector && m.resource == g.resource)
        {
            Some(m) => {
                m.count += g.count;
                m.severity = m.severity.max(g.severity);
                m.first_revision = min_some(m.first_revision, g.first_revision);
                m.last_revision = m.last_revision.max(g.last_revision);
                let room = SAMPLE.saturating_sub(m.sample.len());
                m.sample.extend(g.sample.into_iter().take(room));
            }
            None => merged.push(Group {
                namespace: None,
                every_object: true,
                command: command(&g.detector, g.resource.as_deref(), None, cluster),
                ..g
            }),
        }
    }
    merged
}

/// A 64-bit hash standing for a name in a set (a collision among a
/// report's objects is as good as impossible; the names are not kept).
fn hash_of(name: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

fn min_some(a: Option<Revision>, b: Option<Revision>) -> Option<Revision> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A timeline of `key` (of the scope's cluster): its revisions in range, at
/// most the first [`TIMELINE_HEAD`] and last [`TIMELINE_TAIL`] besides those
/// in `named`.
fn timeline(
    store: &dyn HistoryReader,
    key: &str,
    named: &HashSet<Revision>,
    scope: &Scope,
) -> Result<Timeline, StoreError> {
    let mut rows = store.history(key.as_bytes(), scope.objects.cluster)?;
    rows.retain(|r| in_range(r.mod_revision, scope));
    let total = rows.len();
    if total > TIMELINE_HEAD + TIMELINE_TAIL {
        let mut i = 0;
        rows.retain(|r| {
            i += 1;
            i <= TIMELINE_HEAD || i > total - TIMELINE_TAIL || named.contains(&r.mod_revision)
        });
    }
    store.add_diffs(&mut rows)?;
    Ok(Timeline {
        key: key.to_string(),
        omitted: total - rows.len(),
        left: rows
            .iter()
            .filter_map(|r| Some((r.mod_revision, left::left(r)?)))
            .collect(),
        revisions: rows,
    })
}

/// Gathers a report's content in one pass over the findings: aggregates
/// come from SQL; what is held is a count per group, a few findings of each
/// and the timelines of their keys, whatever the number of findings. A
/// filter with a cluster makes it that cluster's report (its runs only, and
/// `--cluster` in its commands); without one it covers the database, which
/// should then hold one cluster at most (else [`fleet::build`]).
pub fn build(store: &dyn HistoryReader, filter: &Filter) -> Result<ReportData, StoreError> {
    let scope = &filter.scope;
    let clusters = store.clusters()?;
    let chosen = scope
        .objects
        .cluster
        .and_then(|row| clusters.iter().find(|c| c.row == row));
    let cluster = match (chosen, clusters.as_slice()) {
        (Some(c), _) | (None, [c]) => Some(c),
        _ => None,
    };
    let named = chosen.map(|c| c.label());
    let all_runs = store.runs()?;
    let prefixes: HashMap<String, String> = all_runs
        .iter()
        .filter_map(|r| Some((r.cluster_id.clone()?, r.prefix.clone())))
        .collect();
    let runs: Vec<RunInfo> = all_runs
        .into_iter()
        .filter(|r| chosen.is_none_or(|c| r.cluster_id.as_deref() == Some(c.etcd_cluster_id.as_str())))
        .filter(|r| {
            let head = r.head_revision.unwrap_or_default();
            let start = r.history_from.unwrap_or(head);
            scope.from_revision.is_none_or(|f| head >= f) && scope.to_revision.is_none_or(|t| start <= t)
        })
        .collect();
    let mut lifecycle: Vec<LifecycleCount> = topics()
        .into_iter()
        .map(|(topic, detectors)| LifecycleCount {
            line: LifecycleLine {
                topic,
                findings: 0,
                object_count: 0,
                objects: Vec::new(),
            },
            detectors,
            seen: HashSet::new(),
        })
        .collect();
    let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut groups: HashMap<GroupKey, Group> = HashMap::new();
    each_finding(store, filter, &mut |f| {
        *counts
            .entry(f.detector.clone())
            .or_default()
            .entry(f.severity.as_str().to_string())
            .or_default() += 1;
        for line in &mut lifecycle {
            line.add(&f);
        }
        let (resource, namespace) = subject(&f, &prefixes);
        let group = groups
            .entry((f.detector.clone(), resource.clone(), namespace.clone()))
            .or_insert_with(|| Group {
                command: command(&f.detector, resource.as_deref(), namespace.as_deref(), named),
                detector: f.detector.clone(),
                severity: f.severity,
                resource,
                namespace,
                every_object: false,
                count: 0,
                first_revision: None,
                last_revision: None,
                sample: Vec::new(),
                objects: HashSet::new(),
            });
        group.count += 1;
        if let Some(key) = f.keys.first() {
            group.objects.insert(hash_of(key));
        }
        group.severity = group.severity.max(f.severity);
        group.first_revision = min_some(group.first_revision, f.revisions.iter().min().copied());
        group.last_revision = group.last_revision.max(f.revisions.iter().max().copied());
        if group.sample.len() < SAMPLE {
            group.sample.push(f);
        }
        Ok(())
    })?;
    let resources = store.resource_usage(scope)?;
    // In a fixed order, so that a merged group's sample is the same each time.
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by(|a, b| {
        (&a.detector, &a.resource, &a.namespace).cmp(&(&b.detector, &b.resource, &b.namespace))
    });
    let mut groups = merge_every_object(groups, &resources, named);
    groups.sort_by(|a, b| {
        (b.severity, b.count, &a.detector, &a.resource, &a.namespace).cmp(&(
            a.severity,
            a.count,
            &b.detector,
            &b.resource,
            &b.namespace,
        ))
    });
    for g in groups.iter_mut().skip(GROUPS_SHOWN) {
        g.sample.clear();
    }
    let mut named: BTreeMap<&str, HashSet<Revision>> = BTreeMap::new();
    for f in groups.iter().flat_map(|g| &g.sample) {
        if let Some(key) = f.keys.first() {
            named.entry(key).or_default().extend(&f.revisions);
        }
    }
    let timelines = named
        .iter()
        .map(|(key, revisions)| timeline(store, key, revisions, scope))
        .collect::<Result<_, _>>()?;
    let summary = Summary {
        findings: counts,
        writes_by_class: store.writes_by_class(scope)?,
        writes_by_resource: store.writes_by_resource(scope)?,
        busiest_keys: store.busiest_keys(scope, Some(10))?,
        lifecycle: lifecycle.into_iter().map(LifecycleCount::finish).collect(),
        resources,
    };
    Ok(ReportData {
        generated_at: crate::decode::gotime::now(),
        database: store.location().display().to_string(),
        cluster: cluster.map(|c| c.label().to_string()),
        from_revision: scope.from_revision,
        to_revision: scope.to_revision,
        runs,
        summary,
        groups,
        timelines,
    })
}

/// Writes the JSON report: `data` and then every finding it covers, read
/// again and written one at a time (`findings`, complete at any size).
pub fn write_json(
    store: &dyn HistoryReader,
    filter: &Filter,
    data: &ReportData,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    open_object(data, "findings", out)?;
    let mut array = json_array::JsonArray::open(out, "  ")?;
    let mut failed = None;
    each_finding(store, filter, &mut |f| {
        if failed.is_none() {
            failed = array.push(&f).err();
        }
        Ok(())
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    array.close()?;
    out.write_all(b"\n}\n")?;
    Ok(())
}

/// Writes `value`, a JSON object, pretty and left open for one more member
/// written after it: `{ ...its members..., "field": `. The caller writes
/// the member's value and the closing `\n}`.
fn open_object(value: &impl Serialize, field: &str, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    let head = serde_json::to_string_pretty(value)?;
    // A pretty JSON object ends in "\n}": the new member goes before it.
    let open = head.strip_suffix("\n}").expect("a JSON object");
    out.write_all(open.as_bytes())?;
    write!(out, ",\n  {}: ", serde_json::to_string(field)?)?;
    Ok(())
}

/// ` (revisions 120–4500)` for a group with revisions, else nothing.
pub fn span(g: &Group) -> String {
    match (g.first_revision, g.last_revision) {
        (Some(a), Some(b)) if a == b => format!(" (revision {a})"),
        (Some(a), Some(b)) => format!(" (revisions {a}–{b})"),
        _ => String::new(),
    }
}

/// A short value for a table cell.
pub fn short(v: &serde_json::Value, max: usize) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(absent)".into(),
        other => other.to_string(),
    };
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max - 1).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_says_whether_anything_needs_a_look() {
        let mut summary = Summary {
            findings: BTreeMap::new(),
            writes_by_class: Vec::new(),
            writes_by_resource: Vec::new(),
            busiest_keys: Vec::new(),
            lifecycle: Vec::new(),
            resources: Vec::new(),
        };
        assert_eq!(summary.verdict(), "Nothing to worry about: no findings.");
        summary
            .findings
            .insert("flapping".into(), BTreeMap::from([("info".to_string(), 3)]));
        assert_eq!(
            summary.verdict(),
            "Nothing to worry about: no finding at low or above (3 for information)."
        );
        summary.findings.insert(
            "recreated".into(),
            BTreeMap::from([("medium".to_string(), 2), ("high".to_string(), 1)]),
        );
        assert_eq!(summary.verdict(), "3 findings to look at: 1 high, 2 medium.");
    }
}

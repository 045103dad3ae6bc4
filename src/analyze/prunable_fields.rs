//! `prunable-fields`: custom resources whose stored content has fields the
//! structural schema of their CustomResourceDefinition does not declare. The
//! apiserver prunes such fields silently on the next write through the API,
//! so what a controller or user wrote is lost without an error. They get into
//! etcd when a CRD's schema changed after the object was written, when
//! `x-kubernetes-preserve-unknown-fields` was removed, when the object was
//! written before the CRD had a schema, or by direct etcd writes.
//!
//! Each earlier revision of a custom resource is judged against the CRD as it
//! was at that revision (the CRD's latest stored revision at or before it),
//! with the schema of the version the revision is stored at; that tells
//! which fields a later write dropped. The object as it is now is judged
//! against the CRD as it is now, since the next write through the API is
//! pruned by today's schema: a CRD tightened after the object was written
//! (a field removed from its schema, `x-kubernetes-preserve-unknown-fields`
//! taken away) leaves fields stored that the next write drops.
//!
//! Paths are [`FieldPath`]s: `spec.ports[0].protocl`, map keys as members
//! (`spec.labels.app\.kubernetes\.io/name`).

use super::detector::{Detector, Findings, KeyInput, Reads, Make, Registration};
use crate::source::Revision;
use crate::canon::path::{FieldPath, Segment};
use crate::store::finding::{Finding, Severity};
use crate::store::object::ObjectRevision;
use crate::store::{Looked, StoreError};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub const NAME: &str = "prunable-fields";

/// Judges each custom resource's history against its CRD's schemas.
pub const DETECTOR: Registration = Registration {
    name: NAME,
    reads: Reads::KeyHistory,
    severity: Severity::Medium,
    topic: Some("prunable fields"),
    make: Make::With(|setup| {
        let crds = setup.store.contents_of(setup.cluster, CRD_GROUP, CRD_RESOURCE)?;
        Ok(Box::new(Schemas::new(crds)))
    }),
};

impl Detector for Schemas {
    fn key(&mut self, input: &mut KeyInput<'_, '_>, out: &mut Findings) -> Result<(), StoreError> {
        let defined = input
            .history
            .last()
            .and_then(|r| Some((r.group.as_deref()?, r.resource.as_deref()?)));
        if defined.is_some_and(|(group, resource)| self.defines(group, resource)) {
            let values = &mut *input.values;
            out.extend(detect(input.history, self, &mut |r| {
                match values.content(r.semantic_sha256.as_deref()) {
                    Looked::Found(v) => Some(v.clone()),
                    Looked::Redacted | Looked::Absent => None,
                }
            }));
        }
        Ok(())
    }
}

/// Where CustomResourceDefinitions are stored: their group and resource.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";
pub const CRD_RESOURCE: &str = "customresourcedefinitions";

/// Paths listed in a summary; the rest are counted.
const SHOWN_PATHS: usize = 20;

/// The path being walked, outermost segment first.
type Walked = Vec<Segment>;

fn flag(schema: &Map<String, Value>, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// Walks `value` against the schema node `schema`, collecting the keys the
/// schema does not declare (without descending into them).
fn walk(schema: &Value, value: &Value, path: &mut Walked, out: &mut BTreeSet<FieldPath>) {
    let Value::Object(schema) = schema else {
        return;
    };
    if flag(schema, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    let declared_type = schema.get("type").and_then(Value::as_str);
    match value {
        Value::Object(map) => {
            let object_node = match declared_type {
                Some(t) => t == "object",
                None => schema.contains_key("properties") || schema.contains_key("additionalProperties"),
            };
            // A value of another type than declared is not pruning's business.
            if object_node {
                let embedded = flag(schema, "x-kubernetes-embedded-resource");
                let allowed = |k: &str| embedded && matches!(k, "apiVersion" | "kind" | "metadata");
                walk_members(schema, map, &allowed, path, out);
            }
        }
        Value::Array(items) => {
            if declared_type.is_some_and(|t| t != "array") {
                return;
            }
            if let Some(item_schema @ Value::Object(_)) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    path.push(Segment::Index(i));
                    walk(item_schema, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// Walks the members of an object value against an object node, but for
/// the keys `allowed` keeps whatever the schema says.
fn walk_members(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    allowed: &dyn Fn(&str) -> bool,
    path: &mut Walked,
    out: &mut BTreeSet<FieldPath>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    for (key, v) in map {
        if allowed(key) {
            continue;
        }
        path.push(Segment::Field(key.clone()));
        match (properties.and_then(|p| p.get(key)), additional) {
            (Some(property), _) => walk(property, v, path, out),
            (None, Some(a @ Value::Object(_))) => walk(a, v, path, out),
            (None, Some(Value::Bool(true))) => {}
            (None, _) => {
                out.insert(FieldPath::from_segments(path.iter()));
            }
        }
        path.pop();
    }
}

/// The undeclared paths of a whole object; the root is an object node
/// whatever its `type` says. `apiVersion`, `kind` and `metadata` at the top
/// are never prunable; neither is `apiGroup` when the object has no
/// `apiVersion` (the semantic form's stand-in for it).
fn prunable(schema: &Value, object: &Value) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let (Value::Object(schema), Value::Object(top)) = (schema, object) else {
        return out;
    };
    if flag(schema, "x-kubernetes-preserve-unknown-fields") {
        return out;
    }
    let semantic = !top.contains_key("apiVersion");
    let allowed = |k: &str| matches!(k, "apiVersion" | "kind" | "metadata") || (semantic && k == "apiGroup");
    walk_members(schema, top, &allowed, &mut Vec::new(), &mut out);
    out
}

/// The undeclared field paths of `object` under `schema` (an
/// openAPIV3Schema node), sorted.
pub fn prunable_paths(schema: &Value, object: &Value) -> Vec<FieldPath> {
    prunable(schema, object).into_iter().collect()
}

/// One stored revision of a CRD, reduced to what pruning needs.
#[derive(Clone, Debug)]
struct Crd {
    /// `<plural>.<group>`.
    name: String,
    /// The whole CRD keeps unknown fields (`spec.preserveUnknownFields`).
    preserve: bool,
    /// Version name → its openAPIV3Schema, if it has one.
    versions: BTreeMap<String, Option<Value>>,
}

/// `(group, plural)` of a CRD's content: from `spec`, else from `metadata.name`.
fn identity(crd: &Value) -> Option<(String, String)> {
    let spec = crd.get("spec");
    let from_name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .and_then(|n| n.split_once('.'));
    let group = spec
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .or(from_name.map(|(_, g)| g))?;
    let plural = spec
        .and_then(|s| s.pointer("/names/plural"))
        .and_then(Value::as_str)
        .or(from_name.map(|(p, _)| p))?;
    Some((group.to_string(), plural.to_string()))
}

impl Crd {
    fn parse(content: &Value) -> Option<Crd> {
        let (group, plural) = identity(content)?;
        let spec = content.get("spec");
        // The apiserver stores the v1beta1 default (true) explicitly, and the
        // semantic form drops `false`: absent means false in either form.
        let preserve = spec.and_then(|s| s.get("preserveUnknownFields")) == Some(&Value::Bool(true));
        // v1beta1: a top-level schema for every version without its own.
        let shared = spec.and_then(|s| s.pointer("/validation/openAPIV3Schema"));
        let mut versions = BTreeMap::new();
        for v in spec
            .and_then(|s| s.get("versions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = v.get("name").and_then(Value::as_str) {
                let schema = v.pointer("/schema/openAPIV3Schema").or(shared);
                versions.insert(name.to_string(), schema.cloned());
            }
        }
        if let Some(name) = spec.and_then(|s| s.get("version")).and_then(Value::as_str) {
            versions
                .entry(name.to_string())
                .or_insert_with(|| shared.cloned());
        }
        Some(Crd {
            name: format!("{plural}.{group}"),
            preserve,
            versions,
        })
    }

    /// The schema fields of `version` are pruned by, if any are.
    fn schema(&self, version: &str) -> Option<&Value> {
        if self.preserve {
            return None;
        }
        self.versions.get(version)?.as_ref()
    }
}

/// A CRD's stored revisions: (mod_revision, the CRD or None once deleted), oldest first.
type Timeline = Vec<(Revision, Option<Crd>)>;

/// Every stored CRD revision of a cluster, by the resource it defines.
#[derive(Clone, Debug, Default)]
pub struct Schemas {
    /// `(group, plural)` → its CRD's revisions.
    by_resource: BTreeMap<(String, String), Timeline>,
}

impl Schemas {
    /// From the CRD revisions: (mod_revision, content JSON or None for a
    /// deletion), per CRD key, oldest first.
    pub fn new(crds: Vec<Vec<(Revision, Option<Value>)>>) -> Schemas {
        let mut by_resource: BTreeMap<(String, String), Timeline> = BTreeMap::new();
        for revisions in crds {
            // A CRD's name is `<plural>.<group>`, so a key defines one resource.
            let Some(id) = revisions.iter().find_map(|(_, c)| c.as_ref().and_then(identity)) else {
                continue;
            };
            let entries = by_resource.entry(id).or_default();
            for (revision, content) in revisions {
                entries.push((revision, content.as_ref().and_then(Crd::parse)));
            }
        }
        for entries in by_resource.values_mut() {
            entries.sort_by_key(|(revision, _)| *revision);
        }
        Schemas { by_resource }
    }

    /// Whether any CRD defines `resource` in `group` (so a key needs its
    /// content read).
    pub fn defines(&self, group: &str, resource: &str) -> bool {
        self.by_resource
            .contains_key(&(group.to_string(), resource.to_string()))
    }

    /// The CRD for `resource` in `group` as it was at `revision`, with the
    /// revision that stored it.
    fn at(&self, group: &str, resource: &str, revision: Revision) -> Option<(Revision, &Crd)> {
        let entries = self.by_resource.get(&(group.to_string(), resource.to_string()))?;
        let n = entries.partition_point(|(r, _)| *r <= revision);
        let (stored, crd) = entries.get(n.checked_sub(1)?)?;
        Some((*stored, crd.as_ref()?))
    }
}

/// One revision judged against its CRD.
struct Judged<'a> {
    revision: &'a ObjectRevision,
    crd: String,
    /// The revision that stored the CRD it was judged against.
    crd_revision: Revision,
    version: String,
    paths: BTreeSet<FieldPath>,
}

/// Judges `r` against the CRD as it was at revision `at`.
fn judge<'a>(
    r: &'a ObjectRevision,
    at: Revision,
    group: &str,
    resource: &str,
    schemas: &Schemas,
    content: &mut dyn FnMut(&ObjectRevision) -> Option<Value>,
) -> Option<(Judged<'a>, Value)> {
    let version = r.api_version.as_deref()?.rsplit('/').next()?;
    let (crd_revision, crd) = schemas.at(group, resource, at)?;
    let schema = crd.schema(version)?;
    let object = content(r)?;
    let paths = prunable(schema, &object);
    Some((
        Judged {
            revision: r,
            crd: crd.name.clone(),
            crd_revision,
            version: version.to_string(),
            paths,
        },
        object,
    ))
}

/// `a, b, … N more` for at most [`SHOWN_PATHS`] paths.
fn list(paths: &[String]) -> String {
    let shown: Vec<&str> = paths.iter().take(SHOWN_PATHS).map(String::as_str).collect();
    let more = if paths.len() > SHOWN_PATHS {
        format!(", … {} more", paths.len() - SHOWN_PATHS)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// `spec.a was dropped at revision 7; spec.b, spec.c were dropped at revision 9`.
fn dropped(pruned: &[(String, Revision, Revision)]) -> String {
    let mut by_revision: BTreeMap<Revision, Vec<String>> = BTreeMap::new();
    for (path, _, gone_at) in pruned {
        by_revision.entry(*gone_at).or_default().push(path.clone());
    }
    let mut budget = SHOWN_PATHS;
    let mut parts = Vec::new();
    let mut hidden = 0;
    for (revision, paths) in &by_revision {
        if budget == 0 {
            hidden += paths.len();
            continue;
        }
        let shown: Vec<&str> = paths.iter().take(budget).map(String::as_str).collect();
        hidden += paths.len() - shown.len();
        budget -= shown.len();
        parts.push(format!(
            "{} {} dropped at revision {revision}",
            shown.join(", "),
            if paths.len() == 1 { "was" } else { "were" }
        ));
    }
    let more = if hidden > 0 {
        format!(", … {hidden} more")
    } else {
        String::new()
    };
    format!("{}{more}", parts.join("; "))
}

/// A finding for one custom resource's history (oldest first), if it has
/// prunable fields. `content(r)` gives a revision's stored content (JSON)
/// or None when not stored.
///
/// The latest revision is judged against the newest CRD: live with
/// undeclared fields → Medium.
/// Within the current key generation, a path undeclared in one judged
/// revision and absent from the next judged one was dropped (`pruned`); when
/// the latest revision has no undeclared fields but some were dropped →
/// Low.
pub fn detect(
    history: &[ObjectRevision],
    schemas: &Schemas,
    content: &mut dyn FnMut(&ObjectRevision) -> Option<Value>,
) -> Option<Finding> {
    let latest = history.last()?;
    if latest.deleted {
        return None;
    }
    let group = latest.group.as_deref()?;
    let resource = latest.resource.as_deref()?;
    if !schemas.defines(group, resource) {
        return None;
    }
    let mut pruned: Vec<(String, Revision, Revision)> = Vec::new();
    let mut last: Option<Judged> = None;
    for r in history
        .iter()
        .filter(|r| !r.deleted && r.create_revision == latest.create_revision)
    {
        // The object as it is now, against the CRD as it is now (or, with
        // no CRD stored now, as it was at the revision).
        let now = std::ptr::eq(r, latest)
            .then(|| judge(r, Revision(i64::MAX), group, resource, schemas, content))
            .flatten();
        let Some((judged, object)) = now.or_else(|| judge(r, r.mod_revision, group, resource, schemas, content)) else {
            continue;
        };
        if let Some(prev) = &last {
            for path in prev.paths.iter().filter(|p| p.get(&object).is_none()) {
                pruned.push((
                    path.to_string(),
                    prev.revision.mod_revision,
                    judged.revision.mod_revision,
                ));
            }
        }
        last = Some(judged);
    }
    let last = last?;
    let current = std::ptr::eq(last.revision, latest);
    let paths: Vec<String> = if current {
        last.paths.iter().map(FieldPath::to_string).collect()
    } else {
        Vec::new()
    };
    if paths.is_empty() && pruned.is_empty() {
        return None;
    }
    let object = latest.object();
    let api_version = latest.api_version.as_deref().unwrap_or(&last.version);
    let (severity, summary, revisions) = if !paths.is_empty() {
        let one = paths.len() == 1;
        let earlier = if pruned.is_empty() {
            String::new()
        } else {
            format!("; earlier, {}", dropped(&pruned))
        };
        let tightened = if last.crd_revision > latest.mod_revision {
            format!(" (the CRD changed at revision {}, after the object was written)", last.crd_revision)
        } else {
            String::new()
        };
        (
            Severity::Medium,
            format!(
                "{object} ({api_version}) stores {} its CRD {} does not declare{tightened}: {}; the next write through the API drops {} silently{earlier}",
                if one { "a field" } else { "fields" },
                last.crd,
                list(&paths),
                if one { "it" } else { "them" },
            ),
            vec![latest.mod_revision],
        )
    } else {
        let revisions: BTreeSet<Revision> = pruned.iter().flat_map(|(_, had, gone)| [*had, *gone]).collect();
        (
            Severity::Low,
            format!(
                "{object} ({api_version}): {} ({} not in the schema of its CRD {})",
                dropped(&pruned),
                if pruned.len() == 1 { "it was" } else { "they were" },
                last.crd
            ),
            revisions.into_iter().collect(),
        )
    };
    let pruned_json: Vec<Value> = pruned
        .iter()
        .map(|(path, had, gone)| serde_json::json!({"path": path, "had_at": had, "gone_at": gone}))
        .collect();
    Some(Finding {
        detector: NAME,
        severity,
        keys: vec![latest.key.clone()],
        revisions,
        summary,
        details: serde_json::json!({
            "object": object,
            "crd": last.crd,
            "version": last.version,
            "crd_revision": last.crd_revision,
            "paths": paths,
            "pruned": pruned_json,
            "revision": latest.mod_revision,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "owner": {"type": "object", "properties": {"team": {"type": "string"}}},
                        "ports": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}
                        },
                        "labels": {
                            "type": "object",
                            "additionalProperties": {"type": "object", "properties": {"team": {"type": "string"}}}
                        },
                        "annotations": {"type": "object", "additionalProperties": true},
                        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "opaque": {"type": "object"},
                        "template": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}
                        },
                        "port": {"x-kubernetes-int-or-string": true},
                        "choice": {"type": "object", "properties": {"a": {"type": "string"}}, "oneOf": [{"properties": {"b": {"type": "string"}}}]}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        })
    }

    fn widget(spec: Value) -> Value {
        json!({"apiGroup": "example.com", "kind": "Widget", "metadata": {"name": "w1", "namespace": "shop", "labels": {"x": "y"}}, "spec": spec})
    }

    fn paths(spec: Value) -> Vec<FieldPath> {
        prunable_paths(&widget_schema(), &widget(spec))
    }

    #[test]
    fn undeclared_field_at_the_top_of_spec() {
        assert_eq!(paths(json!({"size": 3, "colour": "red"})), ["spec.colour"]);
        assert!(paths(json!({"size": 3})).is_empty());
    }

    #[test]
    fn nested_in_an_object() {
        assert_eq!(
            paths(json!({"owner": {"team": "a", "email": "x@y"}})),
            ["spec.owner.email"]
        );
        assert!(paths(json!({"owner": {"team": "a"}})).is_empty());
    }

    #[test]
    fn inside_list_items() {
        assert_eq!(
            paths(json!({"ports": [{"port": 80, "protocl": "TCP"}, {"port": 443}]})),
            ["spec.ports[0].protocl"]
        );
        assert!(paths(json!({"ports": [{"port": 80, "protocol": "TCP"}]})).is_empty());
    }

    #[test]
    fn inside_additional_properties_maps() {
        assert_eq!(
            paths(json!({"labels": {"a": {"team": "x"}, "b": {"team": "y", "extra": 1}}})),
            ["spec.labels.b.extra"]
        );
        assert!(paths(json!({"labels": {"a": {"team": "x"}}})).is_empty());
        assert_eq!(
            paths(json!({"labels": {"app.kubernetes.io/name": {"extra": 1}}})),
            [r"spec.labels.app\.kubernetes\.io/name.extra"]
        );
    }

    #[test]
    fn additional_properties_true_keeps_everything() {
        assert!(paths(json!({"annotations": {"a": {"deep": [1, {"x": 2}]}}})).is_empty());
    }

    #[test]
    fn preserved_subtrees_and_a_conforming_object() {
        assert!(paths(json!({"config": {"anything": {"goes": true}}})).is_empty());
        let root_preserves = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert!(prunable_paths(&root_preserves, &widget(json!({"x": 1}))).is_empty());
        assert!(paths(json!({
            "size": 1, "owner": {"team": "a"}, "ports": [{"port": 1}], "labels": {"k": {"team": "t"}},
            "port": "http", "choice": {"a": "x"}
        }))
        .is_empty());
    }

    #[test]
    fn object_without_properties_prunes_everything() {
        assert_eq!(
            paths(json!({"opaque": {"a": 1, "b": {"c": 2}}})),
            ["spec.opaque.a", "spec.opaque.b"]
        );
        let bare = json!({"type": "object"});
        assert_eq!(prunable_paths(&bare, &widget(json!({"x": 1}))), ["spec"]);
    }

    #[test]
    fn embedded_resource_keeps_its_type_and_metadata() {
        let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "anything": 1}, "spec": {"image": "i", "imagePullPolicy": "x"}, "extra": 1});
        assert_eq!(
            paths(json!({"template": template})),
            ["spec.template.extra", "spec.template.spec.imagePullPolicy"]
        );
    }

    #[test]
    fn top_level_type_fields_are_never_prunable_but_status_is_walked() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "whatever": 1}, "status": {"ready": true}});
        assert_eq!(prunable_paths(&schema, &object), ["status"]);
        let object = widget(json!({"size": 1}));
        let mut with_status = object.clone();
        with_status["status"] = json!({"ready": true, "phase": "x"});
        assert_eq!(prunable_paths(&widget_schema(), &with_status), ["status.phase"]);
        // `apiGroup` is the semantic form's `apiVersion`, but a real field
        // when the object has an `apiVersion`.
        let mut real = with_status.clone();
        real["apiVersion"] = json!("example.com/v1");
        assert_eq!(
            prunable_paths(&widget_schema(), &real),
            ["apiGroup", "status.phase"]
        );
    }

    #[test]
    fn type_mismatches_and_combinators_are_skipped() {
        assert!(paths(json!({"owner": "a string", "ports": {"not": "a list"}, "size": {"x": 1}})).is_empty());
        // `oneOf` declares nothing: `b` is pruned.
        assert_eq!(paths(json!({"choice": {"a": "x", "b": "y"}})), ["spec.choice.b"]);
        assert!(paths(json!({"port": {"x": 1}})).is_empty());
    }

    // --- detect ---

    fn crd_v1(versions: &[(&str, Value)]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(name, schema)| json!({"name": name, "served": true, "storage": false, "schema": {"openAPIV3Schema": schema}}))
            .collect();
        json!({
            "apiGroup": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced", "versions": versions}
        })
    }

    fn crd_v1beta1(preserve: Option<bool>, schema: Value) -> Value {
        let mut crd = json!({
            "apiGroup": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "version": "v1",
                     "versions": [{"name": "v1", "served": true, "storage": true}],
                     "validation": {"openAPIV3Schema": schema}}
        });
        if let Some(p) = preserve {
            crd["spec"]["preserveUnknownFields"] = json!(p);
        }
        crd
    }

    fn cr(n: i64, created: i64, api_version: &str) -> ObjectRevision {
        ObjectRevision {
            key: "/registry/example.com/widgets/shop/w1".into(),
            resource: Some("widgets".into()),
            group: Some("example.com".into()),
            mod_revision: Revision(n),
            create_revision: Revision(created),
            kind: Some("Widget".into()),
            namespace: Some("shop".into()),
            name: Some("w1".into()),
            api_version: Some(api_version.into()),
            ..Default::default()
        }
    }

    fn run(history: &[ObjectRevision], schemas: &Schemas, contents: &[(i64, Value)]) -> Option<Finding> {
        let contents: BTreeMap<Revision, Value> = contents.iter().map(|(n, v)| (Revision(*n), v.clone())).collect();
        detect(history, schemas, &mut |r| contents.get(&r.mod_revision).cloned())
    }

    fn one_crd(crd: Value) -> Schemas {
        Schemas::new(vec![vec![(Revision(1), Some(crd))]])
    }

    #[test]
    fn live_object_with_undeclared_fields() {
        let schemas = one_crd(crd_v1(&[("v1", widget_schema())]));
        assert!(schemas.defines("example.com", "widgets"));
        assert!(!schemas.defines("example.com", "gadgets"));
        let f = run(
            &[cr(10, 10, "example.com/v1")],
            &schemas,
            &[(
                10,
                widget(json!({"colour": "red", "ports": [{"port": 1, "protocl": "TCP"}]})),
            )],
        )
        .unwrap();
        assert_eq!((f.severity, f.revisions.clone()), (Severity::Medium, vec![Revision(10)]));
        assert_eq!(
            f.summary,
            "Widget shop/w1 (example.com/v1) stores fields its CRD widgets.example.com does not declare: spec.colour, spec.ports[0].protocl; the next write through the API drops them silently"
        );
        assert_eq!(f.details["crd"], "widgets.example.com");
        assert_eq!(f.details["version"], "v1");
        assert_eq!(
            f.details["paths"],
            json!(["spec.colour", "spec.ports[0].protocl"])
        );
        assert_eq!(f.keys, ["/registry/example.com/widgets/shop/w1"]);
        assert!(run(
            &[cr(10, 10, "example.com/v1")],
            &schemas,
            &[(10, widget(json!({"size": 1})))]
        )
        .is_none());
    }

    #[test]
    fn summary_caps_the_listed_paths() {
        let schemas = one_crd(crd_v1(&[("v1", widget_schema())]));
        let spec: Map<String, Value> = (0..25).map(|i| (format!("x{i:02}"), json!(i))).collect();
        let f = run(
            &[cr(10, 10, "example.com/v1")],
            &schemas,
            &[(10, widget(Value::Object(spec)))],
        )
        .unwrap();
        assert!(
            f.summary.contains("spec.x19, … 5 more; the next"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains(", … 5 more"), "{}", f.summary);
        assert_eq!(f.details["paths"].as_array().unwrap().len(), 25);
    }

    #[test]
    fn v1beta1_form_uses_the_top_level_validation() {
        let object = widget(json!({"colour": "red"}));
        let history = [cr(10, 10, "example.com/v1")];
        // Stored CRDs carry the v1beta1 default (true) explicitly; absent is
        // the semantic form of false.
        assert!(run(
            &history,
            &one_crd(crd_v1beta1(None, widget_schema())),
            &[(10, object.clone())]
        )
        .is_some());
        assert!(run(
            &history,
            &one_crd(crd_v1beta1(Some(true), widget_schema())),
            &[(10, object.clone())]
        )
        .is_none());
        let f = run(
            &history,
            &one_crd(crd_v1beta1(Some(false), widget_schema())),
            &[(10, object.clone())],
        )
        .unwrap();
        assert_eq!(f.details["paths"], json!(["spec.colour"]));
        // The v1 form: absent means false; true keeps everything.
        let mut v1 = crd_v1(&[("v1", widget_schema())]);
        assert!(run(&history, &one_crd(v1.clone()), &[(10, object.clone())]).is_some());
        v1["spec"]["preserveUnknownFields"] = json!(true);
        assert!(run(&history, &one_crd(v1), &[(10, object)]).is_none());
    }

    #[test]
    fn the_schema_of_the_stored_version_is_used() {
        let strict = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
        let loose = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}, "colour": {"type": "string"}}}}});
        let schemas = one_crd(crd_v1(&[("v1", loose.clone()), ("v2", strict.clone())]));
        let object = widget(json!({"size": 1, "colour": "red"}));
        assert!(run(&[cr(10, 10, "example.com/v1")], &schemas, &[(10, object.clone())]).is_none());
        let f = run(&[cr(10, 10, "example.com/v2")], &schemas, &[(10, object.clone())]).unwrap();
        assert_eq!(
            (f.details["version"].clone(), f.details["paths"].clone()),
            (json!("v2"), json!(["spec.colour"]))
        );
        // A version the CRD does not list: no judgement.
        assert!(run(&[cr(10, 10, "example.com/v3")], &schemas, &[(10, object)]).is_none());
    }

    #[test]
    fn the_crd_at_the_revision_is_used() {
        let strict = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
        let loose = json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        // Loose until revision 20, strict from then on, deleted at 40.
        let schemas = Schemas::new(vec![vec![
            (Revision(5), Some(crd_v1(&[("v1", loose)]))),
            (Revision(20), Some(crd_v1(&[("v1", strict)]))),
            (Revision(40), None),
        ]]);
        let object = widget(json!({"size": 1, "colour": "red"}));
        assert!(run(&[cr(10, 10, "example.com/v1")], &schemas, &[(10, object.clone())]).is_none());
        let f = run(
            &[cr(10, 10, "example.com/v1"), cr(25, 10, "example.com/v1")],
            &schemas,
            &[(10, object.clone()), (25, object.clone())],
        )
        .unwrap();
        assert_eq!(f.details["paths"], json!(["spec.colour"]));
        // Written while the CRD was loose, never written again: the next
        // write is pruned by today's schema.
        let still = Schemas::new(vec![vec![
            (Revision(5), Some(crd_v1(&[("v1", json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))]))),
            (Revision(20), Some(crd_v1(&[("v1", json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}))]))),
        ]]);
        let f = run(&[cr(10, 10, "example.com/v1")], &still, &[(10, object.clone())]).unwrap();
        assert_eq!((f.severity, f.details["paths"].clone()), (Severity::Medium, json!(["spec.colour"])));
        assert!(f.summary.contains("(the CRD changed at revision 20, after the object was written)"), "{}", f.summary);
        // Before the CRD existed, or after it was deleted: no judgement.
        assert!(run(&[cr(3, 3, "example.com/v1")], &schemas, &[(3, object.clone())]).is_none());
        assert!(run(&[cr(45, 45, "example.com/v1")], &schemas, &[(45, object)]).is_none());
    }

    #[test]
    fn a_field_pruned_by_a_later_revision() {
        let schemas = one_crd(crd_v1(&[("v1", widget_schema())]));
        let history = [
            cr(10, 10, "example.com/v1"),
            cr(12, 10, "example.com/v1"),
            cr(15, 10, "example.com/v1"),
        ];
        let f = run(
            &history,
            &schemas,
            &[
                (10, widget(json!({"size": 1, "colour": "red"}))),
                (12, widget(json!({"size": 2}))),
                (15, widget(json!({"size": 3}))),
            ],
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Low);
        assert_eq!(f.revisions, [Revision(10), Revision(12)]);
        assert_eq!(
            f.summary,
            "Widget shop/w1 (example.com/v1): spec.colour was dropped at revision 12 (it was not in the schema of its CRD widgets.example.com)"
        );
        assert_eq!(
            f.details["pruned"],
            json!([{"path": "spec.colour", "had_at": 10, "gone_at": 12}])
        );
        assert_eq!(f.details["paths"], json!([]));
        // Still there at the latest revision: Medium, with the earlier drop.
        let f = run(
            &history,
            &schemas,
            &[
                (10, widget(json!({"colour": "red", "shape": "round"}))),
                (12, widget(json!({"shape": "round"}))),
                (15, widget(json!({"shape": "round"}))),
            ],
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Medium);
        assert!(
            f.summary
                .ends_with("; earlier, spec.colour was dropped at revision 12"),
            "{}",
            f.summary
        );
        // Declared by a later schema: not dropped.
        let with_colour = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"colour": {"type": "string"}}}}});
        let schemas = Schemas::new(vec![vec![
            (
                Revision(1),
                Some(crd_v1(&[(
                    "v1",
                    json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
                )])),
            ),
            (Revision(11), Some(crd_v1(&[("v1", with_colour)]))),
        ]]);
        assert!(run(
            &history[..2],
            &schemas,
            &[
                (10, widget(json!({"colour": "red"}))),
                (12, widget(json!({"colour": "red"})))
            ]
        )
        .is_none());
    }

    #[test]
    fn a_previous_generation_does_not_count() {
        let schemas = one_crd(crd_v1(&[("v1", widget_schema())]));
        let mut gone = cr(12, 10, "example.com/v1");
        gone.deleted = true;
        let history = [cr(10, 10, "example.com/v1"), gone, cr(14, 14, "example.com/v1")];
        let contents = [
            (10, widget(json!({"colour": "red"}))),
            (14, widget(json!({"size": 1}))),
        ];
        assert!(run(&history, &schemas, &contents).is_none());
    }

    #[test]
    fn a_deleted_object_has_no_finding() {
        let schemas = one_crd(crd_v1(&[("v1", widget_schema())]));
        let mut gone = cr(12, 10, "example.com/v1");
        gone.deleted = true;
        assert!(run(
            &[cr(10, 10, "example.com/v1"), gone],
            &schemas,
            &[(10, widget(json!({"colour": "red"})))]
        )
        .is_none());
    }
}

//! Joins the k8s-pb and k8s-openapi facts into the schema we emit:
//! upstream message names, exact JSON names, inlined fields, list wrappers
//! and the apiVersion/kind table.

use crate::naming::{go_type_name_from_rust, json_name_from_rust, normalize, proto_ident};
use crate::openapi::{self, OpenApi};
use crate::pb::{Field, Message, ModulePath, PbCrate, Scope, Shape, TypeRef, ValueType};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A field as written to a `.proto` file.
pub struct ProtoField {
    pub ident: String,
    pub json_name: String,
    pub tag: u32,
    /// `optional T`, `repeated T` or `map<K, V>` text, with message types
    /// fully qualified.
    pub type_text: String,
    pub inline: bool,
}

pub struct ProtoMessage {
    pub name: String,
    pub list_wrapper: bool,
    pub fields: Vec<ProtoField>,
}

pub struct Package {
    pub module: ModulePath,
    pub imports: BTreeSet<ModulePath>,
    pub messages: Vec<ProtoMessage>,
}

/// One row of the apiVersion/kind → message table.
pub struct KindRow {
    pub api_version: String,
    pub kind: String,
    pub message: String,
    pub plural: String,
    pub scope: &'static str,
}

pub struct Schema {
    pub packages: Vec<Package>,
    pub kinds: Vec<KindRow>,
    pub stats: Stats,
}

/// What the generator had to infer, printed so a reviewer can check it.
#[derive(Default)]
pub struct Stats {
    pub inlined: Vec<String>,
    pub list_wrappers: Vec<String>,
    pub rule_named: Vec<String>,
}

/// `k8s.io.api.core.v1` for `["api", "core", "v1"]`.
pub fn package_name(module: &ModulePath) -> String {
    format!("k8s.io.{}", module.join("."))
}

struct Ctx<'a> {
    pb: &'a PbCrate,
    oa: &'a OpenApi,
    by_id: HashMap<&'a TypeRef, &'a Message>,
    names: HashMap<TypeRef, String>,
    /// Every JSON name spelled one way only across all k8s-openapi structs.
    unique_json: BTreeMap<String, Option<String>>,
}

pub fn build(pb: &PbCrate, oa: &OpenApi) -> Schema {
    let by_id = pb.messages.iter().map(|m| (&m.id, m)).collect();
    let mut unique_json: BTreeMap<String, Option<String>> = BTreeMap::new();
    for s in oa.structs.values() {
        for (norm, json) in &s.json_names {
            unique_json
                .entry(norm.clone())
                .and_modify(|v| {
                    if v.as_deref() != Some(json) {
                        *v = None
                    }
                })
                .or_insert_with(|| Some(json.clone()));
        }
    }
    let mut ctx = Ctx {
        pb,
        oa,
        by_id,
        names: HashMap::new(),
        unique_json,
    };
    for m in &pb.messages {
        let name = ctx.message_name(&m.id);
        ctx.names.insert(m.id.clone(), name);
    }
    let mut stats = Stats::default();
    let mut packages: BTreeMap<ModulePath, Package> = BTreeMap::new();
    for m in &pb.messages {
        let pkg = packages.entry(m.id.module.clone()).or_insert_with(|| Package {
            module: m.id.module.clone(),
            imports: BTreeSet::new(),
            messages: Vec::new(),
        });
        let msg = ctx.message(m, &mut pkg.imports, &mut stats);
        pkg.messages.push(msg);
    }
    for p in packages.values_mut() {
        p.messages.sort_by(|a, b| a.name.cmp(&b.name));
        let own = p.module.clone();
        p.imports.remove(&own);
    }
    let kinds = ctx.kinds();
    Schema {
        packages: packages.into_values().collect(),
        kinds,
        stats,
    }
}

impl<'a> Ctx<'a> {
    fn pb_resource(&self, id: &TypeRef) -> Option<&'a crate::pb::Resource> {
        self.pb
            .resources
            .iter()
            .find(|r| &r.id == id && r.scope != Scope::Subresource)
    }

    /// Upstream (Go) message name: the kind, else k8s-openapi's spelling,
    /// else the acronym rule.
    fn message_name(&self, id: &TypeRef) -> String {
        if let Some(r) = self.pb.resources.iter().find(|r| &r.id == id) {
            return r.kind.clone();
        }
        let lc = id.name.to_lowercase();
        if let Some(s) = self.oa.structs.get(&(id.module.clone(), lc.clone())) {
            return s.name.clone();
        }
        if let Some(s) = self
            .oa
            .structs
            .iter()
            .find(|((_, n), _)| *n == lc)
            .map(|(_, s)| s)
        {
            return s.name.clone();
        }
        go_type_name_from_rust(&id.name)
    }

    fn full_name(&self, id: &TypeRef) -> String {
        format!(".{}.{}", package_name(&id.module), self.names[id])
    }

    /// k8s-openapi structs with this message's name: the same module first.
    fn openapi_structs(&self, id: &TypeRef) -> Vec<(&'a ModulePath, &'a openapi::Struct)> {
        let lc = self.names[id].to_lowercase();
        let mut same = Vec::new();
        let mut other = Vec::new();
        for ((module, n), s) in &self.oa.structs {
            if *n == lc {
                if *module == id.module {
                    same.push((module, s));
                } else {
                    other.push((module, s));
                }
            }
        }
        same.extend(other);
        same
    }

    fn message(&self, m: &Message, imports: &mut BTreeSet<ModulePath>, stats: &mut Stats) -> ProtoMessage {
        let name = self.names[&m.id].clone();
        let structs = self.openapi_structs(&m.id);
        let list_wrapper = m.fields.len() == 1
            && m.fields[0].rust_name == "items"
            && matches!(m.fields[0].shape, Shape::Repeated(ValueType::Scalar(_)))
            && structs.is_empty();
        if list_wrapper {
            stats
                .list_wrappers
                .push(format!("{}.{}", package_name(&m.id.module), name));
        }
        let mut fields = Vec::new();
        for f in &m.fields {
            let norm = normalize(&f.rust_name);
            let found = structs.iter().find_map(|(_, s)| s.json_names.get(&norm).cloned());
            let inline = found.is_none() && self.is_inline(m, f);
            let json_name = match (found, inline) {
                (Some(j), _) => j,
                (None, true) => {
                    stats
                        .inlined
                        .push(format!("{}.{}.{}", package_name(&m.id.module), name, f.rust_name));
                    json_name_from_rust(&f.rust_name)
                }
                (None, false) => match self.unique_json.get(&norm) {
                    Some(Some(j)) => j.clone(),
                    _ => {
                        stats.rule_named.push(format!(
                            "{}.{}.{}",
                            package_name(&m.id.module),
                            name,
                            f.rust_name
                        ));
                        json_name_from_rust(&f.rust_name)
                    }
                },
            };
            let type_text = self.type_text(&f.shape, imports);
            fields.push(ProtoField {
                ident: proto_ident(&json_name),
                json_name,
                tag: f.tag,
                type_text,
                inline,
            });
        }
        ProtoMessage {
            name,
            list_wrapper,
            fields,
        }
    }

    fn value_text(&self, v: &ValueType, imports: &mut BTreeSet<ModulePath>) -> String {
        match v {
            ValueType::Scalar(s) => s.clone(),
            ValueType::Message(id) => {
                imports.insert(id.module.clone());
                self.full_name(id)
            }
        }
    }

    fn type_text(&self, shape: &Shape, imports: &mut BTreeSet<ModulePath>) -> String {
        match shape {
            Shape::Optional(v) => format!("optional {}", self.value_text(v, imports)),
            Shape::Repeated(v) => format!("repeated {}", self.value_text(v, imports)),
            Shape::Map { key, value } => format!("map<{key}, {}>", self.value_text(value, imports)),
        }
    }

    /// A singular message field that JSON flattens into its parent (Go
    /// `json:",inline"`): k8s-openapi's corresponding struct lacks the field
    /// but has the fields of the field's message. The corresponding struct
    /// is the one in the same group/version, or in another version where
    /// k8s-pb's message has this same field of this same type.
    fn is_inline(&self, m: &Message, f: &Field) -> bool {
        let Shape::Optional(ValueType::Message(inner)) = &f.shape else {
            return false;
        };
        let Some(inner_msg) = self.by_id.get(inner) else {
            return false;
        };
        let lc = self.names[&m.id].to_lowercase();
        let corresponding = self
            .oa
            .structs
            .get(&(m.id.module.clone(), lc.clone()))
            .or_else(|| {
                self.oa.structs.iter().find_map(|((module, n), s)| {
                    if *n != lc {
                        return None;
                    }
                    let twin = self.by_id.get(&TypeRef {
                        module: module.clone(),
                        name: m.id.name.clone(),
                    })?;
                    let same_field = twin.fields.iter().any(|tf| {
                    tf.rust_name == f.rust_name
                        && matches!(&tf.shape, Shape::Optional(ValueType::Message(t)) if t.name == inner.name)
                });
                    same_field.then_some(s)
                })
            });
        let Some(parent) = corresponding else { return false };
        !parent.json_names.contains_key(&normalize(&f.rust_name))
            && inner_msg
                .fields
                .iter()
                .any(|inner_f| parent.json_names.contains_key(&normalize(&inner_f.rust_name)))
    }

    /// The API group of a k8s-pb module directory (`api/rbac` →
    /// `rbac.authorization.k8s.io`), from its `Resource` impls, else
    /// Kubernetes' naming rule.
    fn group_of(&self, module: &ModulePath) -> String {
        let dir = &module[..module.len() - 1];
        if let Some(r) = self
            .pb
            .resources
            .iter()
            .find(|r| &r.id.module[..r.id.module.len() - 1] == dir)
        {
            return r.group.clone();
        }
        let name = dir.last().map(String::as_str).unwrap_or_default();
        match name {
            "core" => String::new(),
            "extensions" => "extensions".into(),
            other => format!("{}.k8s.io", other.replace('_', ".")),
        }
    }

    /// Top-level kinds: k8s-pb's `Resource` impls, plus every message `X`
    /// with an `XList { metadata: ListMeta, items: repeated X }` beside it
    /// (how Kubernetes declares a kind) in API packages.
    fn kinds(&self) -> Vec<KindRow> {
        let mut rows: BTreeMap<(String, String), KindRow> = BTreeMap::new();
        for r in self.pb.resources.iter().filter(|r| r.scope != Scope::Subresource) {
            rows.insert(
                (r.api_version.clone(), r.kind.clone()),
                KindRow {
                    api_version: r.api_version.clone(),
                    kind: r.kind.clone(),
                    message: self.full_name(&r.id)[1..].to_string(),
                    plural: r.plural.clone(),
                    scope: scope_text(r.scope),
                },
            );
        }
        for m in &self.pb.messages {
            if m.id.module.first().map(String::as_str) == Some("apimachinery") || !self.has_list(m) {
                continue;
            }
            let group = self.group_of(&m.id.module);
            let version = m.id.module.last().cloned().unwrap_or_default();
            let api_version = if group.is_empty() {
                version
            } else {
                format!("{group}/{version}")
            };
            let kind = self.names[&m.id].clone();
            if rows.contains_key(&(api_version.clone(), kind.clone())) || self.pb_resource(&m.id).is_some() {
                continue;
            }
            let known = self
                .pb
                .resources
                .iter()
                .filter(|r| r.group == group && r.kind == kind)
                .map(|r| (r.plural.clone(), r.scope))
                .chain(
                    self.oa
                        .resources
                        .iter()
                        .filter(|r| r.group == group && r.kind == kind)
                        .map(|r| (r.plural.clone(), r.scope)),
                )
                .chain(
                    self.oa
                        .resources
                        .iter()
                        .filter(|r| r.kind == kind)
                        .map(|r| (r.plural.clone(), r.scope)),
                )
                .find(|(_, s)| *s != Scope::Subresource);
            let (plural, scope) = match known {
                Some((p, s)) => (p, scope_text(s)),
                None => ("-".to_string(), "-"),
            };
            rows.insert(
                (api_version.clone(), kind.clone()),
                KindRow {
                    api_version,
                    kind,
                    message: self.full_name(&m.id)[1..].to_string(),
                    plural,
                    scope,
                },
            );
        }
        rows.into_values().collect()
    }

    fn has_list(&self, m: &Message) -> bool {
        let list = TypeRef {
            module: m.id.module.clone(),
            name: format!("{}List", m.id.name),
        };
        let Some(list) = self.by_id.get(&list) else {
            return false;
        };
        let meta = list.fields.iter().any(|f| {
            f.rust_name == "metadata"
                && matches!(&f.shape, Shape::Optional(ValueType::Message(t)) if t.name == "ListMeta")
        });
        let items = list.fields.iter().any(|f| {
            f.rust_name == "items" && matches!(&f.shape, Shape::Repeated(ValueType::Message(t)) if *t == m.id)
        });
        meta && items
    }
}

fn scope_text(s: Scope) -> &'static str {
    match s {
        Scope::Namespaced => "namespaced",
        Scope::Cluster => "cluster",
        Scope::Subresource => "subresource",
    }
}

//! The Kubernetes protobuf schema compiled from `proto/` at build time, and
//! the apiVersion/kind → message table generated beside it.

use prost_reflect::{DescriptorPool, MessageDescriptor, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, OnceLock};

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/k8s_descriptors.bin"));
static KINDS_TSV: &str = include_str!("../../proto/kinds.tsv");

/// Message used for a kind the schema does not know.
const UNKNOWN_OBJECT: &str = "etcd_inspector.UnknownObject";

/// Scope of a top-level kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
    Unknown,
}

/// One row of `proto/kinds.tsv`.
#[derive(Clone, Debug)]
pub struct KindInfo {
    pub api_version: String,
    pub kind: String,
    pub message: String,
    /// Plural resource name (`pods`), `-` where the crates do not say.
    pub resource: String,
    pub scope: Scope,
}

impl KindInfo {
    /// The API group: `""` for core.
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

/// How the message for an envelope's apiVersion/kind was found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "schema", content = "from")]
pub enum Resolution {
    /// The schema has this exact apiVersion and kind.
    Exact,
    /// The schema lacks this version; the same kind of another version of the
    /// group was used (Kubernetes keeps field numbers across versions).
    OtherVersion(String),
    /// The schema lacks the kind: only `metadata` decodes by name.
    Unknown,
    /// The schema lacks the kind and its field 1 is not an `ObjectMeta`:
    /// decoded without a schema, every field kept by number.
    Schemaless,
}

/// The loaded schema.
pub struct Schema {
    pub pool: DescriptorPool,
    /// Which schema this is, for runs and `decode --show-envelope`.
    pub origin: String,
    /// Kinds outside the table resolve by Kubernetes' package convention
    /// (for given files, which may define kinds the table lacks).
    by_convention: bool,
    kinds: Vec<KindInfo>,
    by_type: HashMap<(String, String), usize>,
    package_of: HashMap<String, String>,
    inline_fields: HashMap<String, HashSet<u32>>,
    list_wrappers: HashSet<String>,
    /// The decoding plans of every message, made on first use.
    plans: OnceLock<super::plan::Plans>,
}

/// What the built-in schema is.
pub const BUILT_IN: &str = "built-in Kubernetes 1.35 (k8s-pb 0.9)";

/// The schema built into this binary.
pub fn built_in() -> &'static Schema {
    static SCHEMA: LazyLock<Schema> = LazyLock::new(Schema::load);
    &SCHEMA
}

static INSTALLED: OnceLock<Schema> = OnceLock::new();

/// The schema decoding uses: one [`install`]ed at start-up, or the built-in one.
pub fn schema() -> &'static Schema {
    INSTALLED.get().unwrap_or_else(|| built_in())
}

/// The origin of the schema decoding uses, without loading it: a run records
/// it before anything is decoded.
pub fn origin() -> &'static str {
    INSTALLED.get().map_or(BUILT_IN, |s| s.origin.as_str())
}

/// Loads the schema decoding uses on a thread of its own, so that building
/// it (20 to 30 ms for the built-in one) overlaps a run's opening of its
/// database and its source instead of delaying the first decode.
pub fn load_in_background() {
    std::thread::spawn(|| {
        schema();
    });
}

/// Makes `schema` the one every later decode uses (`--proto-path`); once
/// per process.
pub fn install(schema: Schema) -> Result<(), String> {
    INSTALLED
        .set(schema)
        .map_err(|_| "a schema is already installed".to_string())
}

impl Schema {
    fn load() -> Schema {
        let pool = DescriptorPool::decode(DESCRIPTORS).expect("descriptor set built by build.rs is valid");
        Schema::with_facts(pool, BUILT_IN.to_string(), None)
    }

    /// The built-in encoded descriptor set.
    pub(super) fn built_in_descriptors() -> &'static [u8] {
        DESCRIPTORS
    }

    /// A schema over `pool`. Inlined fields and list wrappers come from the
    /// pool's own options, or, for a pool built from other files
    /// (`facts`), from the built-in schema by message and field name, with
    /// a new message that holds only a repeated scalar `items` a wrapper.
    pub(super) fn with_facts(pool: DescriptorPool, origin: String, facts: Option<&Schema>) -> Schema {
        let mut kinds = Vec::new();
        for line in KINDS_TSV.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let cols: Vec<&str> = line.split('\t').collect();
            let [api_version, kind, message, resource, scope] = cols[..] else {
                panic!("proto/kinds.tsv: bad line {line:?}");
            };
            kinds.push(KindInfo {
                api_version: api_version.into(),
                kind: kind.into(),
                message: message.into(),
                resource: resource.into(),
                scope: match scope {
                    "namespaced" => Scope::Namespaced,
                    "cluster" => Scope::Cluster,
                    _ => Scope::Unknown,
                },
            });
        }
        let by_type = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| ((k.api_version.clone(), k.kind.clone()), i))
            .collect();
        let package_of = kinds
            .iter()
            .map(|k| {
                (
                    k.api_version.clone(),
                    k.message
                        .rsplit_once('.')
                        .map(|(p, _)| p)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        let mut inline_fields: HashMap<String, HashSet<u32>> = HashMap::new();
        let mut list_wrappers = HashSet::new();
        match facts {
            None => {
                let inline = pool
                    .get_extension_by_name("etcd_inspector.inline")
                    .expect("inline option");
                let wrapper = pool
                    .get_extension_by_name("etcd_inspector.list_wrapper")
                    .expect("list_wrapper option");
                for m in pool.all_messages() {
                    if m.options().get_extension(&wrapper).as_ref() == &Value::Bool(true) {
                        list_wrappers.insert(m.full_name().to_string());
                    }
                    for f in m.fields() {
                        if f.options().get_extension(&inline).as_ref() == &Value::Bool(true) {
                            inline_fields
                                .entry(m.full_name().to_string())
                                .or_default()
                                .insert(f.number());
                        }
                    }
                }
            }
            Some(facts) => {
                for m in pool.all_messages() {
                    let name = m.full_name().to_string();
                    match facts.pool.get_message_by_name(&name) {
                        Some(known) => {
                            if facts.is_list_wrapper(&known) {
                                list_wrappers.insert(name.clone());
                            }
                            for f in m.fields() {
                                let inlined = known
                                    .get_field_by_name(f.name())
                                    .is_some_and(|k| facts.is_inline(&known, k.number()));
                                if inlined {
                                    inline_fields.entry(name.clone()).or_default().insert(f.number());
                                }
                            }
                        }
                        None => {
                            let fields: Vec<_> = m.fields().collect();
                            if let [only] = &fields[..] {
                                if only.name() == "items"
                                    && only.is_list()
                                    && only.kind().as_message().is_none()
                                {
                                    list_wrappers.insert(name);
                                }
                            }
                        }
                    }
                }
            }
        }
        Schema {
            by_convention: facts.is_some(),
            pool,
            origin,
            kinds,
            by_type,
            package_of,
            inline_fields,
            list_wrappers,
            plans: OnceLock::new(),
        }
    }

    /// The decoding plans of every message of the pool.
    pub(super) fn plans(&self) -> &super::plan::Plans {
        self.plans.get_or_init(|| super::plan::Plans::build(self))
    }

    /// Every kind in the table.
    pub fn kinds(&self) -> &[KindInfo] {
        &self.kinds
    }

    /// The table row for an apiVersion and kind.
    pub fn kind(&self, api_version: &str, kind: &str) -> Option<&KindInfo> {
        self.by_type
            .get(&(api_version.to_string(), kind.to_string()))
            .map(|&i| &self.kinds[i])
    }

    /// Whether JSON flattens this field into its parent.
    pub fn is_inline(&self, message: &MessageDescriptor, number: u32) -> bool {
        self.inline_numbers(message).is_some_and(|s| s.contains(&number))
    }

    /// The numbers of the message's inlined fields, if it has any.
    pub fn inline_numbers(&self, message: &MessageDescriptor) -> Option<&HashSet<u32>> {
        self.inline_fields.get(message.full_name())
    }

    /// Whether this message is a one-field wrapper shown as a bare array.
    pub fn is_list_wrapper(&self, message: &MessageDescriptor) -> bool {
        self.list_wrappers.contains(message.full_name())
    }

    /// The message to decode an object of this apiVersion and kind with.
    pub fn resolve(&self, api_version: &str, kind: &str) -> (MessageDescriptor, Resolution) {
        if let Some(k) = self.kind(api_version, kind) {
            if let Some(m) = self.pool.get_message_by_name(&k.message) {
                return (m, Resolution::Exact);
            }
        }
        // Types that are not stored kinds (PodExecOptions, Eviction, ...)
        // still live in their group/version's package under their kind name.
        if let Some(pkg) = self.package_of.get(api_version) {
            if let Some(m) = self.pool.get_message_by_name(&format!("{pkg}.{kind}")) {
                return (m, Resolution::Exact);
            }
        }
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        // A version the table lacks, by Kubernetes' package convention
        // (`k8s.io.api.<group's package>.<version>.<Kind>`), as given files
        // may define it.
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let package = self
            .kinds
            .iter()
            .find(|k| k.group() == group)
            .and_then(|k| self.package_of.get(&k.api_version))
            .and_then(|p| p.rsplit_once('.').map(|(prefix, _)| prefix.to_string()))
            .unwrap_or_else(|| match group {
                "" => "k8s.io.api.core".to_string(),
                g => format!("k8s.io.api.{}", g.split('.').next().unwrap_or(g)),
            });
        let by_convention = self
            .by_convention
            .then(|| {
                self.pool
                    .get_message_by_name(&format!("{package}.{version}.{kind}"))
            })
            .flatten();
        if let Some(m) = by_convention {
            return (m, Resolution::Exact);
        }
        let mut others: Vec<&KindInfo> = self
            .kinds
            .iter()
            .filter(|k| k.kind == kind && k.group() == group && k.api_version != api_version)
            .collect();
        others
            .sort_by_key(|k| std::cmp::Reverse(version_rank(k.api_version.rsplit('/').next().unwrap_or(""))));
        for k in others {
            if let Some(m) = self.pool.get_message_by_name(&k.message) {
                return (m, Resolution::OtherVersion(k.api_version.clone()));
            }
        }
        let m = self
            .pool
            .get_message_by_name(UNKNOWN_OBJECT)
            .expect("UnknownObject is generated");
        (m, Resolution::Unknown)
    }
}

/// Orders Kubernetes versions: GA above beta above alpha, then by number.
fn version_rank(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stage, n) = if let Some(n) = tail.strip_prefix("beta") {
        (2, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n)
    } else {
        (3, tail)
    };
    (stage, major, n.parse().unwrap_or(0))
}

impl super::plan::Layout for Schema {
    fn messages(&self) -> Vec<MessageDescriptor> {
        self.pool.all_messages().collect()
    }

    fn is_list_wrapper(&self, message: &MessageDescriptor) -> bool {
        Schema::is_list_wrapper(self, message)
    }

    fn is_inline(&self, message: &MessageDescriptor, number: u32) -> bool {
        Schema::is_inline(self, message, number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_ga_beta_alpha() {
        let mut v = vec!["v1alpha1", "v1", "v1beta2", "v1beta1", "v2"];
        v.sort_by_key(|s| std::cmp::Reverse(version_rank(s)));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn loads_every_kind_message() {
        let s = schema();
        for k in s.kinds() {
            assert!(
                s.pool.get_message_by_name(&k.message).is_some(),
                "{} has no message",
                k.message
            );
        }
        let (pod, how) = s.resolve("v1", "Pod");
        assert_eq!(
            (pod.full_name(), how),
            ("k8s.io.api.core.v1.Pod", Resolution::Exact)
        );
    }
}

//! Objects named as kubectl names them: `deploy/web`, `deployments.apps/web`,
//! `deployment.v1.apps/web`, `cm web-config`, `gizmos.example.com/g1`, or
//! by an etcd key. A resource type is found by its plural, singular, short
//! name or kind, optionally with its group: among the built-in resources
//! (the schema's kinds; short names from `discovery.tsv`, kube-apiserver's
//! own discovery facts) and the custom resources of stored CRDs.

use super::key::{builtin_group, parse_key, qualified, COMPACT_REV_KEY, DEFAULT_PREFIX};
use super::schema::{schema, Scope};
use serde_json::Value;
use std::collections::BTreeMap;

static DISCOVERY_TSV: &str = include_str!("discovery.tsv");

/// The group and resource CRDs are stored as.
pub const CRDS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

/// Resource types listed in an unknown name's error, at most.
const SUGGESTED: usize = 8;

/// One resource type and every name it answers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceType {
    /// The group its objects are stored under (`""` for core): cohabiting
    /// resources (`events`, `deployments`, `ingresses`) have one.
    pub group: String,
    /// Plural resource name, as keys and `--resource` name it.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub short_names: Vec<String>,
    /// Every group that serves it (`events`: core and `events.k8s.io`).
    pub served_in: Vec<String>,
    pub namespaced: bool,
}

impl ResourceType {
    /// `resource.group`, as kubectl prints it (`deployments.apps`, `pods`).
    pub fn qualified(&self) -> String {
        qualified(&self.resource, &self.group)
    }

    /// Whether `word` (lower-cased) names it without a group.
    fn answers_to(&self, word: &str) -> bool {
        self.resource == word
            || self.singular == word
            || self.kind.to_lowercase() == word
            || self.short_names.iter().any(|s| s == word)
    }

    /// Whether `word` (lower-cased) names it: alone, as `NAME.GROUP` or as
    /// `NAME.VERSION.GROUP`.
    fn matches(&self, word: &str) -> bool {
        if self.answers_to(word) {
            return true;
        }
        let Some((name, rest)) = word.split_once('.') else {
            return false;
        };
        let group = match rest.split_once('.') {
            Some((version, group)) if is_version(version) => group,
            _ => rest,
        };
        self.served_in.iter().any(|g| g == group) && self.answers_to(name)
    }

    /// Every name it answers to, for suggestions.
    fn all_names(&self) -> impl Iterator<Item = String> + '_ {
        [
            self.resource.clone(),
            self.singular.clone(),
            self.kind.to_lowercase(),
        ]
        .into_iter()
        .chain(self.short_names.iter().cloned())
    }
}

/// `v1`, `v1beta2`, `v2alpha1`.
fn is_version(text: &str) -> bool {
    text.strip_prefix('v')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// A name that does not resolve to one thing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("unknown resource type {word:?}{}", suggest(candidates))]
    Unknown { word: String, candidates: Vec<String> },
    #[error("resource type {word:?} is ambiguous: it names {}; give one with its group", candidates.join(", "))]
    Ambiguous { word: String, candidates: Vec<String> },
    #[error("{text:?} is not an object: give TYPE/NAME (deploy/web), TYPE NAME (deploy web) or an etcd key (/registry/...)")]
    Malformed { text: String },
}

fn suggest(candidates: &[String]) -> String {
    if candidates.is_empty() {
        " (not a built-in resource nor one of a stored CRD)".into()
    } else {
        format!(" (did you mean {}?)", candidates.join(", "))
    }
}

/// How a command was told which object: an etcd key, or a type and a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectSpec {
    Key(String),
    Named { word: String, name: String },
}

/// Reads `deploy/web`, `deploy web` (`first`, `second`) or an etcd key.
pub fn parse_object(first: &str, second: Option<&str>) -> Result<ObjectSpec, NameError> {
    let malformed = || NameError::Malformed {
        text: match second {
            Some(s) => format!("{first} {s}"),
            None => first.to_string(),
        },
    };
    if first.starts_with('/') || first == COMPACT_REV_KEY {
        return match second {
            None => Ok(ObjectSpec::Key(first.to_string())),
            Some(_) => Err(malformed()),
        };
    }
    let (word, name) = match (first.split_once('/'), second) {
        (Some((word, name)), None) => (word, name),
        (None, Some(name)) => (first, name),
        _ => return Err(malformed()),
    };
    if word.is_empty() || name.is_empty() || name.contains('/') {
        return Err(malformed());
    }
    Ok(ObjectSpec::Named {
        word: word.to_string(),
        name: name.to_string(),
    })
}

/// One object by its resource type, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub resource: ResourceType,
    /// `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.resource.qualified(), self.name)?;
        match &self.namespace {
            Some(ns) => write!(f, " in namespace {ns}"),
            None => Ok(()),
        }
    }
}

/// The namespace kubectl uses when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// The resource types names resolve against.
#[derive(Clone, Debug)]
pub struct Catalog {
    types: Vec<ResourceType>,
}

impl Catalog {
    /// The built-in resources of the schema in use.
    pub fn built_in() -> Catalog {
        let mut short: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
        for line in DISCOVERY_TSV
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let cols: Vec<&str> = line.split('\t').collect();
            let [group, resource, names] = cols[..] else {
                panic!("decode/discovery.tsv: bad line {line:?}");
            };
            short.insert((group, resource), names.split(',').map(str::to_string).collect());
        }
        let mut by_storage: BTreeMap<(String, String), ResourceType> = BTreeMap::new();
        for k in schema().kinds() {
            if k.resource == "-" || k.scope == Scope::Unknown {
                continue;
            }
            let storage = builtin_group(&k.resource);
            let t = by_storage
                .entry((storage.clone(), k.resource.clone()))
                .or_insert_with(|| ResourceType {
                    group: storage.clone(),
                    resource: k.resource.clone(),
                    singular: k.kind.to_lowercase(),
                    kind: k.kind.clone(),
                    short_names: Vec::new(),
                    served_in: Vec::new(),
                    namespaced: k.scope == Scope::Namespaced,
                });
            // The storage group's kind names the type.
            if k.group() == storage && t.kind != k.kind {
                t.kind = k.kind.clone();
                t.singular = k.kind.to_lowercase();
            }
            if !t.served_in.iter().any(|g| g == k.group()) {
                t.served_in.push(k.group().to_string());
                for s in short.get(&(k.group(), k.resource.as_str())).into_iter().flatten() {
                    if !t.short_names.contains(s) {
                        t.short_names.push(s.clone());
                    }
                }
            }
        }
        Catalog {
            types: by_storage.into_values().collect(),
        }
    }

    /// Adds the custom resource a CRD defines, read from its stored content
    /// (`spec.group`, `spec.names`, `spec.scope`); `false` when the content
    /// does not say. A CRD of a type already known replaces it.
    pub fn add_crd(&mut self, crd: &Value) -> bool {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let spec = crd.get("spec");
        let names = spec.and_then(|s| s.get("names"));
        let (Some(group), Some(resource), Some(kind)) = (
            text(spec.and_then(|s| s.get("group"))),
            text(names.and_then(|n| n.get("plural"))),
            text(names.and_then(|n| n.get("kind"))),
        ) else {
            return false;
        };
        let t = ResourceType {
            singular: text(names.and_then(|n| n.get("singular"))).unwrap_or_else(|| kind.to_lowercase()),
            short_names: names
                .and_then(|n| n.get("shortNames"))
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            served_in: vec![group.clone()],
            namespaced: text(spec.and_then(|s| s.get("scope"))).as_deref() != Some("Cluster"),
            group,
            resource,
            kind,
        };
        self.types
            .retain(|o| (&o.group, &o.resource) != (&t.group, &t.resource));
        self.types.push(t);
        true
    }

    /// The one resource type `word` names.
    pub fn resolve(&self, word: &str) -> Result<&ResourceType, NameError> {
        let lower = word.to_lowercase();
        let found: Vec<&ResourceType> = self.types.iter().filter(|t| t.matches(&lower)).collect();
        match found[..] {
            [one] => Ok(one),
            [] => Err(NameError::Unknown {
                word: word.to_string(),
                candidates: self.similar(&lower),
            }),
            _ => Err(NameError::Ambiguous {
                word: word.to_string(),
                candidates: found.iter().map(|t| t.qualified()).collect(),
            }),
        }
    }

    /// The object `word`/`name` names; a namespaced one in `namespace`
    /// (kubectl's `default` when `None`), a cluster-scoped one ignoring it.
    pub fn object(&self, word: &str, name: &str, namespace: Option<&str>) -> Result<ObjectRef, NameError> {
        let resource = self.resolve(word)?.clone();
        let namespace = resource
            .namespaced
            .then(|| namespace.unwrap_or(DEFAULT_NAMESPACE).to_string());
        Ok(ObjectRef {
            resource,
            namespace,
            name: name.to_string(),
        })
    }

    /// The name `kubectl get -o name` prints for the object stored under
    /// `key`: its kind lower-cased with its group (`deployment.apps/web`,
    /// `pod/web`), or its resource when no type here has it; the key itself
    /// when it names no object (not under the default prefix, or one of
    /// kube-apiserver's own keys).
    pub fn printed_name(&self, key: &str) -> String {
        let Ok(parsed) = parse_key(key, DEFAULT_PREFIX) else {
            return key.to_string();
        };
        let Some(name) = parsed.name.filter(|_| parsed.special.is_none()) else {
            return key.to_string();
        };
        let kind = self
            .types
            .iter()
            .find(|t| t.group == parsed.group && t.resource == parsed.resource)
            .map_or(parsed.resource, |t| t.kind.to_lowercase());
        format!("{}/{name}", qualified(&kind, &parsed.group))
    }

    /// Types with a name close to `word`: sharing its start, or at most two
    /// edits away.
    fn similar(&self, word: &str) -> Vec<String> {
        let head = word.split('.').next().unwrap_or(word);
        let mut out: Vec<String> = self
            .types
            .iter()
            .filter(|t| {
                t.all_names().any(|n| {
                    (head.len() >= 3 && (n.starts_with(head) || head.starts_with(n.as_str())))
                        || edits(head, &n) <= 2
                })
            })
            .map(ResourceType::qualified)
            .collect();
        out.sort();
        out.dedup();
        out.truncate(SUGGESTED);
        out
    }
}

/// Kubernetes' version priority (`v1` > `v1beta2` > `v1beta1` >
/// `v1alpha1`), as a sortable key; `None` for a name not in that form.
fn version_rank(version: &str) -> Option<(u32, u32, u32)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let major: u32 = rest[..digits].parse().ok()?;
    let (stage, minor) = match &rest[digits..] {
        "" => (2, 0),
        tail => match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
            (Some(n), _) => (1, n.parse().ok()?),
            (_, Some(n)) => (0, n.parse().ok()?),
            _ => return None,
        },
    };
    Some((stage, major, minor))
}

/// The newest apiVersion the schema has `kind` of `api_version`'s group in,
/// when it is newer than `api_version` (an object stored as `apps/v1beta2`
/// that a current cluster serves only as `apps/v1`).
pub fn newer_api_version(api_version: &str, kind: &str) -> Option<String> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let rank = version_rank(version)?;
    schema()
        .kinds()
        .iter()
        .filter(|k| k.kind == kind && k.group() == group)
        .filter_map(|k| Some((version_rank(k.api_version.rsplit('/').next()?)?, &k.api_version)))
        .filter(|(r, _)| *r > rank)
        .max()
        .map(|(_, v)| v.clone())
}

/// Levenshtein distance between two short names.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(c: &Catalog, word: &str) -> String {
        c.resolve(word)
            .map(ResourceType::qualified)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn built_in_names_as_kubectl_takes_them() {
        let c = Catalog::built_in();
        for word in [
            "deploy",
            "deployment",
            "deployments",
            "Deployment",
            "deployments.apps",
            "deployment.v1.apps",
            "deployments.extensions",
        ] {
            assert_eq!(q(&c, word), "deployments.apps", "{word}");
        }
        for (word, want) in [
            ("cm", "configmaps"),
            ("svc", "services"),
            ("po", "pods"),
            ("ns", "namespaces"),
            ("no", "nodes"),
            ("ev", "events"),
            ("events.events.k8s.io", "events"),
            ("ing", "ingresses.networking.k8s.io"),
            ("netpol", "networkpolicies.networking.k8s.io"),
            ("crd", "customresourcedefinitions.apiextensions.k8s.io"),
            ("lease", "leases.coordination.k8s.io"),
            ("endpoints", "endpoints"),
        ] {
            assert_eq!(q(&c, word), want, "{word}");
        }
        assert!(c.resolve("svc").unwrap().namespaced);
        assert!(!c.resolve("no").unwrap().namespaced);
    }

    #[test]
    fn unknown_and_ambiguous_names_list_candidates() {
        let mut c = Catalog::built_in();
        let e = c.resolve("deploymnt").unwrap_err().to_string();
        assert!(e.contains("deployments.apps"), "{e}");
        assert_eq!(e.lines().count(), 1);
        let crd = |group: &str, short: &str| {
            json!({"spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": [short]}}})
        };
        assert!(c.add_crd(&crd("example.com", "gz")));
        assert!(c.add_crd(&crd("other.example.org", "gz")));
        assert_eq!(q(&c, "gizmos.example.com"), "gizmos.example.com");
        assert_eq!(q(&c, "gizmo.v1.other.example.org"), "gizmos.other.example.org");
        let e = c.resolve("gz").unwrap_err().to_string();
        assert!(e.contains("gizmos.example.com, gizmos.other.example.org"), "{e}");
        assert!(!c.add_crd(&json!({"spec": {}})));
    }

    #[test]
    fn newer_versions_of_a_stored_kind() {
        assert_eq!(
            newer_api_version("apps/v1beta2", "Deployment").as_deref(),
            Some("apps/v1")
        );
        assert_eq!(newer_api_version("apps/v1", "Deployment"), None);
        assert_eq!(newer_api_version("v1", "ConfigMap"), None);
        assert_eq!(newer_api_version("example.com/v1alpha1", "Gizmo"), None);
        assert!(version_rank("v1") > version_rank("v1beta2"));
        assert!(version_rank("v1beta2") > version_rank("v1beta1"));
        assert!(version_rank("v1beta1") > version_rank("v1alpha3"));
        assert!(version_rank("v2") > version_rank("v1"));
        assert_eq!(version_rank("version1"), None);
    }

    #[test]
    fn objects_by_type_and_name_or_by_key() {
        assert_eq!(
            parse_object("deploy/web", None).unwrap(),
            ObjectSpec::Named {
                word: "deploy".into(),
                name: "web".into()
            }
        );
        assert_eq!(
            parse_object("cm", Some("app.config")).unwrap(),
            ObjectSpec::Named {
                word: "cm".into(),
                name: "app.config".into()
            }
        );
        assert_eq!(
            parse_object("/registry/pods/a/b", None).unwrap(),
            ObjectSpec::Key("/registry/pods/a/b".into())
        );
        for bad in [
            ("deploy", None),
            ("deploy/web", Some("x")),
            ("/registry/x", Some("y")),
            ("deploy/", None),
        ] {
            assert!(parse_object(bad.0, bad.1).is_err(), "{bad:?}");
        }
        let c = Catalog::built_in();
        let o = c.object("deploy", "web", None).unwrap();
        assert_eq!(o.namespace.as_deref(), Some("default"));
        let n = c.object("no", "node-1", Some("shop")).unwrap();
        assert_eq!(n.namespace, None, "a cluster-scoped object ignores -n");
    }

    #[test]
    fn printed_names_are_kubectl_get_o_name() {
        let mut c = Catalog::built_in();
        assert_eq!(
            c.printed_name("/registry/deployments/shop/web"),
            "deployment.apps/web"
        );
        assert_eq!(c.printed_name("/registry/pods/shop/web-1"), "pod/web-1");
        assert_eq!(c.printed_name("/registry/minions/node-1"), "node/node-1");
        assert_eq!(
            c.printed_name("/registry/example.com/gizmos/shop/g1"),
            "gizmos.example.com/g1"
        );
        c.add_crd(&json!({"spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"}
        }}));
        assert_eq!(
            c.printed_name("/registry/example.com/gizmos/shop/g1"),
            "gizmo.example.com/g1"
        );
        assert_eq!(c.printed_name("/elsewhere/pods/a/b"), "/elsewhere/pods/a/b");
    }
}

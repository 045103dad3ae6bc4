//! etcd key → API group, resource, namespace and name (reference §1).
//!
//! Keys are `<prefix><storage segment>/[<namespace>/]<name>`. Built-in
//! storage segments are resource names without a group, with a few
//! historical exceptions (`minions`, `controllers`, `services/specs`, ...).
//! A first segment with a dot is an API group (CRDs, APIServices, custom
//! resources), since built-in segments never contain one.

use super::schema::{schema, Scope};
use serde::Serialize;

/// kube-apiserver's default `--etcd-prefix`, with the trailing slash.
pub const DEFAULT_PREFIX: &str = "/registry/";

/// The key the apiserver's compactor writes, at the etcd root.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// Keys that do not hold an ordinary API object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpecialKey {
    /// `compact_rev_key`: the last compaction revision, as decimal text.
    CompactRevision,
    /// `masterleases/<ip>`: an apiserver's Endpoints lease.
    MasterLease,
    /// `ranges/<name>`: a service IP or node port allocation bitmap.
    RangeAllocation,
    /// `peerserverleases/<id>`: an apiserver's peer endpoint lease (the
    /// mixed-version proxy's).
    PeerServerLease,
}

impl SpecialKey {
    /// What writes such a key: kube-apiserver itself, through its storage
    /// and never through an API request, so no audit event explains it.
    pub fn writer(self) -> &'static str {
        match self {
            SpecialKey::CompactRevision => "kube-apiserver itself (its etcd compactor)",
            SpecialKey::MasterLease => "kube-apiserver itself (its endpoint reconciler's lease)",
            SpecialKey::RangeAllocation => "kube-apiserver itself (its Service IP and port allocator)",
            SpecialKey::PeerServerLease => "kube-apiserver itself (its peer endpoint lease)",
        }
    }
}

/// What a key says about the object stored under it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParsedKey {
    /// The storage prefix the key was found under.
    pub prefix: String,
    /// API group, `""` for core.
    pub group: String,
    /// Plural resource name (`pods`, `nodes`, `customresourcedefinitions`).
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub special: Option<SpecialKey>,
}

/// A key that is not under the storage prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("key {key:?} is not under the storage prefix {prefix:?}")]
pub struct KeyError {
    pub key: String,
    pub prefix: String,
}

/// Storage segments whose resource (and group) differ from their name
/// (reference §1.2): (segment, group, resource). Read both ways: by
/// [`parse_key`] and by [`key_of`].
const RENAMED: &[(&str, &str, &str)] = &[
    ("minions", "", "nodes"),
    ("controllers", "", "replicationcontrollers"),
    ("services/specs", "", "services"),
    ("services/endpoints", "", "endpoints"),
    ("ingress", "networking.k8s.io", "ingresses"),
    ("podsecuritypolicy", "policy", "podsecuritypolicies"),
];

/// Segments of keys that hold no ordinary object: (segment, group, resource).
const SPECIAL: &[(&str, &str, &str, SpecialKey)] = &[
    ("masterleases", "", "endpoints", SpecialKey::MasterLease),
    ("ranges", "", "rangeallocations", SpecialKey::RangeAllocation),
    ("peerserverleases", "", "endpoints", SpecialKey::PeerServerLease),
];

/// Groups whose servers (apiextensions, the aggregator) prefix their keys
/// with the group, as custom resources are (reference §1.3).
const GROUP_PREFIXED: &[&str] = &["apiextensions.k8s.io", "apiregistration.k8s.io"];

/// The group a built-in resource is stored under. Cohabiting resources
/// (events, deployments, networkpolicies, ...) live in the first enabled
/// group: core before any other, `extensions` never first.
pub fn builtin_group(resource: &str) -> String {
    let mut groups: Vec<&str> = schema()
        .kinds()
        .iter()
        .filter(|k| k.resource == resource && k.scope != Scope::Unknown)
        .map(|k| k.group())
        .filter(|g| !g.contains('.') || g.ends_with(".k8s.io"))
        .collect();
    groups.sort_by_key(|g| (*g == "extensions", !g.is_empty(), g.to_string()));
    groups.first().map(|g| g.to_string()).unwrap_or_default()
}

/// The kinds (with their API groups) kube-apiserver stores under a key of
/// `group`/`resource` as [`parse_key`] reads it: every version of the
/// resource the schema lists, in every group that cohabits its storage
/// (`deployments` holds `apps` and `extensions` Deployments, `events` core
/// and `events.k8s.io` Events). Empty when the schema does not know the
/// resource there (custom resources): then nothing is known about it.
pub fn stored_kinds(group: &str, resource: &str) -> Vec<(String, String)> {
    let builtin = builtin_group(resource) == group;
    let mut kinds: Vec<(String, String)> = schema()
        .kinds()
        .iter()
        .filter(|k| k.resource == resource && k.scope != Scope::Unknown)
        .filter(|k| {
            k.group() == group || (builtin && (!k.group().contains('.') || k.group().ends_with(".k8s.io")))
        })
        .map(|k| (k.group().to_string(), k.kind.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// A resource as kubectl names it with its group: `pods`,
/// `deployments.apps` (the core group has no suffix).
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Parses `key` stored under `prefix` (normally [`DEFAULT_PREFIX`]).
pub fn parse_key(key: &str, prefix: &str) -> Result<ParsedKey, KeyError> {
    let mut parsed = ParsedKey {
        prefix: String::new(),
        group: String::new(),
        resource: String::new(),
        namespace: None,
        name: None,
        special: None,
    };
    if key == COMPACT_REV_KEY {
        parsed.resource = COMPACT_REV_KEY.into();
        parsed.special = Some(SpecialKey::CompactRevision);
        return Ok(parsed);
    }
    let prefix_slash = if prefix.ends_with('/') {
        prefix.to_string()
    } else {
        format!("{prefix}/")
    };
    let rest = key.strip_prefix(&prefix_slash).ok_or_else(|| KeyError {
        key: key.into(),
        prefix: prefix_slash.clone(),
    })?;
    let segs: Vec<&str> = rest.split('/').collect();
    // A server with a nested storage prefix (`<prefix><group>/registry/...`,
    // or a group segment repeated) writes more prefix before the real group.
    let mut i = 0;
    while i + 2 < segs.len()
        && segs[i].contains('.')
        && (segs[i + 1] == "registry" || segs[i + 1].contains('.'))
    {
        i += if segs[i + 1] == "registry" { 2 } else { 1 };
    }
    parsed.prefix = format!(
        "{prefix_slash}{}",
        segs[..i].iter().map(|s| format!("{s}/")).collect::<String>()
    );
    let segs = &segs[i..];
    let object_path: &[&str];
    if segs[0].contains('.') {
        parsed.group = segs[0].into();
        parsed.resource = segs.get(1).copied().unwrap_or_default().into();
        object_path = segs.get(2..).unwrap_or_default();
    } else if let Some((_, group, resource)) = segs.get(1).and_then(|second| {
        RENAMED
            .iter()
            .find(|(seg, ..)| seg.split_once('/') == Some((segs[0], second)))
    }) {
        parsed.group = (*group).into();
        parsed.resource = (*resource).into();
        object_path = &segs[2..];
    } else if let Some((_, group, resource)) = RENAMED.iter().find(|(seg, ..)| *seg == segs[0]) {
        parsed.group = (*group).into();
        parsed.resource = (*resource).into();
        object_path = &segs[1..];
    } else if let Some((_, group, resource, special)) = SPECIAL.iter().find(|(seg, ..)| *seg == segs[0]) {
        parsed.group = (*group).into();
        parsed.resource = (*resource).into();
        parsed.special = Some(*special);
        object_path = &segs[1..];
    } else {
        parsed.resource = segs[0].into();
        parsed.group = builtin_group(segs[0]);
        object_path = &segs[1..];
    }
    match object_path {
        [] | [""] => {}
        [name] => parsed.name = Some((*name).into()),
        [ns, name @ ..] => {
            parsed.namespace = Some((*ns).into());
            parsed.name = Some(name.join("/"));
        }
    }
    Ok(parsed)
}

/// The key kube-apiserver stores an object of `group`/`resource` under
/// `prefix`: the inverse of [`parse_key`]. `group` is the storage group
/// ([`builtin_group`] for a built-in resource); `namespace` is `None` for
/// a cluster-scoped object.
pub fn key_of(prefix: &str, group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    let segment = match RENAMED.iter().find(|(_, g, r)| *g == group && *r == resource) {
        Some((segment, ..)) => (*segment).to_string(),
        None if GROUP_PREFIXED.contains(&group)
            || (group.contains('.') && builtin_group(resource) != group) =>
        {
            format!("{group}/{resource}")
        }
        None => resource.to_string(),
    };
    match namespace {
        Some(ns) => format!("{prefix}/{segment}/{ns}/{name}"),
        None => format!("{prefix}/{segment}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(key: &str) -> (String, String, Option<String>, Option<String>, Option<SpecialKey>) {
        let k = parse_key(key, DEFAULT_PREFIX).unwrap();
        (k.group, k.resource, k.namespace, k.name, k.special)
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn kinds_a_resource_holds() {
        let deployments = stored_kinds("apps", "deployments");
        assert!(deployments.contains(&("apps".into(), "Deployment".into())));
        assert!(deployments.contains(&("extensions".into(), "Deployment".into())));
        assert!(deployments.iter().all(|(_, k)| k == "Deployment"));
        let events = stored_kinds("", "events");
        assert!(events.contains(&("events.k8s.io".into(), "Event".into())));
        assert!(events.contains(&("".into(), "Event".into())));
        let crds = stored_kinds("apiextensions.k8s.io", "customresourcedefinitions");
        assert!(crds
            .iter()
            .all(|(g, k)| g == "apiextensions.k8s.io" && k == "CustomResourceDefinition"));
        assert!(!crds.is_empty());
        assert!(stored_kinds("example.com", "widgets").is_empty());
        assert!(stored_kinds("example.com", "pods").is_empty());
    }

    #[test]
    fn builtins() {
        assert_eq!(
            p("/registry/pods/default/web-1"),
            ("".into(), "pods".into(), s("default"), s("web-1"), None)
        );
        assert_eq!(
            p("/registry/namespaces/kube-system"),
            ("".into(), "namespaces".into(), None, s("kube-system"), None)
        );
        assert_eq!(p("/registry/deployments/ns/d").0, "apps");
        assert_eq!(p("/registry/events/ns/e").0, "");
        assert_eq!(p("/registry/networkpolicies/ns/n").0, "networking.k8s.io");
        assert_eq!(p("/registry/leases/kube-node-lease/n1").0, "coordination.k8s.io");
        assert_eq!(p("/registry/clusterroles/admin").0, "rbac.authorization.k8s.io");
    }

    #[test]
    fn renamed_segments() {
        assert_eq!(
            p("/registry/services/specs/default/kubernetes"),
            ("".into(), "services".into(), s("default"), s("kubernetes"), None)
        );
        assert_eq!(
            p("/registry/services/endpoints/default/kubernetes"),
            ("".into(), "endpoints".into(), s("default"), s("kubernetes"), None)
        );
        assert_eq!(
            p("/registry/minions/node-1"),
            ("".into(), "nodes".into(), None, s("node-1"), None)
        );
        assert_eq!(
            p("/registry/controllers/ns/rc"),
            ("".into(), "replicationcontrollers".into(), s("ns"), s("rc"), None)
        );
        assert_eq!(
            p("/registry/ingress/ns/web"),
            (
                "networking.k8s.io".into(),
                "ingresses".into(),
                s("ns"),
                s("web"),
                None
            )
        );
    }

    #[test]
    fn special_keys() {
        assert_eq!(
            p("compact_rev_key"),
            (
                "".into(),
                "compact_rev_key".into(),
                None,
                None,
                Some(SpecialKey::CompactRevision)
            )
        );
        assert_eq!(
            p("/registry/masterleases/10.0.0.1"),
            (
                "".into(),
                "endpoints".into(),
                None,
                s("10.0.0.1"),
                Some(SpecialKey::MasterLease)
            )
        );
        assert_eq!(
            p("/registry/ranges/serviceips"),
            (
                "".into(),
                "rangeallocations".into(),
                None,
                s("serviceips"),
                Some(SpecialKey::RangeAllocation)
            )
        );
        // kube-apiserver 1.37's peer endpoint lease, seen on a real
        // control plane.
        assert_eq!(
            p("/registry/peerserverleases/apiserver-3f2a"),
            (
                "".into(),
                "endpoints".into(),
                None,
                s("apiserver-3f2a"),
                Some(SpecialKey::PeerServerLease)
            )
        );
        assert!(SpecialKey::PeerServerLease
            .writer()
            .starts_with("kube-apiserver itself"));
    }

    #[test]
    fn dotted_first_segment_is_a_group() {
        assert_eq!(
            p("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"),
            (
                "apiextensions.k8s.io".into(),
                "customresourcedefinitions".into(),
                None,
                s("widgets.example.com"),
                None
            )
        );
        assert_eq!(
            p("/registry/apiregistration.k8s.io/apiservices/v1.apps").1,
            "apiservices"
        );
        assert_eq!(
            p("/registry/example.com/widgets/ns/w1"),
            ("example.com".into(), "widgets".into(), s("ns"), s("w1"), None)
        );
        assert_eq!(
            p("/registry/example.com/clusterwidgets/w1"),
            ("example.com".into(), "clusterwidgets".into(), None, s("w1"), None)
        );
    }

    #[test]
    fn nested_storage_prefix() {
        let k = parse_key(
            "/registry/wardle.kubernetes.io/registry/wardle.kubernetes.io/hyrule.k8s.io/hyrulecastles/default/links-place",
            DEFAULT_PREFIX,
        )
        .unwrap();
        assert_eq!(
            k.prefix,
            "/registry/wardle.kubernetes.io/registry/wardle.kubernetes.io/"
        );
        assert_eq!(
            (k.group.as_str(), k.resource.as_str()),
            ("hyrule.k8s.io", "hyrulecastles")
        );
        assert_eq!(
            (k.namespace.as_deref(), k.name.as_deref()),
            (Some("default"), Some("links-place"))
        );
    }

    #[test]
    fn a_namespace_named_registry_is_not_a_prefix() {
        assert_eq!(
            p("/registry/example.com/widgets/registry/w"),
            (
                "example.com".into(),
                "widgets".into(),
                s("registry"),
                s("w"),
                None
            )
        );
    }

    #[test]
    fn key_of_is_the_inverse_of_parse_key() {
        let keys = [
            "/registry/pods/default/web-1",
            "/registry/namespaces/kube-system",
            "/registry/deployments/shop/web",
            "/registry/services/specs/default/kubernetes",
            "/registry/services/endpoints/default/kubernetes",
            "/registry/minions/node-1",
            "/registry/controllers/ns/rc",
            "/registry/ingress/ns/web",
            "/registry/leases/kube-node-lease/n1",
            "/registry/clusterroles/admin",
            "/registry/apiextensions.k8s.io/customresourcedefinitions/gizmos.example.com",
            "/registry/apiregistration.k8s.io/apiservices/v1.apps",
            "/registry/example.com/gizmos/ns/g1",
            "/registry/example.com/clustergizmos/g1",
        ];
        for key in keys {
            let k = parse_key(key, DEFAULT_PREFIX).unwrap();
            let name = k.name.as_deref().unwrap();
            assert_eq!(
                key_of(
                    DEFAULT_PREFIX,
                    &k.group,
                    &k.resource,
                    k.namespace.as_deref(),
                    name
                ),
                key
            );
        }
    }

    #[test]
    fn foreign_keys_are_errors() {
        let e = parse_key("/other/pods/a/b", DEFAULT_PREFIX).unwrap_err();
        assert!(e.to_string().contains("/registry/"));
        assert_eq!(
            parse_key("/kubernetes.io/pods/a/b", "/kubernetes.io")
                .unwrap()
                .resource,
            "pods"
        );
    }
}

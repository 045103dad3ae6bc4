//! Evidence, read from one stored value on its own, that kube-apiserver did
//! not write it: someone with access to etcd did (`etcdctl put`, a backup
//! tool, a script), around admission, RBAC and the audit log. The
//! `foreign-writes` detector reports it; the one signal that needs the
//! other revisions of the resource (an encoding the resource's other
//! objects do not have) is judged there.
//!
//! Each signal is a rule of kube-apiserver's write path, read in its
//! source (kubernetes/apiserver and kubernetes/apimachinery at HEAD, July
//! 2026; the `k8s.io/...` paths below are those modules):
//!
//! - `resource-version`: the value holds a non-empty
//!   `metadata.resourceVersion`. The etcd3 store clears it (and `selfLink`)
//!   before it encodes any object it writes, on create and on every update:
//!   `APIObjectVersioner.PrepareObjectForStorage`
//!   (`k8s.io/apiserver/pkg/storage/api_object_versioner.go`), called from
//!   `store.Create` and `store.updateState` (`pkg/storage/etcd3/store.go`);
//!   a create that arrives with one is refused
//!   (`storage.ErrResourceVersionSetOnCreate`). `selfLink` is not a signal:
//!   releases before the versioner cleared it stored it.
//! - `kind`: the object's kind or API group is not one the key's resource
//!   holds ([`stored_kinds`]): a store encodes only its own type, and the
//!   key is `<prefix>/<resource>/...` of that store
//!   (`k8s.io/apiserver/pkg/registry/generic/registry/store.go`). Not judged
//!   for resources the schema does not know (custom resources).
//! - `name`, `namespace`: the object's `metadata.name` or
//!   `metadata.namespace` is not the key's. The registry builds the key from
//!   the request's namespace and the object's name (`NamespaceKeyFunc`,
//!   `NoNamespaceKeyFunc` in the same `store.go`), and `BeforeCreate`
//!   refuses an object whose namespace is not the request's and clears it
//!   for a cluster-scoped one (`EnsureObjectNamespaceMatchesRequestNamespace`
//!   in `k8s.io/apiserver/pkg/registry/rest/create.go`).
//! - `create-metadata`: the first revision of a key generation has no
//!   `metadata.uid`. `Store.create` sets the uid and creationTimestamp
//!   before anything else (`rest.FillObjectMetaSystemFields`,
//!   `k8s.io/apiserver/pkg/registry/rest/meta.go`, called from `store.go`),
//!   and so does a create through an update (`AllowCreateOnUpdate`). A
//!   missing creationTimestamp is named along with a missing uid, but is
//!   not evidence alone, to stay conservative: many of this project's own
//!   imitations of apiserver writes (test fixtures) carry a uid without
//!   one, and a uid is what a hand-written object lacks.
//! - `json-format`: a JSON value not as kube-apiserver's encoder writes it.
//!   Its JSON serializer (`k8s.io/apimachinery/pkg/runtime/serializer/json/
//!   json.go`, `Serializer.doEncode`) and the custom resources' unstructured
//!   one (`pkg/apis/meta/v1/unstructured/helpers.go`) both write with Go's
//!   `json.NewEncoder(w).Encode`, which writes compact JSON (no whitespace
//!   outside strings) followed by exactly one `\n`. Indented JSON, or JSON
//!   without that newline, was written by something else.
//!
//! Keys kube-apiserver writes through its storage without the registry
//! (its master leases, range allocations and peer leases, the compaction
//! key) are judged only by `resource-version` and `json-format`: their
//! objects are built by hand and carry no uid, and a master lease is named
//! by IP. A value encrypted at rest is not judged by `json-format` (its
//! plaintext is not kept here). Each signal says the bytes are not what an
//! unmodified kube-apiserver writes; none says who wrote them, and bytes an
//! apiserver wrote, copied and put back, show none.

use crate::decode::envelope::Encoding;
use crate::decode::key::{stored_kinds, ParsedKey};
use crate::decode::schema::Resolution;
use crate::decode::Decoded;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One reason to think kube-apiserver did not write a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// `resource-version`, `kind`, `name`, `namespace`, `create-metadata`,
    /// `json-format` (and, judged by the detector, `encoding`).
    pub signal: String,
    /// What the value holds, in words (never a value of the object's data).
    pub detail: String,
}

impl Evidence {
    fn new(signal: &str, detail: String) -> Evidence {
        Evidence {
            signal: signal.into(),
            detail,
        }
    }
}

/// What a key says its objects are: read once per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyIdentity {
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Written by kube-apiserver's storage without its registry (see the
    /// module's documentation): only the byte-level signals apply.
    pub special: bool,
    /// The (group, kind) pairs the resource holds; empty when unknown.
    pub kinds: KindList,
}

/// (group, kind) pairs, shared.
pub type KindList = Arc<[(String, String)]>;

/// The kinds each resource holds ([`stored_kinds`]), looked up once per
/// resource and shared by its keys.
#[derive(Default)]
pub struct Kinds(HashMap<(String, String), KindList>);

impl Kinds {
    fn of(&mut self, group: &str, resource: &str) -> KindList {
        self.0
            .entry((group.to_string(), resource.to_string()))
            .or_insert_with(|| stored_kinds(group, resource).into())
            .clone()
    }
}

impl KeyIdentity {
    /// What `parsed` says, with the kinds of its resource from `kinds`.
    pub fn of(parsed: &ParsedKey, kinds: &mut Kinds) -> KeyIdentity {
        KeyIdentity {
            group: parsed.group.clone(),
            resource: parsed.resource.clone(),
            namespace: parsed.namespace.clone(),
            name: parsed.name.clone(),
            special: parsed.special.is_some(),
            kinds: match parsed.special {
                Some(_) => Arc::from([]),
                None => kinds.of(&parsed.group, &parsed.resource),
            },
        }
    }
}

/// The evidence in a decoded value. `plain` is the stored value when it was
/// not encrypted (`None` otherwise); `create` says it starts its key
/// generation; `view` is the object's view ([`crate::canon::view`]).
pub fn evidence<O>(
    key: Option<&KeyIdentity>,
    decoded: &Decoded<O>,
    plain: Option<&[u8]>,
    create: bool,
    view: &Value,
) -> Vec<Evidence> {
    let mut found = Vec::new();
    let meta = view.get("metadata");
    let text = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(rv) = text("resourceVersion") {
        found.push(Evidence::new(
            "resource-version",
            format!("the value holds metadata.resourceVersion {rv:?}, which kube-apiserver clears before it stores"),
        ));
    }
    if let Some(bytes) = plain.filter(|_| decoded.encoding == Encoding::Json && !decoded.base64_wrapped) {
        if let Some(how) = json_not_as_encoded(bytes) {
            found.push(Evidence::new(
                "json-format",
                format!("JSON {how}; kube-apiserver writes compact JSON and one newline"),
            ));
        }
    }
    let Some(key) = key.filter(|k| !k.special) else {
        return found;
    };
    // A kind the schema lacks whose field 1 is no ObjectMeta has no
    // metadata to compare (a cluster newer than the schema stores such).
    if decoded.resolution == Some(Resolution::Schemaless) {
        return found;
    }
    let group = decoded.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !key.kinds.is_empty() && !key.kinds.iter().any(|(g, k)| g == group && *k == decoded.kind) {
        found.push(Evidence::new(
            "kind",
            format!(
                "the value is a {} {}, which {} do not hold",
                decoded.api_version,
                decoded.kind,
                crate::decode::key::qualified(&key.resource, &key.group)
            ),
        ));
    }
    for (field, keyed) in [("name", &key.name), ("namespace", &key.namespace)] {
        let stored = text(field);
        if stored != keyed.as_deref() {
            let stored = stored.map_or("none".to_string(), |s| format!("{s:?}"));
            let keyed = keyed.as_deref().map_or("none".to_string(), |s| format!("{s:?}"));
            found.push(Evidence::new(
                field,
                format!("metadata.{field} is {stored}, the key's {field} is {keyed}"),
            ));
        }
    }
    if create && text("uid").is_none() {
        let missing: Vec<&str> = ["uid", "creationTimestamp"]
            .into_iter()
            .filter(|f| text(f).is_none())
            .collect();
        found.push(Evidence::new(
            "create-metadata",
            format!(
                "created without metadata.{}, which kube-apiserver sets on every create",
                missing.join(" or metadata.")
            ),
        ));
    }
    found
}

/// How a JSON value differs from what Go's `json.Encoder.Encode` writes
/// (compact, then one `\n`), if it does.
pub fn json_not_as_encoded(bytes: &[u8]) -> Option<&'static str> {
    let newline = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let (mut in_string, mut escaped, mut spaced) = (false, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            spaced = true;
            break;
        }
    }
    match (spaced, newline) {
        (false, true) => None,
        (false, false) => Some("without the trailing newline"),
        (true, true) => Some("with whitespace between tokens (indented or spaced)"),
        (true, false) => Some("with whitespace between tokens and without the trailing newline"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::key::{parse_key, DEFAULT_PREFIX};
    use serde_json::json;

    fn decoded(encoding: Encoding, api_version: &str, kind: &str) -> Decoded<()> {
        Decoded {
            encoding,
            base64_wrapped: false,
            api_version: api_version.into(),
            kind: kind.into(),
            message: None,
            resolution: None,
            unknown_fields: Vec::new(),
            warnings: Vec::new(),
            object: (),
        }
    }

    fn key(k: &str) -> KeyIdentity {
        KeyIdentity::of(&parse_key(k, DEFAULT_PREFIX).unwrap(), &mut Kinds::default())
    }

    fn signals(found: &[Evidence]) -> Vec<&str> {
        found.iter().map(|e| e.signal.as_str()).collect()
    }

    #[test]
    fn json_as_go_writes_it() {
        assert_eq!(json_not_as_encoded(b"{\"a\":\"x y\\\" \",\"b\":[1,2]}\n"), None);
        assert_eq!(
            json_not_as_encoded(b"{\"a\":1}"),
            Some("without the trailing newline")
        );
        assert!(json_not_as_encoded(b"{\n  \"a\": 1\n}\n").is_some());
        assert_eq!(
            json_not_as_encoded(b"{\"a\": 1}"),
            Some("with whitespace between tokens and without the trailing newline")
        );
        assert!(json_not_as_encoded(b"{\"a\": 1}\n").is_some());
        assert!(json_not_as_encoded(b"{\"a\":1}\n\n").is_some());
    }

    #[test]
    fn an_apiserver_style_object_gives_nothing() {
        let rb = key("/registry/rolebindings/ns/rb");
        let view = json!({"metadata": {"name": "rb", "namespace": "ns", "uid": "u",
            "creationTimestamp": "2026-11-29T08:00:00Z"}});
        let pb = decoded(Encoding::Protobuf, "rbac.authorization.k8s.io/v1", "RoleBinding");
        assert!(evidence(Some(&rb), &pb, Some(b"k8s\0"), true, &view).is_empty());
        // A uid without a creationTimestamp is not evidence alone.
        let uid_only = json!({"metadata": {"name": "rb", "namespace": "ns", "uid": "u"}});
        assert!(evidence(Some(&rb), &pb, None, true, &uid_only).is_empty());
        // Cohabiting groups and old versions belong to their resource.
        let d = key("/registry/deployments/ns/d");
        let view = json!({"metadata": {"name": "d", "namespace": "ns"}});
        let old = decoded(Encoding::Protobuf, "extensions/v1beta1", "Deployment");
        assert!(evidence(Some(&d), &old, None, false, &view).is_empty());
        let ev = key("/registry/events/ns/e");
        let view = json!({"metadata": {"name": "e", "namespace": "ns"}});
        let event = decoded(Encoding::Protobuf, "events.k8s.io/v1", "Event");
        assert!(evidence(Some(&ev), &event, None, false, &view).is_empty());
        // Cluster-scoped, renamed segments and CRDs.
        let node = key("/registry/minions/n1");
        let view = json!({"metadata": {"name": "n1"}});
        assert!(evidence(
            Some(&node),
            &decoded(Encoding::Protobuf, "v1", "Node"),
            None,
            false,
            &view
        )
        .is_empty());
        let crd = key("/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com");
        let view = json!({"metadata": {"name": "widgets.example.com"}});
        let json = decoded(
            Encoding::Json,
            "apiextensions.k8s.io/v1beta1",
            "CustomResourceDefinition",
        );
        assert!(evidence(Some(&crd), &json, Some(b"{\"kind\":\"x\"}\n"), false, &view).is_empty());
    }

    #[test]
    fn each_signal() {
        let crb = key("/registry/clusterrolebindings/backdoor");
        let view = json!({"metadata": {"name": "backdoor", "resourceVersion": "12"}});
        let role = decoded(Encoding::Json, "rbac.authorization.k8s.io/v1", "Role");
        let found = evidence(Some(&crb), &role, Some(b"{\n \"a\": 1\n}"), true, &view);
        assert_eq!(
            signals(&found),
            ["resource-version", "json-format", "kind", "create-metadata"]
        );
        assert_eq!(
            found[2].detail,
            "the value is a rbac.authorization.k8s.io/v1 Role, which clusterrolebindings.rbac.authorization.k8s.io do not hold"
        );
        assert_eq!(
            found[3].detail,
            "created without metadata.uid or metadata.creationTimestamp, which kube-apiserver sets on every create"
        );
        // A Pod of another namespace, and one of another name.
        let pod = key("/registry/pods/default/web");
        let elsewhere = json!({"metadata": {"name": "web", "namespace": "kube-system", "uid": "u"}});
        let found = evidence(
            Some(&pod),
            &decoded(Encoding::Protobuf, "v1", "Pod"),
            None,
            false,
            &elsewhere,
        );
        assert_eq!(signals(&found), ["namespace"]);
        assert_eq!(
            found[0].detail,
            "metadata.namespace is \"kube-system\", the key's namespace is \"default\""
        );
        let renamed = json!({"metadata": {"name": "api", "namespace": "default"}});
        let found = evidence(
            Some(&pod),
            &decoded(Encoding::Protobuf, "v1", "Pod"),
            None,
            false,
            &renamed,
        );
        assert_eq!(signals(&found), ["name"]);
        // A group that does not hold the kind.
        let found = evidence(
            Some(&pod),
            &decoded(Encoding::Protobuf, "apps/v1", "Pod"),
            None,
            false,
            &renamed,
        );
        assert_eq!(signals(&found), ["kind", "name"]);
        // Decoded without a schema, an object has no metadata to compare.
        let mut schemaless = decoded(Encoding::Protobuf, "v1", "Pod");
        schemaless.resolution = Some(Resolution::Schemaless);
        assert!(evidence(Some(&pod), &schemaless, None, true, &json!({})).is_empty());
    }

    #[test]
    fn unknown_resources_and_apiserver_s_own_keys_are_judged_by_bytes_only() {
        let cr = key("/registry/example.com/widgets/ns/w");
        let view = json!({"metadata": {"name": "w", "namespace": "ns"}});
        let any = decoded(Encoding::Json, "example.com/v1", "Gadget");
        assert!(evidence(Some(&cr), &any, Some(b"{}\n"), false, &view).is_empty());
        let lease = key("/registry/masterleases/10.0.0.1");
        let view =
            json!({"metadata": {"name": "kubernetes", "namespace": "default", "resourceVersion": "3"}});
        let ep = decoded(Encoding::Protobuf, "v1", "Endpoints");
        assert_eq!(
            signals(&evidence(Some(&lease), &ep, None, true, &view)),
            ["resource-version"]
        );
    }
}

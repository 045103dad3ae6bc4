//! The semantic form of an object and its field hashes.
//!
//! The semantic form is the canonical JSON of the object without what
//! storage adds (`metadata.resourceVersion`, `metadata.selfLink`) and with
//! `apiVersion` reduced to its group, so a storage-version re-encode of the
//! same content (`apps/v1beta2` → `apps/v1`) keeps its hash while a change of
//! group or kind does not.

use super::keyed_hash::ValueHasher;
use super::path::FieldPath;
use super::sensitive::Secrecy;
use super::writer::{CanonicalWriter, Spans};
use super::{into_canonical, keep_canonical_members};
use crate::json_sink::send_value;
use serde_json::{Map, Value};

/// Default depth of field paths (`spec`, `spec.replicas`).
pub const DEFAULT_DEPTH: usize = 2;

/// The semantic form of `object`.
pub fn semantic_form(object: &Value) -> Value {
    into_semantic_form(object.clone())
}

/// [`semantic_form`], consuming the object (nothing is copied).
pub fn into_semantic_form(object: Value) -> Value {
    let Value::Object(map) = object else {
        return into_canonical(object);
    };
    let mut top = Map::new();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("apiVersion", Value::String(api_version)) => {
                if let Some((group, _)) = api_version.rsplit_once('/') {
                    top.insert("apiGroup".into(), Value::String(group.to_string()));
                }
            }
            ("apiVersion", _) => {}
            ("metadata", Value::Object(mut meta)) => {
                meta.retain(|k, _| k != "resourceVersion" && k != "selfLink");
                top.insert(key, into_canonical(Value::Object(meta)));
            }
            (_, value) => {
                top.insert(key, into_canonical(value));
            }
        }
    }
    keep_canonical_members(&mut top);
    Value::Object(top)
}

/// How field hashes are taken: how deep, and which paths are keyed;
/// fixed per database.
#[derive(Clone, Debug)]
pub struct FieldConfig {
    pub depth: usize,
    pub sensitivity: Sensitivity,
}

/// Which paths of an object hold sensitive values.
#[derive(Clone, Debug, Default)]
pub struct Sensitivity {
    /// Extra field paths (and everything under them) the user marked.
    pub paths: Vec<FieldPath>,
}

impl Sensitivity {
    /// Whether the value at `path` holds a sensitive value, so its hash
    /// must be keyed: every field of an encrypted resource, a Secret's
    /// `data`/`stringData`, a configured path, or a field containing one
    /// (`spec` holds `spec.token`).
    pub fn is_sensitive(&self, secrecy: Secrecy, path: &FieldPath) -> bool {
        match secrecy {
            Secrecy::Everything => true,
            Secrecy::Secret if matches!(path.top().as_deref(), Some("data" | "stringData")) => true,
            _ => self.paths.iter().any(|p| path.is_within(p) || p.is_under(path)),
        }
    }

    /// Whether any sensitive value is present in an object whose semantic
    /// form's canonical JSON is `canonical` (read back only when paths are
    /// marked).
    pub fn covers_any(&self, secrecy: Secrecy, canonical: &[u8]) -> bool {
        if secrecy != Secrecy::Plain {
            return true;
        }
        if self.paths.is_empty() {
            return false;
        }
        let form = parse_form(canonical);
        self.paths.iter().any(|p| p.get(&form).is_some())
    }
}

/// The semantic form whose canonical JSON is `canonical`, at any depth.
pub fn parse_form(canonical: &[u8]) -> Value {
    let mut de = serde_json::Deserializer::from_slice(canonical);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).expect("canonical JSON parses")
}

/// Length of a stored field hash.
pub const FIELD_HASH_LEN: usize = 16;

/// A field path and the hash of its value.
pub type FieldHash = (FieldPath, [u8; FIELD_HASH_LEN]);

/// Hashes every field path of the semantic form of `object` down to
/// `depth` (1 = top-level fields): keyed for sensitive paths, plain SHA-256
/// otherwise, truncated to 16 bytes.
pub fn field_hashes(
    object: &Value,
    depth: usize,
    secrecy: Secrecy,
    sensitivity: &Sensitivity,
    hasher: &ValueHasher,
) -> Vec<FieldHash> {
    semantic_with_field_hashes(object, depth, secrecy, sensitivity, hasher).1
}

/// The semantic form of `object` serialized as compact JSON (the bytes
/// `serde_json::to_vec(&into_semantic_form(object))` gives) and its
/// [`field_hashes`], hashed from slices of those bytes (see
/// [`super::writer`]). A semantic form is its own semantic form, so
/// `object` may be one.
pub fn semantic_with_field_hashes(
    object: &Value,
    depth: usize,
    secrecy: Secrecy,
    sensitivity: &Sensitivity,
    hasher: &ValueHasher,
) -> (Vec<u8>, Vec<FieldHash>) {
    let mut w = CanonicalWriter::new(depth);
    send_value(object, &mut w);
    let (bytes, spans) = w.finish();
    let hashes = hash_spans(&bytes, spans, secrecy, sensitivity, hasher);
    (bytes, hashes)
}

/// The field hashes of the `spans` of `bytes`: keyed for sensitive paths,
/// plain SHA-256 otherwise, truncated to 16 bytes.
pub fn hash_spans(
    bytes: &[u8],
    spans: Spans,
    secrecy: Secrecy,
    sensitivity: &Sensitivity,
    hasher: &ValueHasher,
) -> Vec<FieldHash> {
    spans
        .into_iter()
        .map(|(path, start, end)| {
            let value = &bytes[start..end];
            let hash = match sensitivity.is_sensitive(secrecy, &path) {
                true => hasher.hash(value, true).0[..FIELD_HASH_LEN]
                    .try_into()
                    .expect("16 bytes"),
                false => super::hash_reuse::sha256(path.as_str(), value)[..FIELD_HASH_LEN]
                    .try_into()
                    .expect("16 bytes"),
            };
            (path, hash)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_serialization_gives_the_bytes_and_the_field_hashes() {
        let form = semantic_form(
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b\"c", "é": "\u{1}"}},
                    "spec": {"containers": [{"name": "x", "args": ["1", "2"]}], "replicas": 2.5}}),
        );
        let hasher = ValueHasher::new([7; 32]);
        let (bytes, hashes) =
            semantic_with_field_hashes(&form, 2, Secrecy::Plain, &Sensitivity::default(), &hasher);
        assert_eq!(bytes, serde_json::to_vec(&form).unwrap());
        for (path, hash) in &hashes {
            let value = path.get(&form).unwrap();
            let alone = hasher.hash(&serde_json::to_vec(value).unwrap(), false).0;
            assert_eq!(&alone[..FIELD_HASH_LEN], hash, "{path}");
        }
        assert_eq!(hashes.len(), 7, "{hashes:?}");
    }

    fn arb_object() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("apiVersion".to_string()),
            Just("apiGroup".to_string()),
            Just("metadata".to_string()),
            Just("resourceVersion".to_string()),
            Just("selfLink".to_string()),
            Just("f:spec".to_string()),
            Just(".".to_string()),
            "[a-c]{1,2}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop_oneof![Just(0i64), -2i64..3].prop_map(Value::from),
            Just(json!(0.0)),
            Just(json!(-0.0)),
            Just(json!(1.5)),
            prop_oneof![Just(String::new()), "[a-z/\"é]{0,4}"].prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, failure_persistence: None, ..Default::default() })]
        #[test]
        fn written_straight_from_the_object_as_from_its_semantic_form(object in arb_object(), depth in 0usize..4) {
            let hasher = ValueHasher::new([7; 32]);
            let none = Sensitivity::default();
            let (bytes, hashes) = semantic_with_field_hashes(&object, depth, Secrecy::Plain, &none, &hasher);
            let form = into_semantic_form(object.clone());
            let expected = serde_json::to_vec(&form).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(bytes).unwrap(), String::from_utf8(expected).unwrap());
            proptest::prop_assert_eq!(hashes, fields_of(&form, &FieldPath::root(), depth));
        }
    }

    #[test]
    fn written_straight_from_an_object_with_storage_fields_and_field_sets() {
        let object = json!({"kind": "Pod", "apiGroup": "x", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "9", "selfLink": "/p",
            "name": "p", "labels": {}, "managedFields": [{"fieldsV1": {"f:spec": {".": {}, "f:x": {}}}, "time": ""}]},
            "spec": {"b": 0, "a": {"z": {"q": null}}, "c": [{}, 0, ""]}, "status": {}});
        let hasher = ValueHasher::new([7; 32]);
        let none = Sensitivity::default();
        let (bytes, hashes) = semantic_with_field_hashes(&object, 2, Secrecy::Plain, &none, &hasher);
        let form = into_semantic_form(object);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"apiGroup":"apps","kind":"Pod","metadata":{"managedFields":[{"fieldsV1":{"f:spec":{".":{},"f:x":{}}}}],"name":"p"},"spec":{"c":[{},0,""]}}"#
        );
        assert_eq!(hashes, fields_of(&form, &FieldPath::root(), 2));
    }

    /// The field hashes of a semantic form taken the slow way: each member
    /// down to `depth` serialized alone and hashed.
    fn fields_of(form: &Value, prefix: &FieldPath, depth: usize) -> Vec<FieldHash> {
        use sha2::{Digest, Sha256};
        let (Value::Object(map), true) = (form, depth > 0) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in map {
            let path = prefix.join_field(k);
            let digest = Sha256::digest(serde_json::to_vec(v).unwrap());
            out.push((path.clone(), digest[..FIELD_HASH_LEN].try_into().unwrap()));
            out.extend(fields_of(v, &path, depth - 1));
        }
        out
    }

    #[test]
    fn storage_version_and_storage_fields_do_not_count() {
        let a = json!({"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "web", "resourceVersion": "5"}, "spec": {"replicas": 3}});
        let b = json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"selfLink": "/x", "name": "web"}, "spec": {"replicas": 3, "paused": false}});
        assert_eq!(semantic_form(&a), semantic_form(&b));
        let other_group = json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
        assert_ne!(semantic_form(&a), semantic_form(&other_group));
        assert_eq!(semantic_form(&a)["apiGroup"], "apps");
    }

    #[test]
    fn field_paths_to_depth_two_with_secret_values_keyed() {
        let form = semantic_form(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"a": "b"}}, "data": {"password": "aHVudGVyMg=="}}),
        );
        let hasher = ValueHasher::new([7; 32]);
        let fields = field_hashes(&form, 2, Secrecy::Secret, &Sensitivity::default(), &hasher);
        let paths: Vec<&str> = fields.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "data",
                "data.password",
                "kind",
                "metadata",
                "metadata.labels",
                "metadata.name"
            ]
        );
        let plain = sha2::Sha256::digest(serde_json::to_vec(&json!("aHVudGVyMg==")).unwrap());
        use sha2::Digest;
        assert_ne!(
            &fields[1].1[..],
            &plain[..16],
            "a secret value never gets a plain SHA-256"
        );
        let path = |t: &str| FieldPath::parse(t).unwrap();
        let token = Sensitivity {
            paths: vec![path("spec.token")],
        };
        assert!(token.is_sensitive(Secrecy::Plain, &path("spec.token.value")));
        assert!(
            token.is_sensitive(Secrecy::Plain, &path("spec")),
            "spec holds the token"
        );
        assert!(!token.is_sensitive(Secrecy::Plain, &path("spec.replicas")));
        assert!(!token.is_sensitive(Secrecy::Plain, &path("spe")));
        assert!(!token.is_sensitive(Secrecy::Plain, &path(r"spec\.token")));
        assert!(!Sensitivity::default().is_sensitive(Secrecy::Plain, &path("data.x")));
        assert!(Sensitivity::default().is_sensitive(Secrecy::Secret, &path(r"data.app\.token")));
        let dotted = Sensitivity {
            paths: vec![path(r"data.app\.token")],
        };
        assert!(dotted.is_sensitive(Secrecy::Plain, &path(r#"data["app.token"]"#)));
        assert!(!dotted.is_sensitive(Secrecy::Plain, &path("data.app")));
        assert!(!dotted.is_sensitive(Secrecy::Plain, &path(r"data.app\.tokens")));
        let form = br#"{"data":{"app.token":"x"}}"#;
        assert!(dotted.covers_any(Secrecy::Plain, form));
        assert!(!token.covers_any(Secrecy::Plain, form));
    }
}

//! The redacted form of an object that holds sensitive values (a Secret's
//! `data`/`stringData`, a `--sensitive-path`): its semantic form with each
//! sensitive value, and each annotation that copies one, replaced by a
//! placeholder naming the value's keyed hash. Everything else stays (a
//! Secret's `type`, its labels, the keys of its `data`, a value beside a
//! sensitive one), so the form can be stored, shown, and applied once the
//! values are filled in.
//!
//! A placeholder's hash is the field hash the value's path gets (an
//! HMAC-SHA-256 of its canonical JSON under the database's key, truncated):
//! equal values give equal placeholders within a database, and it tells
//! nothing the field hashes do not.

use super::keyed_hash::ValueHasher;
use super::manifest::LAST_APPLIED;
use super::path::{FieldPath, Segment};
use super::semantic::{Sensitivity, FIELD_HASH_LEN};
use super::sensitive::Secrecy;
use serde_json::Value;

/// What a placeholder's text starts with.
const PLACEHOLDER: &str = "<redacted: keyed hash ";

/// Annotations that copy sensitive values: the manifest `kubectl apply`
/// last applied (the whole object, a Secret's `data` included), and the
/// service account token OpenShift copies into its registry pull Secrets.
const COPYING_ANNOTATIONS: [&str; 2] = [LAST_APPLIED, "openshift.io/token-secret.value"];

/// The placeholder that stands for `value`.
pub fn placeholder(value: &Value, hasher: &ValueHasher) -> Value {
    let bytes = serde_json::to_vec(value).expect("JSON values serialize");
    let hash = hasher.hash(&bytes, true).0;
    Value::String(format!(
        "{PLACEHOLDER}{}>",
        crate::hex::hex(&hash[..FIELD_HASH_LEN])
    ))
}

/// Whether `value` is a [`placeholder`].
pub fn is_placeholder(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.starts_with(PLACEHOLDER) && s.ends_with('>'))
}

/// The paths of `form` whose values are replaced, none under another.
fn redacted_paths(form: &Value, secrecy: Secrecy, sensitivity: &Sensitivity) -> Vec<FieldPath> {
    let mut paths: Vec<FieldPath> = sensitivity.paths.to_vec();
    if secrecy == Secrecy::Secret {
        for field in ["data", "stringData"] {
            match form.get(field) {
                Some(Value::Object(map)) => paths.extend(map.keys().map(|k| FieldPath::fields([field, k]))),
                Some(_) => paths.push(FieldPath::field(field)),
                None => {}
            }
        }
    }
    let annotations = FieldPath::fields(["metadata", "annotations"]);
    paths.extend(COPYING_ANNOTATIONS.iter().map(|a| annotations.join_field(a)));
    paths.retain(|p| p.get(form).is_some());
    let all = paths.clone();
    paths.retain(|p| !all.iter().any(|outer| p.is_under(outer)));
    paths.sort();
    paths.dedup();
    paths
}

/// The redacted form of `form`, the semantic form of an object that holds
/// sensitive values under `secrecy` and `sensitivity`; `None` under
/// [`Secrecy::Everything`], where every value is sensitive and nothing
/// would be left to show.
pub fn redacted_form(
    mut form: Value,
    secrecy: Secrecy,
    sensitivity: &Sensitivity,
    hasher: &ValueHasher,
) -> Option<Value> {
    if secrecy == Secrecy::Everything {
        return None;
    }
    for path in redacted_paths(&form, secrecy, sensitivity) {
        if let Some(value) = path.get_mut(&mut form) {
            *value = placeholder(value, hasher);
        }
    }
    Some(form)
}

/// Where `object` holds placeholders, in its order.
pub fn placeholder_paths(object: &Value) -> Vec<FieldPath> {
    fn walk(at: &Value, path: &FieldPath, out: &mut Vec<FieldPath>) {
        match at {
            v if is_placeholder(v) => out.push(path.clone()),
            Value::Object(map) => {
                for (k, v) in map {
                    walk(v, &path.join_field(k), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &path.join(&Segment::Index(i)), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(object, &FieldPath::root(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::semantic::{field_hashes, semantic_form};
    use serde_json::json;

    fn hasher() -> ValueHasher {
        ValueHasher::new([7; 32])
    }

    fn path(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    #[test]
    fn a_secret_keeps_all_but_its_values() {
        let form = semantic_form(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
            "metadata": {"name": "db", "labels": {"app": "shop"}, "annotations": {"note": "kept"}},
            "data": {"password": "aHVudGVyMg==", "user.name": "YWRtaW4="}, "stringData": {"token": "t0ps3cret"}}),
        );
        let none = Sensitivity::default();
        let r = redacted_form(form.clone(), Secrecy::Secret, &none, &hasher()).unwrap();
        assert_eq!(r["type"], "kubernetes.io/basic-auth");
        assert_eq!(r["metadata"], form["metadata"]);
        let redacted = placeholder_paths(&r);
        assert_eq!(
            redacted,
            [
                path("data.password"),
                path(r"data.user\.name"),
                path("stringData.token")
            ]
        );
        let text = r.to_string();
        for secret in ["aHVudGVyMg==", "YWRtaW4=", "t0ps3cret"] {
            assert!(!text.contains(secret), "{text}");
        }
        // The placeholder is the value's field hash.
        let fields = field_hashes(&form, 2, Secrecy::Secret, &none, &hasher());
        let (_, hash) = fields
            .iter()
            .find(|(p, _)| p.as_str() == "data.password")
            .unwrap();
        assert_eq!(
            r["data"]["password"],
            format!("<redacted: keyed hash {}>", crate::hex::hex(hash))
        );
        // Equal values, equal placeholders; under another key, others.
        let again = redacted_form(form.clone(), Secrecy::Secret, &none, &hasher()).unwrap();
        assert_eq!(again, r);
        let other = redacted_form(form, Secrecy::Secret, &none, &ValueHasher::new([8; 32])).unwrap();
        assert_ne!(other["data"]["password"], r["data"]["password"]);
    }

    #[test]
    fn a_sensitive_path_takes_its_value_only_not_its_neighbours() {
        let form = semantic_form(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"},
            "data": {"app.token": "s3cr3t", "app.other": "plain", "app": "also plain"}}),
        );
        let sensitivity = Sensitivity {
            paths: vec![path(r#"data["app.token"]"#), path("spec.absent")],
        };
        let r = redacted_form(form, Secrecy::Plain, &sensitivity, &hasher()).unwrap();
        assert_eq!(placeholder_paths(&r), [path(r"data.app\.token")]);
        assert_eq!(r["data"]["app.other"], "plain");
        assert_eq!(r["data"]["app"], "also plain");
        assert!(!r.to_string().contains("s3cr3t"));
    }

    #[test]
    fn paths_inside_others_and_list_items_are_redacted_once() {
        let form = json!({"kind": "Thing", "spec": {"auth": {"token": "t", "user": "u"},
            "env": [{"name": "A", "value": "a"}, {"name": "KEY", "value": "k"}]}});
        let sensitivity = Sensitivity {
            paths: vec![
                path("spec.auth.token"),
                path("spec.auth"),
                path("spec.env[name=KEY].value"),
            ],
        };
        let r = redacted_form(form, Secrecy::Plain, &sensitivity, &hasher()).unwrap();
        assert_eq!(
            placeholder_paths(&r),
            [path("spec.auth"), path("spec.env[1].value")]
        );
        assert_eq!(r["spec"]["env"][0]["value"], "a");
    }

    #[test]
    fn the_last_applied_annotation_is_redacted_with_the_values() {
        let applied = r#"{"apiVersion":"v1","data":{"password":"aHVudGVyMg=="},"kind":"Secret"}"#;
        let form = semantic_form(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "annotations": {LAST_APPLIED: applied, "other": "kept"}},
            "data": {"password": "aHVudGVyMg=="}}));
        let r = redacted_form(form.clone(), Secrecy::Secret, &Sensitivity::default(), &hasher()).unwrap();
        assert!(is_placeholder(&r["metadata"]["annotations"][LAST_APPLIED]));
        assert_eq!(r["metadata"]["annotations"]["other"], "kept");
        assert!(!r.to_string().contains("aHVudGVyMg=="));
        // Whatever the reason the object holds a sensitive value.
        let marked = Sensitivity {
            paths: vec![path("data.password")],
        };
        let r = redacted_form(form, Secrecy::Plain, &marked, &hasher()).unwrap();
        assert!(is_placeholder(&r["metadata"]["annotations"][LAST_APPLIED]));
    }

    #[test]
    fn an_encrypted_resource_has_no_redacted_form() {
        let form = json!({"kind": "Thing", "spec": {"a": 1}});
        let none = Sensitivity::default();
        assert_eq!(redacted_form(form, Secrecy::Everything, &none, &hasher()), None);
    }
}

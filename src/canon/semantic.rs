//! The semantic form of an object and its field hashes.
//!
//! The semantic form is the canonical JSON of the object without what
//! storage adds (`metadata.resourceVersion`, `metadata.selfLink`) and with
//! `apiVersion` reduced to its group, so a storage-version re-encode of the
//! same content (`apps/v1beta2` → `apps/v1`) keeps its hash while a change of
//! group or kind does not.

use super::canonical;
use super::keyed_hash::ValueHasher;
use serde_json::Value;

/// Default depth of field paths (`spec`, `spec.replicas`).
pub const DEFAULT_DEPTH: usize = 2;

/// The semantic form of `object`.
pub fn semantic_form(object: &Value) -> Value {
    let mut v = object.clone();
    if let Value::Object(map) = &mut v {
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            meta.remove("resourceVersion");
            meta.remove("selfLink");
        }
        if let Some(Value::String(api_version)) = map.remove("apiVersion") {
            if let Some((group, _)) = api_version.rsplit_once('/') {
                map.insert("apiGroup".into(), Value::String(group.to_string()));
            }
        }
    }
    canonical(&v)
}

/// Which paths of an object hold sensitive values.
#[derive(Clone, Debug, Default)]
pub struct Sensitivity {
    /// Extra field paths (and everything under them) the user marked.
    pub paths: Vec<String>,
}

impl Sensitivity {
    /// Whether `path` of an object of `kind` is sensitive: a Secret's
    /// `data`/`stringData`, or a configured path.
    pub fn is_sensitive(&self, secret: bool, path: &str) -> bool {
        let under =
            |root: &str| path == root || path.strip_prefix(root).is_some_and(|rest| rest.starts_with('.'));
        (secret && (under("data") || under("stringData"))) || self.paths.iter().any(|p| under(p))
    }

    /// Whether any sensitive value is present in a semantic form.
    pub fn covers_any(&self, secret: bool, form: &Value) -> bool {
        secret || self.paths.iter().any(|p| lookup(form, p).is_some())
    }
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| cur.as_object()?.get(k))
}

/// Length of a stored field hash.
pub const FIELD_HASH_LEN: usize = 16;

/// A field path and the hash of its value.
pub type FieldHash = (String, [u8; FIELD_HASH_LEN]);

/// Hashes every field path of `form` down to `depth` (1 = top-level fields):
/// keyed for sensitive paths, plain SHA-256 otherwise, truncated to 16 bytes.
pub fn field_hashes(
    form: &Value,
    depth: usize,
    secret: bool,
    sensitivity: &Sensitivity,
    hasher: &ValueHasher,
) -> Vec<FieldHash> {
    let mut out = Vec::new();
    walk(form, "", depth, &mut |path, value| {
        let bytes = serde_json::to_vec(value).expect("JSON values serialize");
        let full = hasher.hash(&bytes, sensitivity.is_sensitive(secret, path)).0;
        out.push((
            path.to_string(),
            full[..FIELD_HASH_LEN].try_into().expect("16 bytes"),
        ));
    });
    out
}

fn walk(v: &Value, prefix: &str, depth: usize, visit: &mut dyn FnMut(&str, &Value)) {
    let Value::Object(map) = v else { return };
    if depth == 0 {
        return;
    }
    for (k, child) in map {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        visit(&path, child);
        walk(child, &path, depth - 1, visit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let fields = field_hashes(&form, 2, true, &Sensitivity::default(), &hasher);
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
        assert!(Sensitivity {
            paths: vec!["spec.token".into()]
        }
        .is_sensitive(false, "spec.token.value"));
        assert!(!Sensitivity::default().is_sensitive(false, "data.x"));
    }
}

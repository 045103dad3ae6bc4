//! Which values are sensitive, and their redaction for display. Sensitive
//! values never reach the database, logs or reports in plaintext.

use serde_json::Value;

/// How much of an object's content is sensitive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Secrecy {
    /// Only the paths a user marked.
    #[default]
    Plain,
    /// A Secret: its `data` and `stringData`, and the whole object's
    /// canonical form.
    Secret,
    /// Every field: a resource the cluster encrypts at rest.
    Everything,
}

/// Resources whose stored values hold secrets.
pub fn is_sensitive_resource(group: &str, resource: &str) -> bool {
    group.is_empty() && resource == "secrets"
}

/// Whether a decoded object is a Secret.
pub fn is_secret(object: &Value) -> bool {
    object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && object.get("kind").and_then(Value::as_str) == Some("Secret")
}

/// Replaces every value under a Secret's `data` and `stringData` with a
/// placeholder that keeps the key and says how long the value was; returns
/// how many values it redacted.
pub fn redact_secret(object: &mut Value) -> usize {
    let mut n = 0;
    for field in ["data", "stringData"] {
        if let Some(Value::Object(map)) = object.get_mut(field) {
            for v in map.values_mut() {
                let len = v.as_str().map_or(0, str::len);
                *v = Value::String(format!("<redacted: {len} characters>"));
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_values_keeps_keys() {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "aHVudGVyMg=="}, "type": "Opaque"});
        assert!(is_secret(&s));
        assert_eq!(redact_secret(&mut s), 1);
        assert_eq!(s["data"]["password"], "<redacted: 12 characters>");
        assert_eq!(s["type"], "Opaque");
    }
}

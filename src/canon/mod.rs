//! Canonical form of a decoded object: keys sorted, empty values dropped, so
//! that two encodings of the same content compare equal.

pub mod change;
pub mod convert;
pub mod duplicates;
pub mod facts;
mod hash_reuse;
pub mod keyed_hash;
pub mod managed;
pub mod manifest;
pub mod path;
pub mod redact;
pub mod semantic;
pub mod sensitive;
pub mod view;
pub mod writer;

use serde_json::{Map, Value};

/// Whether a value is empty in Kubernetes' `omitempty` sense.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Members of a managedFields `fieldsV1` set (`f:name`, `k:{...}`,
/// `v:...`, `i:N`, `.`) are `{}` and must not be dropped as empty.
pub(crate) fn is_field_set_member(key: &str) -> bool {
    key == "." || ["f:", "k:", "v:", "i:"].iter().any(|p| key.starts_with(p))
}

/// `v` with every object's keys sorted and empty values (`""`, `0`,
/// `false`, `[]`, `{}`, `null`) removed from objects, recursively; an
/// object or array left empty is removed from its parent too.
pub fn canonical(v: &Value) -> Value {
    into_canonical(v.clone())
}

/// [`canonical`], consuming `v`: objects are sorted and filtered in place,
/// so nothing is copied or re-hashed.
pub fn into_canonical(mut v: Value) -> Value {
    canonicalize(&mut v);
    v
}

fn canonicalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.values_mut().for_each(canonicalize);
            keep_canonical_members(map);
        }
        Value::Array(items) => items.iter_mut().for_each(canonicalize),
        _ => {}
    }
}

/// Makes an object of already canonical members canonical: empties
/// dropped, sorted by key.
pub fn keep_canonical_members(map: &mut Map<String, Value>) {
    map.retain(|k, c| !is_empty(c) || is_field_set_member(k));
    map.sort_keys();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_empties_and_sorts() {
        let v = json!({"b": {"x": "", "y": [], "z": {"q": null}}, "a": 0, "c": [{"k": false}, 1], "d": "v"});
        let c = canonical(&v);
        assert_eq!(c, json!({"c": [{}, 1], "d": "v"}));
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"c":[{},1],"d":"v"}"#);
        let fields = json!({"fieldsV1": {"f:spec": {"f:replicas": {}, ".": {}}}});
        assert_eq!(
            canonical(&fields),
            fields,
            "managedFields sets keep their {{}} members"
        );
    }
}

//! Property: the semantic hash does not depend on JSON key order, whitespace
//! or map order, only on content.

use etcd_inspector::canon::semantic::semantic_form;
use etcd_inspector::decode::{decode_value, Outcome};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| Value::from(i64::from(n))),
        "[a-z0-9 ./:-]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z][a-zA-Z0-9]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Writes `v` with object keys in reverse order and `pad` whitespace around
/// every token.
fn write_reordered(v: &Value, pad: &str, out: &mut String) {
    match v {
        Value::Object(m) => {
            out.push('{');
            out.push_str(pad);
            let mut entries: Vec<_> = m.iter().collect();
            entries.reverse();
            for (i, (k, x)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(pad);
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(pad);
                out.push(':');
                out.push_str(pad);
                write_reordered(x, pad, out);
            }
            out.push_str(pad);
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                    out.push_str(pad);
                }
                write_reordered(x, pad, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn semantic_hash(bytes: &[u8]) -> Vec<u8> {
    let Ok(Outcome::Decoded(d)) = decode_value(bytes) else {
        panic!("does not decode: {}", String::from_utf8_lossy(bytes))
    };
    Sha256::digest(serde_json::to_vec(&semantic_form(&d.object)).unwrap()).to_vec()
}

proptest! {
    // Failing cases are kept beside this file (semantic_property.proptest-regressions).
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn semantic_hash_ignores_key_order_and_whitespace(spec in arb_json(), pad in "[ \t\n]{0,3}", newline in any::<bool>()) {
        let object = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"}, "spec": spec});
        let compact = serde_json::to_vec(&object).unwrap();
        let mut reordered = String::new();
        write_reordered(&object, &pad, &mut reordered);
        if newline {
            reordered.push('\n');
        }
        prop_assert_ne!(&compact, reordered.as_bytes());
        prop_assert_eq!(semantic_hash(&compact), semantic_hash(reordered.as_bytes()));
    }

    #[test]
    fn semantic_hash_changes_with_content(a in arb_json(), b in arb_json()) {
        let object = |spec: &Value| serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"x": spec}});
        // Equal after dropping empty values ({} and [] count as absent) iff equal hashes.
        let canonical_equal = etcd_inspector::canon::canonical(&object(&a)) == etcd_inspector::canon::canonical(&object(&b));
        let bytes = |spec: &Value| serde_json::to_vec(&object(spec)).unwrap();
        prop_assert_eq!(semantic_hash(&bytes(&a)) == semantic_hash(&bytes(&b)), canonical_equal);
    }
}

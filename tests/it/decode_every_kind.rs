//! The decoder works for every kind the schema knows, not only those with
//! Kubernetes fixtures: an object of each kind with every field set (to a
//! depth) decodes with no field left unknown and every field under its
//! JSON name.

use etcd_inspector::decode::schema::schema;
use etcd_inspector::decode::{decode_value, Outcome};
use prost::Message;
use prost_reflect::{DynamicMessage, Kind, MapKey, MessageDescriptor, Value};
use std::collections::HashMap;

const DEPTH: usize = 5;

fn sample(kind: &Kind, depth: usize) -> Option<Value> {
    Some(match kind {
        Kind::String => Value::String("x".into()),
        Kind::Bool => Value::Bool(true),
        Kind::Int32 => Value::I32(7),
        Kind::Int64 => Value::I64(7),
        Kind::Double => Value::F64(1.5),
        // Raw fields (RawExtension, FieldsV1, JSON) hold JSON; any bytes do elsewhere.
        Kind::Bytes => Value::Bytes(br#"{"a":1}"#.to_vec().into()),
        Kind::Message(m) if depth < DEPTH => Value::Message(filled(m, depth + 1)),
        _ => return None,
    })
}

fn filled(desc: &MessageDescriptor, depth: usize) -> DynamicMessage {
    let mut msg = DynamicMessage::new(desc.clone());
    for fd in desc.fields() {
        let value = if fd.is_map() {
            let Kind::Message(entry) = fd.kind() else {
                unreachable!()
            };
            sample(&entry.map_entry_value_field().kind(), depth)
                .map(|v| Value::Map(HashMap::from([(MapKey::String("k".into()), v)])))
        } else if fd.is_list() {
            sample(&fd.kind(), depth).map(|v| Value::List(vec![v]))
        } else {
            sample(&fd.kind(), depth)
        };
        if let Some(v) = value {
            msg.set_field(&fd, v);
        }
    }
    msg
}

/// The stored value: `k8s\0` + runtime.Unknown{typeMeta, raw}.
fn stored(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let pool = &schema().pool;
    let mut tm = DynamicMessage::new(
        pool.get_message_by_name("k8s.io.apimachinery.pkg.runtime.TypeMeta")
            .unwrap(),
    );
    tm.set_field_by_number(1, Value::String(api_version.into()));
    tm.set_field_by_number(2, Value::String(kind.into()));
    let mut env = DynamicMessage::new(
        pool.get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
            .unwrap(),
    );
    env.set_field_by_number(1, Value::Message(tm));
    env.set_field_by_number(2, Value::Bytes(raw.into()));
    let mut out = b"k8s\0".to_vec();
    out.extend(env.encode_to_vec());
    out
}

/// Kubernetes types whose JSON is not their protobuf structure.
fn scalar_in_json(desc: &MessageDescriptor) -> bool {
    let name = desc.name();
    [
        "Time",
        "MicroTime",
        "Duration",
        "FieldsV1",
        "Quantity",
        "IntOrString",
        "RawExtension",
        "JSON",
    ]
    .contains(&name)
        || name.starts_with("JSONSchemaPropsOr")
        || schema().is_list_wrapper(desc)
}

/// Asserts every field of `desc` appears in `json` under its JSON name (an
/// inlined field's own fields appear in the same object), descending into
/// nested objects; returns how many fields it checked.
fn check_fields(desc: &MessageDescriptor, json: &serde_json::Value, path: &str, depth: usize) -> usize {
    let Some(obj) = json.as_object() else { return 0 };
    let mut n = 0;
    for fd in desc.fields() {
        let Kind::Message(inner) = fd.kind() else {
            assert!(
                obj.contains_key(fd.json_name()),
                "{path}.{} missing",
                fd.json_name()
            );
            n += 1;
            continue;
        };
        if depth + 1 >= DEPTH || scalar_in_json(&inner) {
            assert!(
                schema().is_inline(desc, fd.number()) || obj.contains_key(fd.json_name()),
                "{path}.{} missing",
                fd.json_name()
            );
            n += 1;
            continue;
        }
        if schema().is_inline(desc, fd.number()) {
            n += check_fields(&inner, json, path, depth + 1);
            continue;
        }
        let v = obj
            .get(fd.json_name())
            .unwrap_or_else(|| panic!("{path}.{} missing", fd.json_name()));
        n += 1;
        let v = if fd.is_list() {
            v.get(0).unwrap_or(v)
        } else if fd.is_map() {
            v.get("k").unwrap_or(v)
        } else {
            v
        };
        if !fd.is_map() {
            n += check_fields(&inner, v, &format!("{path}.{}", fd.json_name()), depth + 1);
        }
    }
    n
}

#[test]
fn every_kind_in_the_schema_decodes_fully() {
    let s = schema();
    let mut groups = std::collections::BTreeSet::new();
    for k in s.kinds() {
        let desc = s.pool.get_message_by_name(&k.message).unwrap();
        let value = stored(&k.api_version, &k.kind, filled(&desc, 0).encode_to_vec());
        let Ok(Outcome::Decoded(d)) = decode_value(&value) else {
            panic!("{} {} does not decode", k.api_version, k.kind)
        };
        assert!(
            d.unknown_fields.is_empty(),
            "{} {}: unknown {:?}",
            k.api_version,
            k.kind,
            d.unknown_fields
        );
        assert!(
            d.warnings.is_empty(),
            "{} {}: {:?}",
            k.api_version,
            k.kind,
            d.warnings
        );
        assert_eq!(d.object["apiVersion"], k.api_version.as_str());
        let checked = check_fields(&desc, &d.object, &format!("{} {}", k.api_version, k.kind), 0);
        assert!(
            checked >= desc.fields().len(),
            "{} {}: only {checked} fields checked",
            k.api_version,
            k.kind
        );
        groups.insert(k.group().to_string());
    }
    for g in [
        "",
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        "policy",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "autoscaling",
        "scheduling.k8s.io",
        "node.k8s.io",
        "certificates.k8s.io",
        "admissionregistration.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "resource.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "extensions",
    ] {
        assert!(groups.contains(g), "no kinds of group {g:?} in the schema");
    }
}

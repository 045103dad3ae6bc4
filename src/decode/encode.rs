//! Kubernetes JSON → the protobuf value kube-apiserver stores (`k8s\0` +
//! `runtime.Unknown`): the inverse of the protobuf decoder. Tests, benchmarks
//! and the demo use it to write realistic built-in objects; the tool itself
//! never writes to etcd.

use super::envelope::PROTOBUF_MAGIC;
use super::schema::{schema, Resolution, Schema};
use super::special::{special, Special};
use base64::Engine;
use prost::Message;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value as PValue,
};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Why an object could not be encoded.
#[derive(Debug, thiserror::Error)]
#[error("cannot encode {path}: {problem}")]
pub struct EncodeError {
    pub path: String,
    pub problem: String,
}

fn err(path: &str, problem: impl Into<String>) -> EncodeError {
    EncodeError {
        path: if path.is_empty() {
            "object".into()
        } else {
            path.into()
        },
        problem: problem.into(),
    }
}

/// Encodes a built-in object (with `apiVersion` and `kind`) as stored.
pub fn encode_protobuf(object: &Value) -> Result<Vec<u8>, EncodeError> {
    let s = schema();
    let obj = object.as_object().ok_or_else(|| err("", "not a JSON object"))?;
    let text = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| err(k, "missing"))
    };
    let (api_version, kind) = (text("apiVersion")?, text("kind")?);
    let (desc, how) = s.resolve(api_version, kind);
    if how != Resolution::Exact {
        return Err(err("", format!("{api_version} {kind} is not in the schema")));
    }
    let mut body = obj.clone();
    body.remove("apiVersion");
    body.remove("kind");
    let mut raw = Vec::new();
    encode_sorted(&Encoder { schema: s }.message(&desc, &body, "")?, &mut raw);
    let unknown = s
        .pool
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
        .expect("runtime.Unknown");
    let type_meta = s
        .pool
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.TypeMeta")
        .expect("runtime.TypeMeta");
    let mut tm = DynamicMessage::new(type_meta);
    tm.set_field_by_number(1, PValue::String(api_version.into()));
    tm.set_field_by_number(2, PValue::String(kind.into()));
    let mut envelope = DynamicMessage::new(unknown);
    envelope.set_field_by_number(1, PValue::Message(tm));
    envelope.set_field_by_number(2, PValue::Bytes(raw.into()));
    // Go writes the empty contentEncoding and contentType too.
    envelope.set_field_by_number(3, PValue::String(String::new()));
    envelope.set_field_by_number(4, PValue::String(String::new()));
    let mut out = PROTOBUF_MAGIC.to_vec();
    out.extend(envelope.encode_to_vec());
    Ok(out)
}

/// Encodes `msg` as Go's generated marshallers do: fields in number order,
/// map entries sorted by key (prost-reflect would write map entries in hash
/// order, so equal objects would not give equal bytes).
fn encode_sorted(msg: &DynamicMessage, out: &mut Vec<u8>) {
    let mut fields: Vec<_> = msg.fields().collect();
    fields.sort_by_key(|(fd, _)| fd.number());
    for (fd, value) in fields {
        encode_field(msg.descriptor(), &fd, value, out);
    }
}

fn length_delimited(number: u32, body: &[u8], out: &mut Vec<u8>) {
    prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// One field: messages recursively, maps sorted, scalars by prost-reflect.
fn encode_field(parent: MessageDescriptor, fd: &FieldDescriptor, value: &PValue, out: &mut Vec<u8>) {
    match value {
        PValue::Message(m) => {
            let mut body = Vec::new();
            encode_sorted(m, &mut body);
            length_delimited(fd.number(), &body, out);
        }
        PValue::List(items) if matches!(fd.kind(), Kind::Message(_)) => {
            for item in items {
                encode_field(parent.clone(), fd, item, out);
            }
        }
        PValue::Map(entries) => {
            let Kind::Message(entry_desc) = fd.kind() else {
                unreachable!("map fields have entry messages")
            };
            let value_fd = entry_desc.map_entry_value_field();
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in sorted {
                let mut key_only = DynamicMessage::new(entry_desc.clone());
                key_only.set_field(&entry_desc.map_entry_key_field(), PValue::from(k.clone()));
                let mut body = key_only.encode_to_vec();
                encode_field(entry_desc.clone(), &value_fd, v, &mut body);
                length_delimited(fd.number(), &body, out);
            }
        }
        scalar => {
            let mut single = DynamicMessage::new(parent);
            single.set_field(fd, scalar.clone());
            out.extend(single.encode_to_vec());
        }
    }
}

struct Encoder<'s> {
    schema: &'s Schema,
}

impl Encoder<'_> {
    fn message(
        &self,
        desc: &MessageDescriptor,
        obj: &Map<String, Value>,
        path: &str,
    ) -> Result<DynamicMessage, EncodeError> {
        let mut msg = DynamicMessage::new(desc.clone());
        let mut used = std::collections::HashSet::new();
        self.fill(desc, obj, path, &mut msg, &mut used)?;
        if let Some(extra) = obj.keys().find(|k| !used.contains(k.as_str())) {
            return Err(err(
                &join(path, extra),
                format!("no such field in {}", desc.full_name()),
            ));
        }
        Ok(msg)
    }

    fn fill<'o>(
        &self,
        desc: &MessageDescriptor,
        obj: &'o Map<String, Value>,
        path: &str,
        msg: &mut DynamicMessage,
        used: &mut std::collections::HashSet<&'o str>,
    ) -> Result<(), EncodeError> {
        for fd in desc.fields() {
            if self.schema.is_inline(desc, fd.number()) {
                if let Kind::Message(inner) = fd.kind() {
                    let mut sub = DynamicMessage::new(inner.clone());
                    let before = used.len();
                    self.fill(&inner, obj, path, &mut sub, used)?;
                    if used.len() > before {
                        msg.set_field(&fd, PValue::Message(sub));
                    }
                }
                continue;
            }
            let Some((name, v)) = obj.get_key_value(fd.json_name()) else {
                continue;
            };
            used.insert(name.as_str());
            if v.is_null() {
                continue;
            }
            let p = join(path, name);
            msg.set_field(&fd, self.field(&fd, v, &p)?);
        }
        Ok(())
    }

    fn field(&self, fd: &FieldDescriptor, v: &Value, path: &str) -> Result<PValue, EncodeError> {
        if fd.is_map() {
            let Kind::Message(entry) = fd.kind() else {
                unreachable!("map fields have entry messages")
            };
            let obj = v.as_object().ok_or_else(|| err(path, "expected an object"))?;
            let value_kind = entry.map_entry_value_field().kind();
            let mut out = HashMap::new();
            for (k, item) in obj {
                out.insert(
                    MapKey::String(k.clone()),
                    self.single(&value_kind, item, &join(path, k))?,
                );
            }
            return Ok(PValue::Map(out));
        }
        if fd.is_list() {
            let items = v.as_array().ok_or_else(|| err(path, "expected an array"))?;
            let kind = fd.kind();
            return items
                .iter()
                .enumerate()
                .map(|(i, item)| self.single(&kind, item, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()
                .map(PValue::List);
        }
        self.single(&fd.kind(), v, path)
    }

    fn single(&self, kind: &Kind, v: &Value, path: &str) -> Result<PValue, EncodeError> {
        let num = || {
            v.as_i64()
                .ok_or_else(|| err(path, format!("expected an integer, got {v}")))
        };
        Ok(match kind {
            Kind::String => PValue::String(v.as_str().ok_or_else(|| err(path, "expected a string"))?.into()),
            Kind::Bool => PValue::Bool(v.as_bool().ok_or_else(|| err(path, "expected a boolean"))?),
            Kind::Int32 => PValue::I32(i32::try_from(num()?).map_err(|_| err(path, "out of int32 range"))?),
            Kind::Int64 => PValue::I64(num()?),
            Kind::Double => PValue::F64(v.as_f64().ok_or_else(|| err(path, "expected a number"))?),
            Kind::Bytes => {
                let s = v.as_str().ok_or_else(|| err(path, "expected base64 text"))?;
                let b = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| err(path, e.to_string()))?;
                PValue::Bytes(b.into())
            }
            Kind::Message(m) => PValue::Message(self.message_value(m, v, path)?),
            other => return Err(err(path, format!("unsupported protobuf type {other:?}"))),
        })
    }

    fn message_value(
        &self,
        desc: &MessageDescriptor,
        v: &Value,
        path: &str,
    ) -> Result<DynamicMessage, EncodeError> {
        let mut msg = DynamicMessage::new(desc.clone());
        let set = |msg: &mut DynamicMessage, n: u32, val: PValue| msg.set_field_by_number(n, val);
        if let Some(kind) = special(desc.full_name()) {
            match (kind, v) {
                // A zero Time (or other empty value) is stored as an empty message.
                (_, Value::Null) => {}
                (Special::Time | Special::MicroTime, Value::String(s)) => {
                    let ts: jiff::Timestamp = s.parse().map_err(|e| err(path, format!("not a time: {e}")))?;
                    // Go's Timestamp marshaller writes nanos even when zero.
                    set(&mut msg, 1, PValue::I64(ts.as_second()));
                    set(&mut msg, 2, PValue::I32(ts.subsec_nanosecond()));
                }
                (Special::Quantity, Value::String(s)) => set(&mut msg, 1, PValue::String(s.clone())),
                (Special::Quantity, Value::Number(n)) => set(&mut msg, 1, PValue::String(n.to_string())),
                // Go writes all three IntOrString fields.
                (Special::IntOrString, Value::Number(n)) => {
                    let n = n
                        .as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| err(path, "out of int32 range"))?;
                    set(&mut msg, 1, PValue::I64(0));
                    set(&mut msg, 2, PValue::I32(n));
                    set(&mut msg, 3, PValue::String(String::new()));
                }
                (Special::IntOrString, Value::String(s)) => {
                    set(&mut msg, 1, PValue::I64(1));
                    set(&mut msg, 2, PValue::I32(0));
                    set(&mut msg, 3, PValue::String(s.clone()));
                }
                (Special::RawJson, v) => set(
                    &mut msg,
                    1,
                    PValue::Bytes(serde_json::to_vec(v).expect("JSON").into()),
                ),
                (Special::SchemaOrBool, Value::Bool(b)) => set(&mut msg, 1, PValue::Bool(*b)),
                (Special::SchemaOrBool, obj @ Value::Object(_)) => {
                    set(&mut msg, 1, PValue::Bool(true));
                    let fd = desc.get_field(2).expect("schema field");
                    set(&mut msg, 2, self.single(&fd.kind(), obj, path)?);
                }
                (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Array(_)) => {
                    let fd = desc.get_field(2).expect("array field");
                    set(&mut msg, 2, self.field(&fd, v, path)?);
                }
                (Special::SchemaOrArray | Special::SchemaOrStringArray, obj @ Value::Object(_)) => {
                    let fd = desc.get_field(1).expect("schema field");
                    set(&mut msg, 1, self.single(&fd.kind(), obj, path)?);
                }
                _ => {
                    return Err(err(
                        path,
                        format!("{v} cannot be encoded as {}", desc.full_name()),
                    ))
                }
            }
            return Ok(msg);
        }
        if self.schema.is_list_wrapper(desc) {
            let fd = desc.get_field(1).expect("items field");
            set(&mut msg, 1, self.field(&fd, v, path)?);
            return Ok(msg);
        }
        let obj = v
            .as_object()
            .ok_or_else(|| err(path, format!("expected an object for {}", desc.full_name())))?;
        self.message(desc, obj, path)
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Encodes an object as kube-apiserver stores a custom resource in CBOR
/// (`CBORServingAndStorage`): the self-described tag 55799 around the value,
/// strings and map keys as byte strings.
pub fn encode_cbor(object: &Value) -> Vec<u8> {
    fn convert(v: &Value) -> ciborium::Value {
        use ciborium::Value as C;
        match v {
            Value::Null => C::Null,
            Value::Bool(b) => C::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => C::Integer(i.into()),
                (None, Some(u), _) => C::Integer(u.into()),
                (_, _, f) => C::Float(f.unwrap_or_default()),
            },
            Value::String(s) => C::Bytes(s.as_bytes().to_vec()),
            Value::Array(a) => C::Array(a.iter().map(convert).collect()),
            Value::Object(o) => C::Map(
                o.iter()
                    .map(|(k, v)| (C::Bytes(k.as_bytes().to_vec()), convert(v)))
                    .collect(),
            ),
        }
    }
    let mut out = Vec::new();
    ciborium::into_writer(&ciborium::Value::Tag(55799, Box::new(convert(object))), &mut out)
        .expect("writing CBOR to memory cannot fail");
    out
}

//! Schema-aware protobuf → Kubernetes JSON, as kube-apiserver serves it.
//!
//! The bytes are parsed into a prost-reflect dynamic message; this module
//! then writes JSON with Kubernetes' conventions: JSON names from the schema,
//! inlined messages merged into their parent, list wrappers as bare arrays,
//! `Time`/`MicroTime`/`Duration`/`Quantity`/`IntOrString` in their string or
//! number forms, raw JSON fields embedded, bytes as base64, int64 as numbers.
//! Fields the schema does not know are kept under `#<number>` and listed.

use super::gotime;
use super::schema::Schema;
use super::wire::{self, Reader};
use base64::Engine;
use prost_reflect::{DynamicMessage, MessageDescriptor, ReflectMessage, Value as PValue};
use serde_json::{Map, Value};
use std::fmt::Write;

/// A protobuf object that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{message} does not parse: {problem}")]
pub struct ProtoError {
    pub message: String,
    pub problem: String,
    /// Offset of the fault within the stored value, when it could be found.
    pub offset: Option<usize>,
}

/// The JSON of one object plus what the schema did not cover.
pub struct ProtoJson {
    pub object: Map<String, Value>,
    /// Paths of fields kept by number (`spec.#99`).
    pub unknown_fields: Vec<String>,
    /// Values that could not take their usual JSON form.
    pub warnings: Vec<String>,
}

/// Decodes `bytes` (which start at `base` within the stored value) as `desc`.
pub fn to_json(
    schema: &Schema,
    desc: &MessageDescriptor,
    bytes: &[u8],
    base: usize,
) -> Result<ProtoJson, ProtoError> {
    let msg = DynamicMessage::decode(desc.clone(), bytes).map_err(|e| {
        let fault = wire::locate_fault(bytes, base, desc);
        ProtoError {
            message: desc.full_name().to_string(),
            problem: match &fault {
                Some(f) => f.to_string(),
                None => e.to_string(),
            },
            offset: fault.map(|f| f.offset),
        }
    })?;
    let mut conv = Converter {
        schema,
        path: String::new(),
        unknown_fields: Vec::new(),
        warnings: Vec::new(),
    };
    let mut object = Map::new();
    conv.fill(&msg, &mut object);
    Ok(ProtoJson {
        object,
        unknown_fields: conv.unknown_fields,
        warnings: conv.warnings,
    })
}

struct Converter<'s> {
    schema: &'s Schema,
    /// Path of the value being converted (`spec.containers[0]`), kept in
    /// one buffer: it is only read to name unknown fields and warnings.
    path: String,
    unknown_fields: Vec<String>,
    warnings: Vec<String>,
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
const APIEXT_V1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
const APIEXT_V1BETA1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.";

/// Kubernetes types whose JSON form is not their protobuf structure.
pub(super) enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    RawJson,
    SchemaOrArray,
    SchemaOrBool,
    SchemaOrStringArray,
}

pub(super) fn special(full_name: &str) -> Option<Special> {
    let apiext = full_name
        .strip_prefix(APIEXT_V1)
        .or_else(|| full_name.strip_prefix(APIEXT_V1BETA1));
    if let Some(name) = apiext {
        return match name {
            "JSON" => Some(Special::RawJson),
            "JSONSchemaPropsOrArray" => Some(Special::SchemaOrArray),
            "JSONSchemaPropsOrBool" => Some(Special::SchemaOrBool),
            "JSONSchemaPropsOrStringArray" => Some(Special::SchemaOrStringArray),
            _ => None,
        };
    }
    if let Some(name) = full_name.strip_prefix(META) {
        return match name {
            "Time" => Some(Special::Time),
            "MicroTime" => Some(Special::MicroTime),
            "Duration" => Some(Special::Duration),
            "FieldsV1" => Some(Special::RawJson),
            _ => None,
        };
    }
    match full_name {
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Some(Special::Quantity),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Some(Special::IntOrString),
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Some(Special::RawJson),
        _ => None,
    }
}

fn field<'m>(msg: &'m DynamicMessage, number: u32) -> Option<std::borrow::Cow<'m, PValue>> {
    msg.has_field_by_number(number)
        .then(|| msg.get_field_by_number(number))
        .flatten()
}

fn int(msg: &DynamicMessage, number: u32) -> i64 {
    match field(msg, number).as_deref() {
        Some(PValue::I64(n)) => *n,
        Some(PValue::I32(n)) => i64::from(*n),
        _ => 0,
    }
}

impl Converter<'_> {
    /// Runs `f` with `.name` (or `name` at the top) appended to the path.
    fn at_field<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        if len > 0 {
            self.path.push('.');
        }
        self.path.push_str(name);
        let out = f(self);
        self.path.truncate(len);
        out
    }

    /// Runs `f` with `[i]` appended to the path.
    fn at_index<T>(&mut self, i: usize, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        let _ = write!(self.path, "[{i}]");
        let out = f(self);
        self.path.truncate(len);
        out
    }

    fn message(&mut self, msg: &DynamicMessage) -> Value {
        let desc = msg.descriptor();
        if let Some(kind) = special(desc.full_name()) {
            return self.special(kind, msg);
        }
        if self.schema.is_list_wrapper(&desc) {
            return match field(msg, 1) {
                Some(v) => self.value(&v),
                None => Value::Array(Vec::new()),
            };
        }
        let mut out = Map::new();
        self.fill(msg, &mut out);
        Value::Object(out)
    }

    /// Writes `msg`'s fields into `out` (inlined messages into the same map).
    fn fill(&mut self, msg: &DynamicMessage, out: &mut Map<String, Value>) {
        let desc = msg.descriptor();
        let inlined = self.schema.inline_numbers(&desc);
        for (fd, v) in msg.fields() {
            if inlined.is_some_and(|n| n.contains(&fd.number())) {
                if let PValue::Message(inner) = v {
                    self.fill(inner, out);
                    continue;
                }
            }
            let name = fd.json_name();
            let json = self.at_field(name, |c| c.value(v));
            out.insert(name.to_string(), json);
        }
        for uf in msg.unknown_fields() {
            let mut buf = Vec::new();
            uf.encode(&mut buf);
            if let Ok(Some(f)) = Reader::new(&buf, 0).next_field() {
                wire::insert_unknown(out, f.number, wire::render_value(&f.value));
                let path = self.at_field(&wire::unknown_key(f.number), |c| c.path.clone());
                self.unknown_fields.push(path);
            }
        }
    }

    fn value(&mut self, v: &PValue) -> Value {
        match v {
            PValue::Bool(b) => Value::Bool(*b),
            PValue::I32(n) => Value::from(*n),
            PValue::I64(n) => Value::from(*n),
            PValue::U32(n) => Value::from(*n),
            PValue::U64(n) => Value::from(*n),
            PValue::F32(n) => serde_json::Number::from_f64(f64::from(*n)).map_or(Value::Null, Value::Number),
            PValue::F64(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
            PValue::String(s) => Value::String(s.clone()),
            PValue::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            PValue::EnumNumber(n) => Value::from(*n),
            PValue::Message(m) => self.message(m),
            PValue::List(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.at_index(i, |c| c.value(item)))
                    .collect(),
            ),
            PValue::Map(entries) => {
                let mut keys: Vec<_> = entries.iter().collect();
                keys.sort_by_key(|(k, _)| map_key(k));
                let mut out = Map::new();
                for (k, item) in keys {
                    let key = map_key(k);
                    let json = self.at_field(&key, |c| c.value(item));
                    out.insert(key, json);
                }
                Value::Object(out)
            }
        }
    }

    fn special(&mut self, kind: Special, msg: &DynamicMessage) -> Value {
        match kind {
            Special::Time | Special::MicroTime => {
                let (secs, nanos) = (int(msg, 1), int(msg, 2) as i32);
                if secs == 0 && nanos == 0 {
                    return Value::Null;
                }
                let text = match kind {
                    Special::Time => gotime::time(secs, nanos),
                    _ => gotime::micro_time(secs, nanos),
                };
                text.map(Value::String).unwrap_or_else(|| {
                    self.warnings.push(format!(
                        "{}: time out of range (seconds={secs}, nanos={nanos})",
                        self.path
                    ));
                    serde_json::json!({ "seconds": secs, "nanos": nanos })
                })
            }
            Special::Duration => Value::String(gotime::duration(int(msg, 1))),
            Special::Quantity => match field(msg, 1).as_deref() {
                Some(PValue::String(s)) => Value::String(s.clone()),
                _ => Value::Null,
            },
            Special::IntOrString => {
                if int(msg, 1) == 1 {
                    match field(msg, 3).as_deref() {
                        Some(PValue::String(s)) => Value::String(s.clone()),
                        _ => Value::String(String::new()),
                    }
                } else {
                    Value::from(int(msg, 2))
                }
            }
            Special::RawJson => match field(msg, 1).as_deref() {
                Some(PValue::Bytes(b)) if !b.is_empty() => self.embedded_json(b),
                _ => Value::Null,
            },
            Special::SchemaOrArray => match field(msg, 2).as_deref() {
                Some(PValue::List(items)) if !items.is_empty() => self.value(&PValue::List(items.clone())),
                _ => self.optional_message(msg, 1),
            },
            Special::SchemaOrBool => {
                if msg.has_field_by_number(2) {
                    self.optional_message(msg, 2)
                } else {
                    Value::Bool(matches!(field(msg, 1).as_deref(), Some(PValue::Bool(true))))
                }
            }
            Special::SchemaOrStringArray => match field(msg, 2).as_deref() {
                Some(PValue::List(items)) if !items.is_empty() => self.value(&PValue::List(items.clone())),
                _ => self.optional_message(msg, 1),
            },
        }
    }

    fn optional_message(&mut self, msg: &DynamicMessage, number: u32) -> Value {
        match field(msg, number).as_deref() {
            Some(PValue::Message(m)) => self.message(m),
            _ => Value::Null,
        }
    }

    /// RawExtension, FieldsV1 and apiextensions JSON hold serialized JSON.
    fn embedded_json(&mut self, bytes: &[u8]) -> Value {
        match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: embedded value is not JSON ({e}); kept as base64",
                    self.path
                ));
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
        }
    }
}

fn map_key(k: &prost_reflect::MapKey) -> String {
    use prost_reflect::MapKey;
    match k {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

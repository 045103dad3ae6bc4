//! Schema-aware protobuf → Kubernetes JSON, as kube-apiserver serves it.
//!
//! The wire format is read straight into JSON, field by field, with the
//! schema's descriptors and Kubernetes' conventions: JSON names from the schema,
//! inlined messages merged into their parent, list wrappers as bare arrays,
//! `Time`/`MicroTime`/`Duration`/`Quantity`/`IntOrString` in their string or
//! number forms, raw JSON fields embedded, bytes as base64, int64 as numbers.
//! Fields the schema does not know are kept under `#<number>` and listed.

use super::gotime;
use super::schema::Schema;
use super::wire::{self, Reader, WireField, WireValue};
use base64::Engine;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
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
    let mut conv = Converter {
        schema,
        depth: 0,
        path: String::new(),
        unknown_fields: Vec::new(),
        warnings: Vec::new(),
    };
    let mut object = Map::new();
    match conv.fill(desc, bytes, &mut object) {
        Ok(()) => Ok(ProtoJson {
            object,
            unknown_fields: conv.unknown_fields,
            warnings: conv.warnings,
        }),
        Err(Malformed(reason)) => Err(describe_fault(desc, bytes, base, reason)),
    }
}

/// Decodes `bytes` without a schema: every field kept by number, rendered
/// as fields the schema does not know are (nested messages where the bytes
/// parse as one), and listed as unknown. `None` when the bytes are not
/// protobuf wire format.
pub fn by_number(bytes: &[u8]) -> Option<ProtoJson> {
    let fields = wire_fields(bytes).ok()?;
    let mut object = Map::new();
    let mut unknown_fields = Vec::new();
    for f in &fields {
        wire::insert_unknown(&mut object, f.number, wire::render_value(&f.value));
        let key = wire::unknown_key(f.number);
        if unknown_fields.last() != Some(&key) {
            unknown_fields.push(key);
        }
    }
    Some(ProtoJson {
        object,
        unknown_fields,
        warnings: Vec::new(),
    })
}

/// The error for a message that does not parse: where the wire format
/// breaks when it does, else what a protobuf decoder objects to.
fn describe_fault(desc: &MessageDescriptor, bytes: &[u8], base: usize, reason: String) -> ProtoError {
    let fault = wire::locate_fault(bytes, base, desc);
    let problem = match &fault {
        Some(f) => f.to_string(),
        None => match prost_reflect::DynamicMessage::decode(desc.clone(), bytes) {
            Err(e) => e.to_string(),
            Ok(_) => reason,
        },
    };
    ProtoError {
        message: desc.full_name().to_string(),
        problem,
        offset: fault.map(|f| f.offset),
    }
}

/// Why bytes do not parse as the message they should hold.
struct Malformed(String);

type Converted<T> = Result<T, Malformed>;

/// Every occurrence of one field number, in wire order.
type Occurrences<'a, 'b> = &'b [WireField<'a>];

/// The fields of a message in field-number order, occurrences of a number
/// in wire order (the order a protobuf decoder would apply them).
fn wire_fields(bytes: &[u8]) -> Converted<Vec<WireField<'_>>> {
    let mut r = Reader::new(bytes, 0);
    let mut fields = Vec::new();
    while let Some(f) = r.next_field().map_err(|e| Malformed(e.problem))? {
        fields.push(f);
    }
    fields.sort_by_key(|f| f.number);
    Ok(fields)
}

fn bytes_of<'a>(f: &WireField<'a>) -> Converted<&'a [u8]> {
    match f.value {
        WireValue::Bytes(b) => Ok(b),
        _ => Err(Malformed(format!("field {} is not length-delimited", f.number))),
    }
}

/// A singular message field's bytes: occurrences of it merge, which for
/// protobuf is the same as parsing their concatenation.
fn merged<'a>(group: Occurrences<'a, '_>) -> Converted<Cow<'a, [u8]>> {
    match group {
        [one] => bytes_of(one).map(Cow::Borrowed),
        many => {
            let mut all = Vec::new();
            for f in many {
                all.extend_from_slice(bytes_of(f)?);
            }
            Ok(Cow::Owned(all))
        }
    }
}

/// The JSON of a scalar of `kind` as it came off the wire.
fn scalar(kind: &Kind, value: &WireValue<'_>) -> Converted<Value> {
    let float = |n: f64| serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number);
    Ok(match (kind, value) {
        (Kind::Double, WireValue::Fixed64(b)) => float(f64::from_le_bytes(*b)),
        (Kind::Float, WireValue::Fixed32(b)) => float(f64::from(f32::from_le_bytes(*b))),
        (Kind::Int32 | Kind::Enum(_), WireValue::Varint(n)) => Value::from(*n as i32),
        (Kind::Int64, WireValue::Varint(n)) => Value::from(*n as i64),
        (Kind::Uint32, WireValue::Varint(n)) => Value::from(*n as u32),
        (Kind::Uint64, WireValue::Varint(n)) => Value::from(*n),
        (Kind::Sint32, WireValue::Varint(n)) => Value::from(((*n as u32) >> 1) as i32 ^ -((*n & 1) as i32)),
        (Kind::Sint64, WireValue::Varint(n)) => Value::from((*n >> 1) as i64 ^ -((*n & 1) as i64)),
        (Kind::Bool, WireValue::Varint(n)) => Value::Bool(*n != 0),
        (Kind::Fixed32, WireValue::Fixed32(b)) => Value::from(u32::from_le_bytes(*b)),
        (Kind::Sfixed32, WireValue::Fixed32(b)) => Value::from(i32::from_le_bytes(*b)),
        (Kind::Fixed64, WireValue::Fixed64(b)) => Value::from(u64::from_le_bytes(*b)),
        (Kind::Sfixed64, WireValue::Fixed64(b)) => Value::from(i64::from_le_bytes(*b)),
        (Kind::String, WireValue::Bytes(b)) => Value::String(
            std::str::from_utf8(b)
                .map_err(|_| Malformed("a string is not valid UTF-8".into()))?
                .to_string(),
        ),
        (Kind::Bytes, WireValue::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (kind, _) => return Err(Malformed(format!("a {kind:?} value has the wrong wire type"))),
    })
}

/// The scalars of one occurrence of a repeated field: one, or a packed run.
fn push_scalars(kind: &Kind, f: &WireField<'_>, out: &mut Vec<Value>) -> Converted<()> {
    let packed = match (kind, &f.value) {
        (Kind::String | Kind::Bytes | Kind::Message(_), _) => None,
        (_, WireValue::Bytes(run)) => Some(*run),
        _ => None,
    };
    let Some(run) = packed else {
        out.push(scalar(kind, &f.value)?);
        return Ok(());
    };
    let wire_type = match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => 1,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => 5,
        _ => 0,
    };
    let mut r = Reader::new(run, 0);
    while let Some(element) = r.next_packed(wire_type).map_err(|e| Malformed(e.problem))? {
        out.push(scalar(kind, &element)?);
    }
    Ok(())
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

struct Converter<'s> {
    schema: &'s Schema,
    /// Messages entered; conversion stops past [`wire::MAX_DEPTH`].
    depth: usize,
    /// Path of the value being converted (`spec.containers[0]`), kept in
    /// one buffer: it is only read to name unknown fields and warnings.
    path: String,
    unknown_fields: Vec<String>,
    warnings: Vec<String>,
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

    fn message(&mut self, desc: &MessageDescriptor, bytes: &[u8]) -> Converted<Value> {
        if self.depth >= wire::MAX_DEPTH {
            return Err(Malformed(format!(
                "messages nested more than {} deep",
                wire::MAX_DEPTH
            )));
        }
        self.depth += 1;
        let value = self.message_within(desc, bytes);
        self.depth -= 1;
        value
    }

    fn message_within(&mut self, desc: &MessageDescriptor, bytes: &[u8]) -> Converted<Value> {
        if let Some(kind) = special(desc.full_name()) {
            return self.special(kind, desc, bytes);
        }
        if self.schema.is_list_wrapper(desc) {
            let fields = wire_fields(bytes)?;
            let items = self.field(desc, 1, &fields)?;
            return Ok(items.unwrap_or(Value::Array(Vec::new())));
        }
        let mut out = Map::new();
        self.fill(desc, bytes, &mut out)?;
        Ok(Value::Object(out))
    }

    /// Writes the fields of `bytes`, a `desc`, into `out` (inlined messages
    /// into the same map), then the fields the schema does not know.
    fn fill(
        &mut self,
        desc: &MessageDescriptor,
        bytes: &[u8],
        out: &mut Map<String, Value>,
    ) -> Converted<()> {
        let fields = wire_fields(bytes)?;
        let inlined = self.schema.inline_numbers(desc);
        let mut unknown: Vec<WireField<'_>> = Vec::new();
        for group in fields.chunk_by(|a, b| a.number == b.number) {
            let Some(fd) = desc.get_field(group[0].number) else {
                unknown.extend(group);
                continue;
            };
            if let Kind::Message(inner) = fd.kind() {
                if !fd.is_list() && inlined.is_some_and(|n| n.contains(&fd.number())) {
                    self.fill(&inner, &merged(group)?, out)?;
                    continue;
                }
            }
            let name = fd.json_name();
            if let Some(json) = self.at_field(name, |c| c.value(&fd, group))? {
                out.insert(name.to_string(), json);
            }
        }
        for f in unknown {
            wire::insert_unknown(out, f.number, wire::render_value(&f.value));
            let path = self.at_field(&wire::unknown_key(f.number), |c| c.path.clone());
            self.unknown_fields.push(path);
        }
        Ok(())
    }

    /// The JSON of field `number` of `desc` among `fields` (in field-number
    /// order); `None` when it is absent.
    fn field(
        &mut self,
        desc: &MessageDescriptor,
        number: u32,
        fields: &[WireField<'_>],
    ) -> Converted<Option<Value>> {
        let group = occurrences(fields, number);
        match desc.get_field(number) {
            Some(fd) if !group.is_empty() => self.value(&fd, group),
            _ => Ok(None),
        }
    }

    /// The JSON of one field from its occurrences; `None` for an empty list.
    fn value(&mut self, fd: &FieldDescriptor, group: Occurrences<'_, '_>) -> Converted<Option<Value>> {
        if fd.is_map() {
            return self.map(fd, group).map(Some);
        }
        let kind = fd.kind();
        if fd.is_list() {
            let mut items = Vec::with_capacity(group.len());
            for f in group {
                match &kind {
                    Kind::Message(inner) => {
                        let item = self.at_index(items.len(), |c| c.message(inner, bytes_of(f)?))?;
                        items.push(item);
                    }
                    _ => push_scalars(&kind, f, &mut items)?,
                }
            }
            return Ok((!items.is_empty()).then_some(Value::Array(items)));
        }
        match &kind {
            Kind::Message(inner) => self.message(inner, &merged(group)?).map(Some),
            _ => scalar(&kind, &group[group.len() - 1].value).map(Some),
        }
    }

    /// A map field: entries by their key as text, in key order; a key that
    /// repeats keeps its last entry.
    fn map(&mut self, fd: &FieldDescriptor, group: Occurrences<'_, '_>) -> Converted<Value> {
        let Kind::Message(entry) = fd.kind() else {
            return Err(Malformed(format!("map field {} has no entry type", fd.name())));
        };
        let (key_fd, value_fd) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut entries = BTreeMap::new();
        for f in group {
            let fields = wire_fields(bytes_of(f)?)?;
            let key = match occurrences(&fields, 1).last() {
                Some(k) => match scalar(&key_fd.kind(), &k.value)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
                None => map_key_default(&key_fd.kind()),
            };
            entries.insert(key, occurrences(&fields, 2).to_vec());
        }
        let mut out = Map::new();
        for (key, value) in entries {
            let json = self.at_field(&key, |c| match value.is_empty() {
                true => c.default_value(&value_fd),
                false => Ok(c.value(&value_fd, &value)?.unwrap_or(Value::Array(Vec::new()))),
            })?;
            out.insert(key, json);
        }
        Ok(Value::Object(out))
    }

    /// What a protobuf decoder fills in for a map entry without a value.
    fn default_value(&mut self, fd: &FieldDescriptor) -> Converted<Value> {
        Ok(match fd.kind() {
            Kind::Message(inner) => self.message(&inner, &[])?,
            Kind::String | Kind::Bytes => Value::String(String::new()),
            Kind::Bool => Value::Bool(false),
            Kind::Double | Kind::Float => Value::from(0.0),
            _ => Value::from(0),
        })
    }

    fn special(&mut self, kind: Special, desc: &MessageDescriptor, bytes: &[u8]) -> Converted<Value> {
        let fields = wire_fields(bytes)?;
        let get = |c: &mut Self, n: u32| c.field(desc, n, &fields);
        let int = |v: Option<Value>| v.and_then(|v| v.as_i64()).unwrap_or(0);
        Ok(match kind {
            Special::Time | Special::MicroTime => {
                let (secs, nanos) = (int(get(self, 1)?), int(get(self, 2)?) as i32);
                if secs == 0 && nanos == 0 {
                    return Ok(Value::Null);
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
            Special::Duration => Value::String(gotime::duration(int(get(self, 1)?))),
            Special::Quantity => match get(self, 1)? {
                Some(s @ Value::String(_)) => s,
                _ => Value::Null,
            },
            Special::IntOrString => match int(get(self, 1)?) {
                1 => match get(self, 3)? {
                    Some(s @ Value::String(_)) => s,
                    _ => Value::String(String::new()),
                },
                _ => Value::from(int(get(self, 2)?)),
            },
            Special::RawJson => match occurrences(&fields, 1).last() {
                Some(f) if !bytes_of(f)?.is_empty() => self.embedded_json(bytes_of(f)?),
                _ => Value::Null,
            },
            Special::SchemaOrArray | Special::SchemaOrStringArray => match get(self, 2)? {
                Some(items) => items,
                None => get(self, 1)?.unwrap_or(Value::Null),
            },
            Special::SchemaOrBool => match get(self, 2)? {
                Some(schema) => schema,
                None => Value::Bool(matches!(get(self, 1)?, Some(Value::Bool(true)))),
            },
        })
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

/// The occurrences of field `number` among `fields` (in field-number order).
fn occurrences<'a, 'b>(fields: &'b [WireField<'a>], number: u32) -> Occurrences<'a, 'b> {
    let start = fields.partition_point(|f| f.number < number);
    let end = start + fields[start..].partition_point(|f| f.number == number);
    &fields[start..end]
}

/// The text of a map key a protobuf decoder fills in when an entry has none.
fn map_key_default(kind: &Kind) -> String {
    match kind {
        Kind::Bool => "false".into(),
        Kind::String => String::new(),
        _ => "0".into(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::decode::schema::schema;

    fn pod() -> MessageDescriptor {
        schema().resolve("v1", "Pod").0
    }

    pub(in crate::decode) fn varint(mut n: usize, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push(n as u8 | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }

    /// Field `number` as a length-delimited field holding `body`.
    pub(in crate::decode) fn delimited(number: usize, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(number << 3 | 2, &mut out);
        varint(body.len(), &mut out);
        out.extend_from_slice(body);
        out
    }

    fn decode(bytes: &[u8]) -> Result<Value, ProtoError> {
        to_json(schema(), &pod(), bytes, 0).map(|j| Value::Object(j.object))
    }

    #[test]
    fn repeated_occurrences_follow_protobuf_rules() {
        let entry = |k: &str, v: &str| {
            delimited(
                7,
                &[delimited(1, k.as_bytes()), delimited(2, v.as_bytes())].concat(),
            )
        };
        // securityContext.supplementalGroups: one packed run [1, 300], then
        // one unpacked 7; securityContext appears twice and merges.
        let first = delimited(14, &delimited(4, &[0x01, 0xac, 0x02]));
        let second = delimited(14, &[0x20, 0x07, 0x10, 0x05]);
        let spec = [
            vec![0x20, 0x1e],   // terminationGracePeriodSeconds = 30
            vec![0x20, 0x3c],   // ... and again = 60: the last wins
            entry("zone", "a"), // nodeSelector entries, out of order
            entry("disk", "ssd"),
            entry("zone", "b"), // a repeated key keeps its last entry
            first,
            second,
            delimited(16, b"web-0"), // hostname
        ]
        .concat();
        let pod = decode(&[delimited(1, &delimited(1, b"web-0")), delimited(2, &spec)].concat()).unwrap();
        assert_eq!(
            pod,
            serde_json::json!({"metadata": {"name": "web-0"},
                               "spec": {"terminationGracePeriodSeconds": 60,
                                        "nodeSelector": {"disk": "ssd", "zone": "b"},
                                        "securityContext": {"runAsUser": 5, "supplementalGroups": [1, 300, 7]},
                                        "hostname": "web-0"}})
        );
        assert_eq!(
            serde_json::to_string(&pod["spec"]["nodeSelector"]).unwrap(),
            r#"{"disk":"ssd","zone":"b"}"#
        );
    }

    #[test]
    fn unknown_fields_are_kept_by_number_and_listed() {
        let bytes = [delimited(
            1,
            &[delimited(1, b"p"), vec![0xc8, 0x06, 0x2a]].concat(),
        )]
        .concat();
        let json = to_json(schema(), &pod(), &bytes, 0).unwrap();
        assert_eq!(
            Value::Object(json.object),
            serde_json::json!({"metadata": {"name": "p", "#105": 42}})
        );
        assert_eq!(json.unknown_fields, ["metadata.#105"]);
    }

    /// `levels` messages nested in field `number`, innermost first.
    fn nested(number: usize, levels: usize) -> Vec<u8> {
        (0..levels).fold(Vec::new(), |inner, _| delimited(number, &inner))
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_crash() {
        // JSONSchemaProps.not (28) holds a JSONSchemaProps: 20,000 levels.
        let props = schema()
            .pool
            .get_message_by_name("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
            .unwrap();
        let e = to_json(schema(), &props, &nested(28, 20_000), 0).err().unwrap();
        assert!(e.problem.contains("nested more than 100 deep"), "{e}");
        // Within the limit it decodes as before.
        let ok = to_json(schema(), &props, &nested(28, 50), 0).unwrap();
        assert!(ok.object.contains_key("not"));
        // An unknown field whose bytes nest 20,000 messages deep.
        let bytes = delimited(1, &nested(99, 20_000));
        let json = decode(&bytes).unwrap();
        let mut depth = 0;
        let mut at = &json["metadata"];
        while let Some(inner) = at.get("#99") {
            (at, depth) = (inner, depth + 1);
        }
        assert!(
            depth < 200 && at.is_string(),
            "rendered {depth} levels, then {at}"
        );
    }

    #[test]
    fn a_wrong_wire_type_or_bad_text_is_an_error_not_a_value() {
        let e = decode(&[0x08, 0x01]).err().unwrap();
        assert!(e.to_string().contains("invalid wire type"), "{e}");
        let e = to_json(schema(), &pod(), &delimited(1, &delimited(1, &[0xff])), 40)
            .err()
            .unwrap();
        assert_eq!(e.offset, Some(44), "{e}");
        assert!(e.problem.contains("not valid UTF-8"), "{e}");
    }
}

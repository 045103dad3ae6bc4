//! Schema-aware protobuf → Kubernetes JSON, as kube-apiserver serves it.
//!
//! The wire format is read straight into JSON, field by field, with the
//! decoding plans made once from the schema's descriptors ([`super::plan`])
//! and Kubernetes' conventions: JSON names from the schema,
//! inlined messages merged into their parent, list wrappers as bare arrays,
//! `Time`/`MicroTime`/`Duration`/`Quantity`/`IntOrString` in their string or
//! number forms, raw JSON fields embedded, bytes as base64, int64 as numbers.
//! Fields the schema does not know are kept under `#<number>` and listed.
//! Sub-messages whose bytes repeat reuse their earlier JSON ([`super::reuse`]).

use super::gotime;
use super::plan::{Card, FieldKind, FieldPlan, MapPlan, MessagePlan, PlanId, Plans, Scalar, Shape};
use super::reuse;
use super::schema::Schema;
use super::special::Special;
use super::wire::{self, Reader, WireField, WireValue};
use base64::Engine;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value};
use std::fmt::Write;
use std::ops::Range;

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
    let plans = schema.plans();
    let id = plans
        .id(desc.full_name())
        .expect("the message is in the schema's pool");
    let mut conv = Converter::new(plans);
    let mut object = Map::new();
    match conv.fill(plans.get(id), bytes, &mut object) {
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

/// The JSON of a scalar of kind `s` (`kind` as prost-reflect names it) as
/// it came off the wire.
fn scalar(s: Scalar, kind: &Kind, value: &WireValue<'_>) -> Converted<Value> {
    let float = |n: f64| serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number);
    Ok(match (s, value) {
        (Scalar::Double, WireValue::Fixed64(b)) => float(f64::from_le_bytes(*b)),
        (Scalar::Float, WireValue::Fixed32(b)) => float(f64::from(f32::from_le_bytes(*b))),
        (Scalar::Int32 | Scalar::Enum, WireValue::Varint(n)) => Value::from(*n as i32),
        (Scalar::Int64, WireValue::Varint(n)) => Value::from(*n as i64),
        (Scalar::Uint32, WireValue::Varint(n)) => Value::from(*n as u32),
        (Scalar::Uint64, WireValue::Varint(n)) => Value::from(*n),
        (Scalar::Sint32, WireValue::Varint(n)) => Value::from(((*n as u32) >> 1) as i32 ^ -((*n & 1) as i32)),
        (Scalar::Sint64, WireValue::Varint(n)) => Value::from((*n >> 1) as i64 ^ -((*n & 1) as i64)),
        (Scalar::Bool, WireValue::Varint(n)) => Value::Bool(*n != 0),
        (Scalar::Fixed32, WireValue::Fixed32(b)) => Value::from(u32::from_le_bytes(*b)),
        (Scalar::Sfixed32, WireValue::Fixed32(b)) => Value::from(i32::from_le_bytes(*b)),
        (Scalar::Fixed64, WireValue::Fixed64(b)) => Value::from(u64::from_le_bytes(*b)),
        (Scalar::Sfixed64, WireValue::Fixed64(b)) => Value::from(i64::from_le_bytes(*b)),
        (Scalar::String, WireValue::Bytes(b)) => Value::String(
            std::str::from_utf8(b)
                .map_err(|_| Malformed("a string is not valid UTF-8".into()))?
                .to_string(),
        ),
        (Scalar::Bytes, WireValue::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        _ => return Err(Malformed(format!("a {kind:?} value has the wrong wire type"))),
    })
}

/// The scalars of one occurrence of a repeated field: one, or a packed run.
fn push_scalars(s: Scalar, kind: &Kind, f: &WireField<'_>, out: &mut Vec<Value>) -> Converted<()> {
    let packed = match (s, &f.value) {
        (Scalar::String | Scalar::Bytes, _) => None,
        (_, WireValue::Bytes(run)) => Some(*run),
        _ => None,
    };
    let Some(run) = packed else {
        out.push(scalar(s, kind, &f.value)?);
        return Ok(());
    };
    let wire_type = match s {
        Scalar::Double | Scalar::Fixed64 | Scalar::Sfixed64 => 1,
        Scalar::Float | Scalar::Fixed32 | Scalar::Sfixed32 => 5,
        _ => 0,
    };
    let mut r = Reader::new(run, 0);
    while let Some(element) = r.next_packed(wire_type).map_err(|e| Malformed(e.problem))? {
        out.push(scalar(s, kind, &element)?);
    }
    Ok(())
}

/// Positions in [`Converter::scratch`]: the fields of one message, or the
/// occurrences of one field number.
type Span = Range<usize>;

struct Converter<'s, 'b> {
    plans: &'s Plans,
    /// Messages entered; conversion stops past [`wire::MAX_DEPTH`].
    depth: usize,
    /// Path of the value being converted (`spec.containers[0]`), kept in
    /// one buffer: it is only read to name unknown fields and warnings.
    path: String,
    unknown_fields: Vec<String>,
    warnings: Vec<String>,
    /// The deepest `depth` a message was entered at (see [`reuse`]).
    deepest: usize,
    /// The wire fields of the messages being converted, outermost first:
    /// each message reads its fields onto the end and drops them when done,
    /// so one buffer serves the whole object.
    scratch: Vec<WireField<'b>>,
}

impl<'s, 'b> Converter<'s, 'b> {
    fn new(plans: &'s Plans) -> Self {
        Converter {
            plans,
            depth: 0,
            path: String::new(),
            unknown_fields: Vec::new(),
            warnings: Vec::new(),
            deepest: 0,
            scratch: Vec::new(),
        }
    }

    /// Runs `f` on bytes that live shorter than the object's (merged
    /// occurrences), with a converter of their own sharing this one's state.
    fn detached<'x, T>(
        &mut self,
        bytes: &'x [u8],
        f: impl FnOnce(&mut Converter<'s, 'x>, &'x [u8]) -> T,
    ) -> T {
        let mut c = Converter {
            plans: self.plans,
            depth: self.depth,
            path: std::mem::take(&mut self.path),
            unknown_fields: std::mem::take(&mut self.unknown_fields),
            warnings: std::mem::take(&mut self.warnings),
            deepest: self.deepest,
            scratch: Vec::new(),
        };
        let out = f(&mut c, bytes);
        (self.path, self.unknown_fields, self.warnings) = (c.path, c.unknown_fields, c.warnings);
        self.deepest = c.deepest;
        out
    }

    /// Reads the fields of `bytes` onto the scratch buffer in field-number
    /// order, occurrences of a number in wire order (the order a protobuf
    /// decoder would apply them).
    fn read(&mut self, bytes: &'b [u8]) -> Converted<Span> {
        let start = self.scratch.len();
        let mut r = Reader::new(bytes, 0);
        let (mut sorted, mut last) = (true, 0);
        while let Some(f) = r.next_field().map_err(|e| Malformed(e.problem))? {
            sorted &= f.number >= last;
            last = f.number;
            self.scratch.push(f);
        }
        if !sorted {
            self.scratch[start..].sort_by_key(|f| f.number);
        }
        Ok(start..self.scratch.len())
    }

    /// The occurrences of the number at `at`, which starts them, within `fields`.
    fn group_at(&self, at: usize, fields: &Span) -> Span {
        let number = self.scratch[at].number;
        let len = self.scratch[at + 1..fields.end]
            .iter()
            .take_while(|f| f.number == number)
            .count();
        at..at + 1 + len
    }

    /// How many field numbers occur among `fields`.
    fn numbers(&self, fields: &Span) -> usize {
        let all = &self.scratch[fields.clone()];
        all.windows(2).filter(|w| w[0].number != w[1].number).count() + usize::from(!all.is_empty())
    }

    /// The occurrences of field `number` among `fields`.
    fn occurrences(&self, fields: &Span, number: u32) -> Span {
        let all = &self.scratch[fields.clone()];
        let start = all.partition_point(|f| f.number < number);
        let end = start + all[start..].partition_point(|f| f.number == number);
        fields.start + start..fields.start + end
    }

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

    fn message(&mut self, id: PlanId, bytes: &'b [u8]) -> Converted<Value> {
        if self.depth >= wire::MAX_DEPTH {
            return Err(Malformed(format!(
                "messages nested more than {} deep",
                wire::MAX_DEPTH
            )));
        }
        self.deepest = self.deepest.max(self.depth);
        // Paths are never empty below the top, which keeps the suffixes of
        // a reused decode's paths the same wherever it is reused.
        if bytes.len() >= reuse::MIN_BYTES
            && !self.path.is_empty()
            && reuse::enabled()
            && reuse::pays(self.owner(), id)
        {
            return self.reused_message(id, bytes);
        }
        self.depth += 1;
        let value = self.message_within(id, bytes);
        self.depth -= 1;
        value
    }

    /// What tells this schema's plans apart from another's in the cache.
    fn owner(&self) -> usize {
        self.plans as *const Plans as usize
    }

    /// [`Self::message`] through the cache of sub-message decodes.
    fn reused_message(&mut self, id: PlanId, bytes: &'b [u8]) -> Converted<Value> {
        let key = reuse::Key::new(self.owner(), id, bytes);
        let lookup = reuse::lookup(
            &key,
            self.depth,
            &self.path,
            &mut self.unknown_fields,
            &mut self.warnings,
        );
        let store = match lookup {
            reuse::Lookup::Hit(value, nesting) => {
                self.deepest = self.deepest.max(self.depth + nesting);
                return Ok(value);
            }
            reuse::Lookup::Miss { store } => store,
        };
        let (unknown_at, warnings_at) = (self.unknown_fields.len(), self.warnings.len());
        let deepest = std::mem::replace(&mut self.deepest, self.depth);
        let started = store.then(std::time::Instant::now);
        self.depth += 1;
        let value = self.message_within(id, bytes);
        self.depth -= 1;
        let took = started.map(|s| s.elapsed()).unwrap_or_default();
        let nesting = self.deepest - self.depth;
        self.deepest = self.deepest.max(deepest);
        if let (Ok(value), true) = (&value, store) {
            let relative = |all: &[String]| -> Option<Vec<String>> {
                all.iter()
                    .map(|s| s.strip_prefix(self.path.as_str()).map(str::to_string))
                    .collect()
            };
            let unknown_fields = relative(&self.unknown_fields[unknown_at..]);
            let warnings = relative(&self.warnings[warnings_at..]);
            if let (Some(unknown_fields), Some(warnings)) = (unknown_fields, warnings) {
                let decode = reuse::Decode {
                    value,
                    unknown_fields,
                    warnings,
                    nesting,
                    took,
                };
                reuse::store(key, decode);
            }
        }
        value
    }

    /// A singular message field from its occurrences, merged.
    fn merged_message(&mut self, id: PlanId, group: Span) -> Converted<Value> {
        if group.len() == 1 {
            let bytes = bytes_of(&self.scratch[group.start])?;
            return self.message(id, bytes);
        }
        let all = self.concatenated(group)?;
        self.detached(&all, |c, bytes| c.message(id, bytes))
    }

    /// The bytes of every occurrence in `group`, one after another.
    fn concatenated(&self, group: Span) -> Converted<Vec<u8>> {
        let mut all = Vec::new();
        for f in &self.scratch[group] {
            all.extend_from_slice(bytes_of(f)?);
        }
        Ok(all)
    }

    fn message_within(&mut self, id: PlanId, bytes: &'b [u8]) -> Converted<Value> {
        let plan = self.plans.get(id);
        match plan.shape {
            Shape::Special(kind) => {
                let fields = self.read(bytes)?;
                let value = self.special(kind, plan, &fields);
                self.scratch.truncate(fields.start);
                value
            }
            Shape::ListWrapper => {
                let fields = self.read(bytes)?;
                let items = self.field(plan, 1, &fields)?;
                self.scratch.truncate(fields.start);
                Ok(items.unwrap_or(Value::Array(Vec::new())))
            }
            Shape::Object => {
                let fields = self.read(bytes)?;
                let mut out = Map::with_capacity(self.numbers(&fields));
                self.fill_fields(plan, fields, &mut out)?;
                Ok(Value::Object(out))
            }
        }
    }

    /// Writes the fields of `bytes`, a `plan`, into `out` (inlined messages
    /// into the same map), then the fields the schema does not know.
    fn fill(
        &mut self,
        plan: &'s MessagePlan,
        bytes: &'b [u8],
        out: &mut Map<String, Value>,
    ) -> Converted<()> {
        let fields = self.read(bytes)?;
        self.fill_fields(plan, fields, out)
    }

    /// [`Self::fill`] with the fields read, which it drops from the scratch
    /// buffer.
    fn fill_fields(
        &mut self,
        plan: &'s MessagePlan,
        fields: Span,
        out: &mut Map<String, Value>,
    ) -> Converted<()> {
        let mut unknown = false;
        let mut at = fields.start;
        while at < fields.end {
            let group = self.group_at(at, &fields);
            at = group.end;
            let Some(fp) = plan.field(self.scratch[group.start].number) else {
                unknown = true;
                continue;
            };
            if let (true, FieldKind::Message(inner)) = (fp.inline, &fp.kind) {
                let inner = self.plans.get(*inner);
                if group.len() == 1 {
                    let bytes = bytes_of(&self.scratch[group.start])?;
                    self.fill(inner, bytes, out)?;
                } else {
                    let all = self.concatenated(group)?;
                    self.detached(&all, |c, bytes| c.fill(inner, bytes, out))?;
                }
                continue;
            }
            let name = fp.json_name.as_str();
            if let Some(json) = self.at_field(name, |c| c.value(fp, group))? {
                out.insert(name.to_string(), json);
            }
        }
        if unknown {
            for i in fields.clone() {
                let f = self.scratch[i];
                if plan.field(f.number).is_some() {
                    continue;
                }
                wire::insert_unknown(out, f.number, wire::render_value(&f.value));
                let path = self.at_field(&wire::unknown_key(f.number), |c| c.path.clone());
                self.unknown_fields.push(path);
            }
        }
        self.scratch.truncate(fields.start);
        Ok(())
    }

    /// The JSON of field `number` of `plan` among `fields`; `None` when it
    /// is absent.
    fn field(&mut self, plan: &MessagePlan, number: u32, fields: &Span) -> Converted<Option<Value>> {
        let group = self.occurrences(fields, number);
        match plan.field(number) {
            Some(fp) if !group.is_empty() => self.value(fp, group),
            _ => Ok(None),
        }
    }

    /// The JSON of one field from its occurrences; `None` for an empty list.
    fn value(&mut self, fp: &FieldPlan, group: Span) -> Converted<Option<Value>> {
        match (&fp.card, &fp.kind) {
            (Card::Map(map), _) => self.map(map, group).map(Some),
            (Card::List, kind) => {
                let mut items = Vec::with_capacity(group.len());
                for i in group {
                    let f = self.scratch[i];
                    match kind {
                        FieldKind::Message(inner) => {
                            let item = self.at_index(items.len(), |c| c.message(*inner, bytes_of(&f)?))?;
                            items.push(item);
                        }
                        FieldKind::Scalar(s) => push_scalars(*s, &fp.reflect_kind, &f, &mut items)?,
                    }
                }
                Ok((!items.is_empty()).then_some(Value::Array(items)))
            }
            (_, FieldKind::Message(inner)) => self.merged_message(*inner, group).map(Some),
            (_, FieldKind::Scalar(s)) => {
                scalar(*s, &fp.reflect_kind, &self.scratch[group.end - 1].value).map(Some)
            }
        }
    }

    /// A map field: entries by their key as text, in key order; a key that
    /// repeats keeps its last entry.
    fn map(&mut self, map: &MapPlan, group: Span) -> Converted<Value> {
        let mark = self.scratch.len();
        let mut entries: Vec<(String, Span)> = Vec::with_capacity(group.len());
        for i in group {
            let f = self.scratch[i];
            let fields = self.read(bytes_of(&f)?)?;
            let keys = self.occurrences(&fields, 1);
            let key = match keys.clone().last() {
                Some(k) => match scalar(map.key, &map.key_kind, &self.scratch[k].value)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
                None => map_key_default(map.key),
            };
            entries.push((key, self.occurrences(&fields, 2)));
        }
        // In key order (stable, so a repeated key's entries stay in wire
        // order), then only the last entry of each key.
        if !entries.is_sorted_by(|a, b| a.0 < b.0) {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut kept: Vec<(String, Span)> = Vec::with_capacity(entries.len());
            for entry in entries {
                match kept.last_mut() {
                    Some(last) if last.0 == entry.0 => *last = entry,
                    _ => kept.push(entry),
                }
            }
            entries = kept;
        }
        let mut out = Map::with_capacity(entries.len());
        for (key, value) in entries {
            let json = self.at_field(&key, |c| match value.is_empty() {
                true => c.default_value(&map.value),
                false => Ok(c.value(&map.value, value)?.unwrap_or(Value::Array(Vec::new()))),
            })?;
            out.insert(key, json);
        }
        self.scratch.truncate(mark);
        Ok(Value::Object(out))
    }

    /// What a protobuf decoder fills in for a map entry without a value.
    fn default_value(&mut self, fp: &FieldPlan) -> Converted<Value> {
        Ok(match fp.kind {
            FieldKind::Message(inner) => self.message(inner, &[])?,
            FieldKind::Scalar(Scalar::String | Scalar::Bytes) => Value::String(String::new()),
            FieldKind::Scalar(Scalar::Bool) => Value::Bool(false),
            FieldKind::Scalar(Scalar::Double | Scalar::Float) => Value::from(0.0),
            FieldKind::Scalar(_) => Value::from(0),
        })
    }

    fn special(&mut self, kind: Special, plan: &MessagePlan, fields: &Span) -> Converted<Value> {
        let get = |c: &mut Self, n: u32| c.field(plan, n, fields);
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
            Special::RawJson => match self.occurrences(fields, 1).last() {
                Some(i) if !bytes_of(&self.scratch[i])?.is_empty() => {
                    let bytes = bytes_of(&self.scratch[i])?;
                    self.embedded_json(bytes)
                }
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

/// The text of a map key a protobuf decoder fills in when an entry has none.
fn map_key_default(kind: Scalar) -> String {
    match kind {
        Scalar::Bool => "false".into(),
        Scalar::String => String::new(),
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

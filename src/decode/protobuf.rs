//! Schema-aware protobuf → Kubernetes JSON, as kube-apiserver serves it.
//!
//! The wire format is read straight into JSON events pushed into a
//! [`JsonSink`], field by field, with the decoding plans made once from the
//! schema's descriptors ([`super::plan`]) and Kubernetes' conventions: JSON
//! names from the schema, inlined messages merged into their parent, list
//! wrappers as bare arrays, `Time`/`MicroTime`/`Duration`/`Quantity`/
//! `IntOrString` in their string or number forms, raw JSON fields embedded,
//! bytes as base64, int64 as numbers. Fields the schema does not know are
//! kept under `#<number>` and listed.
//!
//! Each message's fields are read first (into one scratch buffer), so its
//! members can be sent in the order the sink asks for: as the JSON object
//! holds them, or sorted by key, which a canonical writer needs.

use super::gotime;
use super::plan::{Card, FieldKind, FieldPlan, MapPlan, MessagePlan, PlanId, Plans, Scalar, Shape};
use super::schema::Schema;
use super::special::Special;
use super::wire::{self, Reader, WireField, WireValue};
use crate::json_sink::{JsonSink, Order};
use base64::Engine;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
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

/// What the schema did not cover in an object sent by [`stream`].
#[derive(Default)]
pub struct Report {
    /// Paths of fields kept by number (`spec.#99`).
    pub unknown_fields: Vec<String>,
    /// Values that could not take their usual JSON form.
    pub warnings: Vec<String>,
}

/// Sends `bytes` (which start at `base` within the stored value), decoded
/// as `desc`, into `sink` as one object whose first members are
/// `envelope` (the apiVersion and kind the envelope names).
pub fn stream<S: JsonSink>(
    schema: &Schema,
    desc: &MessageDescriptor,
    bytes: &[u8],
    base: usize,
    envelope: &[(&'static str, &str)],
    sink: &mut S,
) -> Result<Report, ProtoError> {
    let plans = schema.plans();
    let id = plans
        .id(desc.full_name())
        .expect("the message is in the schema's pool");
    let mut conv = Converter::new(plans, sink);
    let sent = conv
        .read(bytes)
        .and_then(|fields| conv.object(plans.get(id), fields, envelope));
    match sent {
        Ok(()) => Ok(Report {
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
pub fn by_number(bytes: &[u8]) -> Option<(Map<String, Value>, Vec<String>)> {
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
    Some((object, unknown_fields))
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

/// A scalar as it becomes JSON, borrowing the wire's text.
#[derive(Clone, PartialEq)]
enum Plain<'b> {
    Null,
    Bool(bool),
    Number(Number),
    Str(&'b str),
    /// Text made from the bytes (base64).
    Text(String),
}

impl<'b> Plain<'b> {
    fn send<S: JsonSink>(self, sink: &mut S) {
        match self {
            Plain::Null => sink.null(),
            Plain::Bool(b) => sink.bool(b),
            Plain::Number(n) => sink.number(n),
            Plain::Str(s) => sink.str(s),
            Plain::Text(s) => sink.str(&s),
        }
    }

    /// What `Value::as_i64` gives for its JSON.
    fn as_i64(&self) -> Option<i64> {
        match self {
            Plain::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Plain::Str(s) => Some(s),
            Plain::Text(s) => Some(s),
            _ => None,
        }
    }

    /// A map key's text: a string as it is, anything else as its JSON.
    fn into_key(self) -> Cow<'b, str> {
        match self {
            Plain::Str(s) => Cow::Borrowed(s),
            Plain::Text(s) => Cow::Owned(s),
            Plain::Null => Cow::Borrowed("null"),
            Plain::Bool(b) => Cow::Borrowed(if b { "true" } else { "false" }),
            Plain::Number(n) => Cow::Owned(n.to_string()),
        }
    }
}

/// The JSON of a scalar of kind `s` (`kind` as prost-reflect names it) as
/// it came off the wire.
fn scalar<'b>(s: Scalar, kind: &Kind, value: &WireValue<'b>) -> Converted<Plain<'b>> {
    let float = |n: f64| Number::from_f64(n).map_or(Plain::Null, Plain::Number);
    let int = |n: i64| Plain::Number(n.into());
    Ok(match (s, value) {
        (Scalar::Double, WireValue::Fixed64(b)) => float(f64::from_le_bytes(*b)),
        (Scalar::Float, WireValue::Fixed32(b)) => float(f64::from(f32::from_le_bytes(*b))),
        (Scalar::Int32 | Scalar::Enum, WireValue::Varint(n)) => int(i64::from(*n as i32)),
        (Scalar::Int64, WireValue::Varint(n)) => int(*n as i64),
        (Scalar::Uint32, WireValue::Varint(n)) => int(i64::from(*n as u32)),
        (Scalar::Uint64, WireValue::Varint(n)) => Plain::Number((*n).into()),
        (Scalar::Sint32, WireValue::Varint(n)) => {
            int(i64::from(((*n as u32) >> 1) as i32 ^ -((*n & 1) as i32)))
        }
        (Scalar::Sint64, WireValue::Varint(n)) => int((*n >> 1) as i64 ^ -((*n & 1) as i64)),
        (Scalar::Bool, WireValue::Varint(n)) => Plain::Bool(*n != 0),
        (Scalar::Fixed32, WireValue::Fixed32(b)) => int(i64::from(u32::from_le_bytes(*b))),
        (Scalar::Sfixed32, WireValue::Fixed32(b)) => int(i64::from(i32::from_le_bytes(*b))),
        (Scalar::Fixed64, WireValue::Fixed64(b)) => Plain::Number(u64::from_le_bytes(*b).into()),
        (Scalar::Sfixed64, WireValue::Fixed64(b)) => int(i64::from_le_bytes(*b)),
        (Scalar::String, WireValue::Bytes(b)) => {
            Plain::Str(std::str::from_utf8(b).map_err(|_| Malformed("a string is not valid UTF-8".into()))?)
        }
        (Scalar::Bytes, WireValue::Bytes(b)) => {
            Plain::Text(base64::engine::general_purpose::STANDARD.encode(b))
        }
        _ => return Err(Malformed(format!("a {kind:?} value has the wrong wire type"))),
    })
}

/// Whether an occurrence of a repeated scalar of kind `s` is a packed run.
fn packed<'b>(s: Scalar, value: &WireValue<'b>) -> Option<&'b [u8]> {
    match (s, value) {
        (Scalar::String | Scalar::Bytes, _) => None,
        (_, WireValue::Bytes(run)) => Some(run),
        _ => None,
    }
}

/// Top-level messages shorter than this are not offered to the sink's
/// [`JsonSink::recall`]: decoding them costs about what looking them up does.
const RECALLED: usize = 256;

/// Positions in [`Converter::scratch`]: the fields of one message, or the
/// occurrences of one field number.
type Span = Range<usize>;

/// A member of the object being sent: its key and where its value is.
#[derive(Clone, Copy)]
struct Member<'s, 'b> {
    key: Key<'s>,
    src: Src<'s, 'b>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key<'s> {
    Name(&'s str),
    /// `#<number>`, a field the schema does not know.
    Unknown(u32),
}

impl Key<'_> {
    fn text(&self) -> Cow<'_, str> {
        match self {
            Key::Name(n) => Cow::Borrowed(n),
            Key::Unknown(n) => Cow::Owned(wire::unknown_key(*n)),
        }
    }
}

#[derive(Clone, Copy)]
enum Src<'s, 'b> {
    /// Text from the envelope.
    Text(&'b str),
    /// A field the schema knows: its occurrences.
    Field(&'s FieldPlan, usize, usize),
    /// Every occurrence of an unknown field number in the object.
    Unknown(u32),
    /// Where the tree of an object listed the unknown fields of one of its
    /// messages: those in this range of [`Converter::unknowns`]. Not a
    /// member; keyed `""` so that sorting puts it first.
    Listed(usize, usize),
    /// A member whose key comes again later: the later value is kept.
    Replaced,
}

struct Converter<'s, 'b, 'k, S: JsonSink> {
    plans: &'s Plans,
    sink: &'k mut S,
    /// Messages entered; conversion stops past [`wire::MAX_DEPTH`].
    depth: usize,
    /// Path of the value being converted (`spec.containers[0]`), kept in
    /// one buffer: it is only read to name unknown fields and warnings.
    path: String,
    unknown_fields: Vec<String>,
    warnings: Vec<String>,
    /// The wire fields of the messages being converted, outermost first:
    /// each message reads its fields onto the end and drops them when done,
    /// so one buffer serves the whole object.
    scratch: Vec<WireField<'b>>,
    /// The members of the objects being sent, outermost first.
    members: Vec<Member<'s, 'b>>,
    /// The unknown fields of the objects being sent: number and index in
    /// `scratch`, in the order the object lists them.
    unknowns: Vec<(u32, usize)>,
}

impl<'s, 'b, 'k, S: JsonSink> Converter<'s, 'b, 'k, S> {
    fn new(plans: &'s Plans, sink: &'k mut S) -> Self {
        Converter {
            plans,
            sink,
            depth: 0,
            path: String::new(),
            unknown_fields: Vec::new(),
            warnings: Vec::new(),
            scratch: Vec::new(),
            members: Vec::new(),
            unknowns: Vec::new(),
        }
    }

    /// Runs `f` on bytes that live shorter than the object's (merged
    /// occurrences), with a converter of their own sharing this one's state.
    fn detached<'x, T>(
        &mut self,
        bytes: &'x [u8],
        f: impl FnOnce(&mut Converter<'s, 'x, '_, S>, &'x [u8]) -> T,
    ) -> T {
        let mut c = Converter {
            plans: self.plans,
            sink: &mut *self.sink,
            depth: self.depth,
            path: std::mem::take(&mut self.path),
            unknown_fields: std::mem::take(&mut self.unknown_fields),
            warnings: std::mem::take(&mut self.warnings),
            scratch: Vec::new(),
            members: Vec::new(),
            unknowns: Vec::new(),
        };
        let out = f(&mut c, bytes);
        (self.path, self.unknown_fields, self.warnings) = (c.path, c.unknown_fields, c.warnings);
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

    /// The occurrences of field `number` among `fields`.
    fn occurrences(&self, fields: &Span, number: u32) -> Span {
        let all = &self.scratch[fields.clone()];
        let start = all.partition_point(|f| f.number < number);
        let end = start + all[start..].partition_point(|f| f.number == number);
        fields.start + start..fields.start + end
    }

    /// Field `number` of `plan` among `fields`, when it gives a value (a
    /// list of no items gives none).
    fn present(&self, plan: &'s MessagePlan, number: u32, fields: &Span) -> Option<(&'s FieldPlan, Span)> {
        let group = self.occurrences(fields, number);
        let fp = plan.field(number)?;
        (!group.is_empty() && !self.no_items(fp, &group)).then_some((fp, group))
    }

    /// Whether a list field's occurrences hold no item: every one an empty
    /// packed run.
    fn no_items(&self, fp: &FieldPlan, group: &Span) -> bool {
        let (Card::List, FieldKind::Scalar(s)) = (&fp.card, &fp.kind) else {
            return false;
        };
        self.scratch[group.clone()]
            .iter()
            .all(|f| packed(*s, &f.value).is_some_and(<[u8]>::is_empty))
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

    fn message(&mut self, id: PlanId, bytes: &'b [u8]) -> Converted<()> {
        if self.depth >= wire::MAX_DEPTH {
            return Err(Malformed(format!(
                "messages nested more than {} deep",
                wire::MAX_DEPTH
            )));
        }
        self.depth += 1;
        let plan = self.plans.get(id);
        let sent = self.read(bytes).and_then(|fields| {
            let start = fields.start;
            let sent = match plan.shape {
                Shape::Special(kind) => self.special(kind, plan, &fields),
                Shape::ListWrapper => match self.present(plan, 1, &fields) {
                    Some((fp, group)) => self.value(fp, group),
                    None => {
                        self.sink.begin_array();
                        self.sink.end_array();
                        Ok(())
                    }
                },
                Shape::Object => self.object(plan, fields, &[]),
            };
            self.scratch.truncate(start);
            sent
        });
        self.depth -= 1;
        sent
    }

    /// A singular message field from its occurrences, merged.
    fn merged_message(&mut self, id: PlanId, group: Span) -> Converted<()> {
        if group.len() == 1 {
            let bytes = bytes_of(&self.scratch[group.start])?;
            return self.message(id, bytes);
        }
        let mut all = Vec::new();
        for f in &self.scratch[group] {
            all.extend_from_slice(bytes_of(f)?);
        }
        self.detached(&all, |c, bytes| c.message(id, bytes))
    }

    /// Sends the object of `fields`, a `plan`, with `envelope` first: its
    /// members (inlined messages' in their place, then its unknown fields)
    /// in the order the sink asks for.
    fn object(
        &mut self,
        plan: &'s MessagePlan,
        fields: Span,
        envelope: &[(&'static str, &'b str)],
    ) -> Converted<()> {
        let (first, unknowns, mark) = (self.members.len(), self.unknowns.len(), self.scratch.len());
        self.members.extend(envelope.iter().map(|(k, v)| Member {
            key: Key::Name(k),
            src: Src::Text(v),
        }));
        if !self.collect(plan, fields.clone(), unknowns)? {
            // An inlined message came in several occurrences: merged into
            // one, the object is read again.
            self.members.truncate(first);
            self.unknowns.truncate(unknowns);
            let fields = self.scratch[fields].to_vec();
            self.scratch.truncate(mark);
            let mut merged = Vec::new();
            normalize(self.plans, plan, &fields, &mut merged, 0)?;
            return self.detached(&merged, |c, bytes| {
                let fields = c.read(bytes)?;
                c.object(plan, fields, envelope)
            });
        }
        let order = self.sink.order();
        let members = first..self.members.len();
        match order {
            Order::Sorted => self.members[members.clone()].sort_by(|a, b| a.key.text().cmp(&b.key.text())),
            Order::Stored if plan.clashes || !envelope.is_empty() => self.keep_last(members.clone()),
            Order::Stored => {}
        }
        self.sink.begin_object();
        for i in members.clone() {
            let m = self.members[i];
            let key = match m.src {
                Src::Listed(from, to) => {
                    for at in from..to {
                        let number = self.unknowns[at].0;
                        let path = self.at_field(&wire::unknown_key(number), |c| c.path.clone());
                        self.unknown_fields.push(path);
                    }
                    continue;
                }
                Src::Replaced => continue,
                // Sorted, a key that comes again keeps its last value.
                _ if order == Order::Sorted
                    && self
                        .members
                        .get(i + 1)
                        .is_some_and(|n| i + 1 < members.end && n.key == m.key) =>
                {
                    continue
                }
                _ => m.key,
            };
            let key = key.text();
            self.sink.key(&key);
            match m.src {
                Src::Text(t) => self.sink.str(t),
                Src::Field(fp, start, end) => {
                    // A top-level field holding one message of some size
                    // (a spec, a status) repeats across revisions.
                    let repeats = match (&fp.card, &fp.kind) {
                        (Card::Single, FieldKind::Message(id))
                            if !envelope.is_empty() && end - start == 1 =>
                        {
                            let schema = self.plans as *const Plans as usize;
                            Some(((schema, *id), bytes_of(&self.scratch[start])?))
                                .filter(|(_, b)| b.len() >= RECALLED)
                        }
                        _ => None,
                    };
                    if let Some((id, bytes)) = repeats {
                        if self.sink.recall(id, bytes) {
                            continue;
                        }
                    }
                    let reported = self.unknown_fields.len() + self.warnings.len();
                    self.at_field(&key, |c| c.value(fp, start..end))?;
                    if let Some((id, bytes)) = repeats {
                        let clean = self.unknown_fields.len() + self.warnings.len() == reported;
                        self.sink.remember(id, bytes, clean);
                    }
                }
                Src::Unknown(number) => {
                    let mut values: Vec<Value> = self.unknowns[unknowns..]
                        .iter()
                        .filter(|(n, _)| *n == number)
                        .map(|(_, at)| wire::render_value(&self.scratch[*at].value))
                        .collect();
                    self.sink.tree(match values.len() {
                        1 => values.pop().expect("one value"),
                        _ => Value::Array(values),
                    });
                }
                Src::Listed(..) | Src::Replaced => {}
            }
        }
        self.sink.end_object();
        self.members.truncate(first);
        self.unknowns.truncate(unknowns);
        self.scratch.truncate(mark);
        Ok(())
    }

    /// Lists the members of `fields`, a `plan`, as the tree of its object
    /// holds them: known fields in field-number order with the members of
    /// inlined messages in their place, then its unknown fields (a number
    /// seen before in the object joins that member). `false` when an
    /// inlined message comes in more than one occurrence.
    fn collect(&mut self, plan: &'s MessagePlan, fields: Span, unknowns: usize) -> Converted<bool> {
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
                if group.len() > 1 {
                    return Ok(false);
                }
                let inner = self.plans.get(*inner);
                let inner_fields = self.read(bytes_of(&self.scratch[group.start])?)?;
                if !self.collect(inner, inner_fields, unknowns)? {
                    return Ok(false);
                }
                continue;
            }
            if self.no_items(fp, &group) {
                continue;
            }
            self.members.push(Member {
                key: Key::Name(&fp.json_name),
                src: Src::Field(fp, group.start, group.end),
            });
        }
        if unknown {
            let from = self.unknowns.len();
            for i in fields {
                let number = self.scratch[i].number;
                if plan.field(number).is_some() {
                    continue;
                }
                if !self.unknowns[unknowns..].iter().any(|(n, _)| *n == number) {
                    self.members.push(Member {
                        key: Key::Unknown(number),
                        src: Src::Unknown(number),
                    });
                }
                self.unknowns.push((number, i));
            }
            self.members.push(Member {
                key: Key::Name(""),
                src: Src::Listed(from, self.unknowns.len()),
            });
        }
        Ok(true)
    }

    /// A key that comes again keeps the first one's place with the last
    /// one's value, as a JSON object keeps it.
    fn keep_last(&mut self, members: Span) {
        for i in members.clone() {
            if matches!(self.members[i].src, Src::Listed(..) | Src::Replaced) {
                continue;
            }
            let key = self.members[i].key;
            let last = (i + 1..members.end)
                .rev()
                .find(|&j| self.members[j].key == key && !matches!(self.members[j].src, Src::Listed(..)));
            if let Some(j) = last {
                self.members[i].src = self.members[j].src;
                for k in i + 1..=j {
                    if self.members[k].key == key && !matches!(self.members[k].src, Src::Listed(..)) {
                        self.members[k].src = Src::Replaced;
                    }
                }
            }
        }
    }

    /// Sends one field from its occurrences.
    fn value(&mut self, fp: &FieldPlan, group: Span) -> Converted<()> {
        match (&fp.card, &fp.kind) {
            (Card::Map(map), _) => self.map(map, group),
            (Card::List, kind) => {
                self.sink.begin_array();
                let mut items = 0;
                for i in group {
                    let f = self.scratch[i];
                    match kind {
                        FieldKind::Message(inner) => {
                            self.at_index(items, |c| c.message(*inner, bytes_of(&f)?))?;
                            items += 1;
                        }
                        FieldKind::Scalar(s) => items += self.scalars(*s, &fp.reflect_kind, &f)?,
                    }
                }
                self.sink.end_array();
                Ok(())
            }
            (_, FieldKind::Message(inner)) => self.merged_message(*inner, group),
            (_, FieldKind::Scalar(s)) => {
                scalar(*s, &fp.reflect_kind, &self.scratch[group.end - 1].value)?.send(self.sink);
                Ok(())
            }
        }
    }

    /// Sends the scalars of one occurrence of a repeated field: one, or a
    /// packed run; how many.
    fn scalars(&mut self, s: Scalar, kind: &Kind, f: &WireField<'b>) -> Converted<usize> {
        let Some(run) = packed(s, &f.value) else {
            scalar(s, kind, &f.value)?.send(self.sink);
            return Ok(1);
        };
        let wire_type = match s {
            Scalar::Double | Scalar::Fixed64 | Scalar::Sfixed64 => 1,
            Scalar::Float | Scalar::Fixed32 | Scalar::Sfixed32 => 5,
            _ => 0,
        };
        let mut r = Reader::new(run, 0);
        let mut n = 0;
        while let Some(element) = r.next_packed(wire_type).map_err(|e| Malformed(e.problem))? {
            scalar(s, kind, &element)?.send(self.sink);
            n += 1;
        }
        Ok(n)
    }

    /// A map field: entries by their key as text, in key order; a key that
    /// repeats keeps its last entry.
    fn map(&mut self, map: &MapPlan, group: Span) -> Converted<()> {
        let mark = self.scratch.len();
        let mut entries: Vec<(Cow<'b, str>, Span)> = Vec::with_capacity(group.len());
        for i in group {
            let f = self.scratch[i];
            let fields = self.read(bytes_of(&f)?)?;
            let keys = self.occurrences(&fields, 1);
            let key = match keys.clone().last() {
                Some(k) => scalar(map.key, &map.key_kind, &self.scratch[k].value)?.into_key(),
                None => Cow::Borrowed(map_key_default(map.key)),
            };
            entries.push((key, self.occurrences(&fields, 2)));
        }
        // In key order (stable, so a repeated key's entries stay in wire
        // order), then only the last entry of each key.
        if !entries.is_sorted_by(|a, b| a.0 < b.0) {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut kept: Vec<(Cow<'b, str>, Span)> = Vec::with_capacity(entries.len());
            for entry in entries {
                match kept.last_mut() {
                    Some(last) if last.0 == entry.0 => *last = entry,
                    _ => kept.push(entry),
                }
            }
            entries = kept;
        }
        self.sink.begin_object();
        for (key, value) in entries {
            self.sink.key(&key);
            self.at_field(&key, |c| {
                if value.is_empty() {
                    c.default_value(&map.value)
                } else if c.no_items(&map.value, &value) {
                    c.sink.begin_array();
                    c.sink.end_array();
                    Ok(())
                } else {
                    c.value(&map.value, value)
                }
            })?;
        }
        self.sink.end_object();
        self.scratch.truncate(mark);
        Ok(())
    }

    /// What a protobuf decoder fills in for a map entry without a value.
    fn default_value(&mut self, fp: &FieldPlan) -> Converted<()> {
        match fp.kind {
            FieldKind::Message(inner) => return self.message(inner, &[]),
            FieldKind::Scalar(Scalar::String | Scalar::Bytes) => self.sink.str(""),
            FieldKind::Scalar(Scalar::Bool) => self.sink.bool(false),
            FieldKind::Scalar(Scalar::Double | Scalar::Float) => {
                self.sink.number(Number::from_f64(0.0).expect("0 is finite"))
            }
            FieldKind::Scalar(_) => self.sink.number(0.into()),
        }
        Ok(())
    }

    /// The last occurrence of scalar field `number` of `plan` among
    /// `fields`; `None` when it is absent or not a single scalar.
    fn last_scalar(&self, plan: &MessagePlan, number: u32, fields: &Span) -> Converted<Option<Plain<'b>>> {
        let group = self.occurrences(fields, number);
        match plan.field(number) {
            Some(fp) if !group.is_empty() => match (&fp.card, &fp.kind) {
                (Card::Single, FieldKind::Scalar(s)) => {
                    scalar(*s, &fp.reflect_kind, &self.scratch[group.end - 1].value).map(Some)
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn special(&mut self, kind: Special, plan: &'s MessagePlan, fields: &Span) -> Converted<()> {
        let int = |c: &Self, n: u32| -> Converted<i64> {
            Ok(c.last_scalar(plan, n, fields)?
                .and_then(|v| v.as_i64())
                .unwrap_or(0))
        };
        match kind {
            Special::Time | Special::MicroTime => {
                let (secs, nanos) = (int(self, 1)?, int(self, 2)? as i32);
                if secs == 0 && nanos == 0 {
                    self.sink.null();
                    return Ok(());
                }
                let text = match kind {
                    Special::Time => gotime::time(secs, nanos),
                    _ => gotime::micro_time(secs, nanos),
                };
                match text {
                    Some(text) => self.sink.str(&text),
                    None => {
                        self.warnings.push(format!(
                            "{}: time out of range (seconds={secs}, nanos={nanos})",
                            self.path
                        ));
                        self.sink
                            .tree(serde_json::json!({ "seconds": secs, "nanos": nanos }));
                    }
                }
            }
            Special::Duration => self.sink.str(&gotime::duration(int(self, 1)?)),
            Special::Quantity => match self.last_scalar(plan, 1, fields)? {
                Some(s) if s.as_str().is_some() => s.send(self.sink),
                _ => self.sink.null(),
            },
            Special::IntOrString => match int(self, 1)? {
                1 => match self.last_scalar(plan, 3, fields)? {
                    Some(s) if s.as_str().is_some() => s.send(self.sink),
                    _ => self.sink.str(""),
                },
                _ => self.sink.number(int(self, 2)?.into()),
            },
            Special::RawJson => match self.occurrences(fields, 1).last() {
                Some(i) if !bytes_of(&self.scratch[i])?.is_empty() => {
                    let bytes = bytes_of(&self.scratch[i])?;
                    let json = self.embedded_json(bytes);
                    self.sink.tree(json);
                }
                _ => self.sink.null(),
            },
            Special::SchemaOrArray | Special::SchemaOrStringArray => {
                match self
                    .present(plan, 2, fields)
                    .or_else(|| self.present(plan, 1, fields))
                {
                    Some((fp, group)) => self.value(fp, group)?,
                    None => self.sink.null(),
                }
            }
            Special::SchemaOrBool => match self.present(plan, 2, fields) {
                Some((fp, group)) => self.value(fp, group)?,
                None => {
                    let yes = self.last_scalar(plan, 1, fields)? == Some(Plain::Bool(true));
                    self.sink.bool(yes);
                }
            },
        }
        Ok(())
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

/// Writes `fields` (of a `plan`, in field-number order) back as wire
/// format with each inlined message's occurrences merged into one, as a
/// protobuf decoder merges them.
fn normalize(
    plans: &Plans,
    plan: &MessagePlan,
    fields: &[WireField<'_>],
    out: &mut Vec<u8>,
    depth: usize,
) -> Converted<()> {
    if depth >= wire::MAX_DEPTH {
        return Err(Malformed(format!(
            "messages nested more than {} deep",
            wire::MAX_DEPTH
        )));
    }
    let mut at = 0;
    while at < fields.len() {
        let number = fields[at].number;
        let end = at + fields[at..].iter().take_while(|f| f.number == number).count();
        match plan.field(number) {
            Some(FieldPlan {
                inline: true,
                kind: FieldKind::Message(inner),
                ..
            }) => {
                let mut all = Vec::new();
                for f in &fields[at..end] {
                    all.extend_from_slice(bytes_of(f)?);
                }
                let mut merged = Vec::new();
                normalize(
                    plans,
                    plans.get(*inner),
                    &wire_fields(&all)?,
                    &mut merged,
                    depth + 1,
                )?;
                wire::put_field(out, number, &WireValue::Bytes(&merged));
            }
            _ => fields[at..end]
                .iter()
                .for_each(|f| wire::put_field(out, number, &f.value)),
        }
        at = end;
    }
    Ok(())
}

/// The text of a map key a protobuf decoder fills in when an entry has none.
fn map_key_default(kind: Scalar) -> &'static str {
    match kind {
        Scalar::Bool => "false",
        Scalar::String => "",
        _ => "0",
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

    /// The object of `bytes` decoded as `desc`, and what was not covered.
    struct ProtoJson {
        object: Map<String, Value>,
        unknown_fields: Vec<String>,
    }

    fn to_json(
        schema: &Schema,
        desc: &MessageDescriptor,
        bytes: &[u8],
        base: usize,
    ) -> Result<ProtoJson, ProtoError> {
        let mut tree = crate::json_sink::TreeBuilder::default();
        let report = stream(schema, desc, bytes, base, &[], &mut tree)?;
        let Value::Object(object) = tree.finish() else {
            panic!("an object")
        };
        Ok(ProtoJson {
            object,
            unknown_fields: report.unknown_fields,
        })
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

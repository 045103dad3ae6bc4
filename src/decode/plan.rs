//! Decoding plans: what the converter needs to know about each message type
//! of the schema, worked out once from the descriptors instead of asked of
//! prost-reflect per field per value.
//!
//! A plan holds, for every field, its JSON name ready to insert, how its
//! wire values become JSON (scalar kind, nested message, list, map,
//! inlined) and the nested message's plan by index, looked up by field
//! number in a dense table.

use super::special::{special, Special};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use std::collections::HashMap;

/// Index of a message's plan within [`Plans`].
pub(super) type PlanId = u32;

/// The plans of every message of a schema.
pub(super) struct Plans {
    messages: Vec<MessagePlan>,
    by_name: HashMap<String, PlanId>,
}

/// How a message's JSON is made.
pub(super) enum Shape {
    /// A JSON object of its fields.
    Object,
    /// A one-field wrapper shown as the bare array of its field 1.
    ListWrapper,
    /// A Kubernetes type with its own JSON form.
    Special(Special),
}

pub(super) struct MessagePlan {
    pub shape: Shape,
    /// Two of its JSON members (its own and its inlined messages') share a
    /// name, so the later one's value must replace the earlier one's.
    pub clashes: bool,
    /// Fields in field-number order.
    fields: Vec<FieldPlan>,
    /// `dense[number]` is the index in `fields` of field `number`, or
    /// `NONE`; empty when the numbers are too sparse for a table.
    dense: Vec<u16>,
}

const NONE: u16 = u16::MAX;
/// Field numbers up to this get a direct table.
const DENSE_MAX: u32 = 1024;

/// What a scalar field's wire values are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Scalar {
    Double,
    Float,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Bool,
    Fixed32,
    Sfixed32,
    Fixed64,
    Sfixed64,
    String,
    Bytes,
    Enum,
}

/// A field's value type.
pub(super) enum FieldKind {
    Scalar(Scalar),
    Message(PlanId),
}

/// How the occurrences of a field become JSON.
pub(super) enum Card {
    /// One value: the last occurrence for a scalar, all merged for a message.
    Single,
    /// An array of every occurrence (packed runs expanded).
    List,
    /// A JSON object keyed by the entries' keys.
    Map(Box<MapPlan>),
}

pub(super) struct MapPlan {
    pub key: Scalar,
    /// The key's kind as prost-reflect names it, for error messages.
    pub key_kind: Kind,
    pub value: FieldPlan,
}

pub(super) struct FieldPlan {
    pub number: u32,
    pub json_name: String,
    pub kind: FieldKind,
    pub card: Card,
    /// A singular message field whose fields JSON writes into the parent.
    pub inline: bool,
    /// The kind as prost-reflect names it, for error messages.
    pub reflect_kind: Kind,
}

/// What plans are made from: a schema's messages and how its JSON lays
/// them out.
pub(super) trait Layout {
    fn messages(&self) -> Vec<MessageDescriptor>;
    /// Whether `message` is a one-field wrapper shown as a bare array.
    fn is_list_wrapper(&self, message: &MessageDescriptor) -> bool;
    /// Whether field `number` of `message` is written into its parent.
    fn is_inline(&self, message: &MessageDescriptor, number: u32) -> bool;
}

impl Plans {
    /// Plans every message of `schema`.
    pub(super) fn build(schema: &impl Layout) -> Plans {
        let all: Vec<MessageDescriptor> = schema.messages();
        let by_name: HashMap<String, PlanId> = all
            .iter()
            .enumerate()
            .map(|(i, m)| (m.full_name().to_string(), i as PlanId))
            .collect();
        let id = |m: &MessageDescriptor| by_name[m.full_name()];
        let messages = all
            .iter()
            .map(|desc| {
                let shape = match special(desc.full_name()) {
                    Some(s) => Shape::Special(s),
                    None if schema.is_list_wrapper(desc) => Shape::ListWrapper,
                    None => Shape::Object,
                };
                let mut fields: Vec<FieldPlan> = desc
                    .fields()
                    .map(|fd| {
                        let inline = matches!(fd.kind(), Kind::Message(_))
                            && !fd.is_list()
                            && schema.is_inline(desc, fd.number());
                        field_plan(&fd, inline, &id)
                    })
                    .collect();
                fields.sort_by_key(|f| f.number);
                let max = fields.last().map_or(0, |f| f.number);
                let dense = if max <= DENSE_MAX {
                    let mut t = vec![NONE; max as usize + 1];
                    for (i, f) in fields.iter().enumerate() {
                        t[f.number as usize] = i as u16;
                    }
                    t
                } else {
                    Vec::new()
                };
                MessagePlan {
                    shape,
                    clashes: false,
                    fields,
                    dense,
                }
            })
            .collect();
        let mut plans = Plans { messages, by_name };
        for id in 0..plans.messages.len() {
            let mut names = Vec::new();
            plans.member_names(id as PlanId, &mut names, 0);
            names.sort_unstable();
            let clashes = names.windows(2).any(|w| w[0] == w[1]);
            plans.messages[id].clashes = clashes;
        }
        plans
    }

    /// The JSON names of the members of message `id`'s object: its fields'
    /// and, in their place, its inlined messages' (down to a bound, for a
    /// schema whose inlined messages hold themselves).
    fn member_names(&self, id: PlanId, out: &mut Vec<String>, depth: usize) {
        for f in &self.get(id).fields {
            match (f.inline, &f.kind) {
                (true, FieldKind::Message(inner)) if depth < super::wire::MAX_DEPTH => {
                    self.member_names(*inner, out, depth + 1)
                }
                _ => out.push(f.json_name.clone()),
            }
        }
    }

    /// The plan of the message named `full_name`.
    pub(super) fn id(&self, full_name: &str) -> Option<PlanId> {
        self.by_name.get(full_name).copied()
    }

    pub(super) fn get(&self, id: PlanId) -> &MessagePlan {
        &self.messages[id as usize]
    }
}

impl MessagePlan {
    /// Field `number`, if the schema knows it.
    #[inline]
    pub(super) fn field(&self, number: u32) -> Option<&FieldPlan> {
        if !self.dense.is_empty() {
            let i = *self.dense.get(number as usize)?;
            return (i != NONE).then(|| &self.fields[i as usize]);
        }
        let i = self.fields.binary_search_by_key(&number, |f| f.number).ok()?;
        Some(&self.fields[i])
    }
}

fn scalar_of(kind: &Kind) -> Option<Scalar> {
    Some(match kind {
        Kind::Double => Scalar::Double,
        Kind::Float => Scalar::Float,
        Kind::Int32 => Scalar::Int32,
        Kind::Int64 => Scalar::Int64,
        Kind::Uint32 => Scalar::Uint32,
        Kind::Uint64 => Scalar::Uint64,
        Kind::Sint32 => Scalar::Sint32,
        Kind::Sint64 => Scalar::Sint64,
        Kind::Bool => Scalar::Bool,
        Kind::Fixed32 => Scalar::Fixed32,
        Kind::Sfixed32 => Scalar::Sfixed32,
        Kind::Fixed64 => Scalar::Fixed64,
        Kind::Sfixed64 => Scalar::Sfixed64,
        Kind::String => Scalar::String,
        Kind::Bytes => Scalar::Bytes,
        Kind::Enum(_) => Scalar::Enum,
        Kind::Message(_) => return None,
    })
}

fn field_plan(fd: &FieldDescriptor, inline: bool, id: &impl Fn(&MessageDescriptor) -> PlanId) -> FieldPlan {
    let reflect_kind = fd.kind();
    let kind = match &reflect_kind {
        Kind::Message(m) => FieldKind::Message(id(m)),
        k => FieldKind::Scalar(scalar_of(k).expect("a scalar kind")),
    };
    let card = match &reflect_kind {
        Kind::Message(entry) if fd.is_map() => {
            let (key_fd, value_fd) = (entry.map_entry_key_field(), entry.map_entry_value_field());
            let key_kind = key_fd.kind();
            Card::Map(Box::new(MapPlan {
                key: scalar_of(&key_kind).expect("map keys are scalars"),
                key_kind,
                value: field_plan(&value_fd, false, id),
            }))
        }
        _ if fd.is_list() => Card::List,
        _ => Card::Single,
    };
    FieldPlan {
        number: fd.number(),
        json_name: fd.json_name().to_string(),
        kind,
        card,
        inline,
        reflect_kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::schema::schema;

    #[test]
    fn plans_agree_with_the_descriptors() {
        let s = schema();
        let plans = s.plans();
        for desc in s.pool.all_messages() {
            let plan = plans.get(plans.id(desc.full_name()).unwrap());
            for n in 0..=DENSE_MAX + 2 {
                let (got, want) = (plan.field(n), desc.get_field(n));
                assert_eq!(got.map(|f| f.number), want.as_ref().map(|f| f.number()));
                if let (Some(f), Some(fd)) = (got, want) {
                    assert_eq!(f.json_name, fd.json_name());
                    assert_eq!(matches!(f.card, Card::List), fd.is_list());
                    assert_eq!(matches!(f.card, Card::Map(_)), fd.is_map());
                    let inline =
                        s.is_inline(&desc, n) && !fd.is_list() && matches!(fd.kind(), Kind::Message(_));
                    assert_eq!(f.inline, inline);
                }
            }
        }
    }
}

//! A decoded value as a stream of JSON events pushed into a [`JsonSink`],
//! so a consumer can write what it keeps (canonical JSON, hashes) straight
//! from the stored bytes instead of from a `serde_json::Value` built first.
//! Shared by the decoder, which sends (`decode`), and the canonical form,
//! which receives (`canon`): two leaf stages that import neither each other
//! nor this module's users.
//! [`TreeBuilder`] is the sink that builds the `Value`; [`send_value`]
//! streams a `Value` that exists already (JSON, YAML and CBOR objects,
//! embedded JSON).

use serde_json::{Map, Number, Value};

/// The order in which an object's members are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As the JSON object holds them: protobuf fields in field-number order
    /// with inlined messages' fields in their place, a parsed object's in
    /// its own order.
    Stored,
    /// Sorted by key, byte by byte (`String`'s order).
    Sorted,
}

/// Receives one value as JSON events.
///
/// The contract, in both orders: after `begin_object` come members, each a
/// [`JsonSink::key`] and exactly one value (a scalar, an object, an array
/// or a [`JsonSink::tree`]), then `end_object`;
/// after `begin_array`, values until `end_array`. Within one object a key
/// comes at most once (the value a JSON object would keep for it, in the
/// place it would keep it). [`JsonSink::order`] is asked right before each
/// `begin_object` and decides the order of that object's members.
pub trait JsonSink {
    /// The order wanted for the members of the object about to begin.
    fn order(&self) -> Order;
    fn null(&mut self);
    fn bool(&mut self, b: bool);
    fn number(&mut self, n: Number);
    fn str(&mut self, s: &str);
    fn begin_object(&mut self);
    /// The next member's key.
    fn key(&mut self, key: &str);
    fn end_object(&mut self);
    fn begin_array(&mut self);
    fn end_array(&mut self);
    /// A whole value the decoder had to build (embedded JSON, fields the
    /// schema does not know), its objects' members in stored order.
    fn tree(&mut self, v: Value);
    /// Forgets everything received: the value is sent again from its start
    /// (a kind the schema lacks, decoded again without it).
    fn clear(&mut self);

    /// For the member of the top-level object just keyed, whose value is
    /// the message type `message` (unique in the process: its schema's and
    /// its own number) encoded as `bytes`: whether the sink took as its value what it received for
    /// the same before ([`JsonSink::remember`]); when it did, no value is
    /// sent.
    fn recall(&mut self, _message: (usize, u32), _bytes: &[u8]) -> bool {
        false
    }

    /// The value of the member [`JsonSink::recall`] did not recall was
    /// sent; `clean` when decoding it found nothing to report (no unknown
    /// fields, no warnings, which name their place), so that the same bytes
    /// always send the same events there.
    fn remember(&mut self, _message: (usize, u32), _bytes: &[u8], _clean: bool) {}
}

/// Sends `v` into `sink`, each object's members in the order it asks for.
pub fn send_value<S: JsonSink + ?Sized>(v: &Value, sink: &mut S) {
    match v {
        Value::Null => sink.null(),
        Value::Bool(b) => sink.bool(*b),
        Value::Number(n) => sink.number(n.clone()),
        Value::String(s) => sink.str(s),
        Value::Array(items) => {
            sink.begin_array();
            for item in items {
                send_value(item, sink);
            }
            sink.end_array();
        }
        Value::Object(map) => {
            let order = sink.order();
            sink.begin_object();
            let member = |sink: &mut S, k: &str, v: &Value| {
                sink.key(k);
                send_value(v, sink);
            };
            match order {
                Order::Stored => map.iter().for_each(|(k, v)| member(sink, k, v)),
                Order::Sorted => {
                    let mut sorted: Vec<(&String, &Value)> = map.iter().collect();
                    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    sorted.into_iter().for_each(|(k, v)| member(sink, k, v));
                }
            }
            sink.end_object();
        }
    }
}

/// The sink that builds the value as a `serde_json::Value`, members in
/// stored order.
#[derive(Default)]
pub struct TreeBuilder {
    open: Vec<Open>,
    done: Option<Value>,
}

/// An object or array being built, and the key of an object's next member.
enum Open {
    Object(Map<String, Value>, Option<String>),
    Array(Vec<Value>),
}

impl TreeBuilder {
    /// The value built; `Null` when none was sent.
    pub fn finish(self) -> Value {
        self.done.unwrap_or(Value::Null)
    }

    fn put(&mut self, v: Value) {
        match self.open.last_mut() {
            None => self.done = Some(v),
            Some(Open::Array(items)) => items.push(v),
            Some(Open::Object(map, key)) => {
                let key = key.take().expect("the contract sends a key before each member");
                map.insert(key, v);
            }
        }
    }
}

impl JsonSink for TreeBuilder {
    fn order(&self) -> Order {
        Order::Stored
    }

    fn null(&mut self) {
        self.put(Value::Null);
    }

    fn bool(&mut self, b: bool) {
        self.put(Value::Bool(b));
    }

    fn number(&mut self, n: Number) {
        self.put(Value::Number(n));
    }

    fn str(&mut self, s: &str) {
        self.put(Value::String(s.to_string()));
    }

    fn begin_object(&mut self) {
        self.open.push(Open::Object(Map::new(), None));
    }

    fn key(&mut self, key: &str) {
        if let Some(Open::Object(_, k)) = self.open.last_mut() {
            *k = Some(key.to_string());
        }
    }

    fn end_object(&mut self) {
        if let Some(Open::Object(map, _)) = self.open.pop() {
            self.put(Value::Object(map));
        }
    }

    fn begin_array(&mut self) {
        self.open.push(Open::Array(Vec::new()));
    }

    fn end_array(&mut self) {
        if let Some(Open::Array(items)) = self.open.pop() {
            self.put(Value::Array(items));
        }
    }

    fn tree(&mut self, v: Value) {
        self.put(v);
    }

    fn clear(&mut self) {
        *self = TreeBuilder::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_sent_into_a_tree_builder_comes_back() {
        let v = json!({"b": [1, {"z": null, "a": "x"}], "a": {"k": 1.5, "j": false}, "c": "é\"\n"});
        let mut t = TreeBuilder::default();
        send_value(&v, &mut t);
        let back = t.finish();
        assert_eq!(back, v);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&v).unwrap(),
            "stored order kept"
        );
    }
}

//! The protobuf wire format, read by hand: the fields the decoder converts,
//! the byte offset where a malformed message breaks, and a readable
//! rendering of fields the schema does not know.

use base64::Engine;
use prost_reflect::{Kind, MessageDescriptor};
use serde_json::{Map, Value};

/// Messages nested deeper than this are refused (prost's limit too), so
/// hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 100;

/// Where and why a protobuf message stops parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} at byte offset {offset}")]
pub struct WireError {
    /// Offset from the start of the buffer first handed to the reader.
    pub offset: usize,
    pub problem: String,
}

/// One field as it appears on the wire.
#[derive(Clone, Copy)]
pub struct WireField<'a> {
    pub number: u32,
    pub value: WireValue<'a>,
}

#[derive(Clone, Copy)]
pub enum WireValue<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Bytes(&'a [u8]),
    Fixed32([u8; 4]),
}

/// Reads fields one by one from `buf`, whose first byte sits at `base`
/// within the outer buffer.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    #[cold]
    fn err(&self, at: usize, problem: impl Into<String>) -> WireError {
        WireError {
            offset: self.base + at,
            problem: problem.into(),
        }
    }

    /// A varint; one-byte ones (most keys and lengths) without the loop.
    #[inline(always)]
    fn varint(&mut self) -> Result<u64, WireError> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.long_varint(),
        }
    }

    fn long_varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.err(start, "truncated varint"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.err(start, "varint longer than 10 bytes"))
    }

    #[inline(always)]
    fn take(&mut self, n: usize, what: &str, field_at: usize) -> Result<&'a [u8], WireError> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.past_end(n, what, field_at)),
        }
    }

    #[cold]
    fn past_end(&self, n: usize, what: &str, field_at: usize) -> WireError {
        self.err(
            field_at,
            format!(
                "{what} of {n} bytes runs past the end ({} bytes left)",
                self.buf.len() - self.pos
            ),
        )
    }

    /// The next field, or `None` at the end of the buffer.
    #[inline(always)]
    pub fn next_field(&mut self) -> Result<Option<WireField<'a>>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let at = self.pos;
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| self.err(at, "field number too large"))?;
        if number == 0 {
            return Err(self.err(at, "field number 0"));
        }
        let value = self.value(key & 7, number, at)?;
        Ok(Some(WireField { number, value }))
    }

    /// One value of `wire_type` (for field `number`, whose key is at `at`).
    #[inline(always)]
    fn value(&mut self, wire_type: u64, number: u32, at: usize) -> Result<WireValue<'a>, WireError> {
        Ok(match wire_type {
            0 => WireValue::Varint(self.varint()?),
            1 => WireValue::Fixed64(self.take(8, "fixed64", at)?.try_into().expect("8 bytes")),
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| self.err(at, "length too large"))?;
                WireValue::Bytes(self.take(len, "length-delimited field", at)?)
            }
            5 => WireValue::Fixed32(self.take(4, "fixed32", at)?.try_into().expect("4 bytes")),
            w => return Err(self.err(at, format!("unsupported wire type {w} for field {number}"))),
        })
    }

    /// The next element of a packed run of `wire_type` values (0 varint,
    /// 1 fixed64, 5 fixed32), or `None` at its end.
    pub fn next_packed(&mut self, wire_type: u64) -> Result<Option<WireValue<'a>>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        self.value(wire_type, 0, self.pos).map(Some)
    }

    /// Offset of the next unread byte within the outer buffer.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }
}

/// Finds the first structural fault in `buf` read as `desc`, descending into
/// message fields; `None` if the wire format is sound.
pub fn locate_fault(buf: &[u8], base: usize, desc: &MessageDescriptor) -> Option<WireError> {
    fault_within(buf, base, desc, 0)
}

fn fault_within(buf: &[u8], base: usize, desc: &MessageDescriptor, depth: usize) -> Option<WireError> {
    if depth > MAX_DEPTH {
        return Some(WireError {
            offset: base,
            problem: format!("messages nested more than {MAX_DEPTH} deep"),
        });
    }
    let mut r = Reader::new(buf, base);
    loop {
        let field = match r.next_field() {
            Ok(Some(f)) => f,
            Ok(None) => return None,
            Err(e) => return Some(e),
        };
        let Some(fd) = desc.get_field(field.number) else {
            continue;
        };
        let WireValue::Bytes(bytes) = field.value else {
            continue;
        };
        let body_at = r.offset() - bytes.len();
        match fd.kind() {
            Kind::Message(inner) => {
                if let Some(e) = fault_within(bytes, body_at, &inner, depth + 1) {
                    return Some(e);
                }
            }
            Kind::String if std::str::from_utf8(bytes).is_err() => {
                return Some(WireError {
                    offset: body_at,
                    problem: format!("field {} ({}) is not valid UTF-8", fd.number(), fd.json_name()),
                });
            }
            _ => {}
        }
    }
}

/// Appends field `number` holding `value` in wire format.
pub fn put_field(out: &mut Vec<u8>, number: u32, value: &WireValue<'_>) {
    let wire_type = match value {
        WireValue::Varint(_) => 0,
        WireValue::Fixed64(_) => 1,
        WireValue::Bytes(_) => 2,
        WireValue::Fixed32(_) => 5,
    };
    put_varint(out, u64::from(number) << 3 | wire_type);
    match value {
        WireValue::Varint(n) => put_varint(out, *n),
        WireValue::Fixed64(b) => out.extend_from_slice(b),
        WireValue::Fixed32(b) => out.extend_from_slice(b),
        WireValue::Bytes(b) => {
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Renders bytes the schema does not describe: a nested message when they
/// parse as one (down to [`MAX_DEPTH`] levels), else text, else base64.
fn render_bytes(bytes: &[u8], depth: usize) -> Value {
    if let Ok(s) = std::str::from_utf8(bytes) {
        if s.chars().all(|c| !c.is_control() || c.is_whitespace()) {
            return Value::String(s.to_string());
        }
    }
    if depth < MAX_DEPTH {
        if let Some(v) = render_message(bytes, depth + 1) {
            return v;
        }
    }
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Renders a schema-less message as `{"#<number>": value}`, repeated numbers
/// as arrays; `None` unless every byte parses.
fn render_message(bytes: &[u8], depth: usize) -> Option<Value> {
    let mut r = Reader::new(bytes, 0);
    let mut out = Map::new();
    while let Some(f) = r.next_field().ok()? {
        insert_unknown(&mut out, f.number, render_at(&f.value, depth));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Renders a value the schema does not describe.
pub fn render_value(v: &WireValue<'_>) -> Value {
    render_at(v, 0)
}

fn render_at(v: &WireValue<'_>, depth: usize) -> Value {
    match v {
        WireValue::Varint(n) => Value::from(*n),
        WireValue::Fixed64(b) => Value::from(u64::from_le_bytes(*b)),
        WireValue::Fixed32(b) => Value::from(u32::from_le_bytes(*b)),
        WireValue::Bytes(b) => render_bytes(b, depth),
    }
}

/// The JSON key under which an unknown field is kept.
pub fn unknown_key(number: u32) -> String {
    format!("#{number}")
}

/// Adds an unknown field to `out`, turning a repeated number into an array.
pub fn insert_unknown(out: &mut Map<String, Value>, number: u32, value: Value) {
    let key = unknown_key(number);
    match out.get_mut(&key) {
        Some(Value::Array(items)) => items.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
        None => {
            out.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_length_names_offset() {
        // field 1, length 5, only 2 bytes follow
        let e = Reader::new(&[0x0a, 0x05, b'a', b'b'], 10)
            .next_field()
            .err()
            .unwrap();
        assert_eq!(e.offset, 10);
        assert!(e.problem.contains("runs past the end"), "{e}");
    }

    #[test]
    fn renders_nested_unknown_message() {
        // field 3 = varint 7; field 4 = "hi"
        let v = render_message(&[0x18, 0x07, 0x22, 0x02, b'h', b'i'], 0).unwrap();
        assert_eq!(v, serde_json::json!({"#3": 7, "#4": "hi"}));
    }
}

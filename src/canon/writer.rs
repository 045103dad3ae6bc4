//! The semantic form's canonical JSON, written as an object is sent (see
//! [`crate::json_sink`]), with the byte span of every field down to a
//! depth, so that one serialization gives the semantic hash and every field
//! hash: a field's value serializes to the same bytes alone as inside its
//! parent.
//!
//! Invariants, as [`super::semantic::into_semantic_form`] states them on a
//! tree: members sorted by key, empty values (`""`, `0`, `false`, `[]`,
//! `{}`, `null`) left out of objects unless the key is a managedFields set
//! member, an object left empty counts as empty itself; list items are all
//! kept and have no field paths of their own; at the top, `apiVersion`
//! becomes `apiGroup` (its group; none for the core group, and a later
//! `apiGroup` member replaces it) and `metadata` loses `resourceVersion` and
//! `selfLink`. Nested objects are asked for in sorted order; the top-level
//! one comes in stored order (the apiGroup rule depends on it) and is sorted
//! at its end, which moves bytes only when its members came out of order.

use super::is_field_set_member;
use super::path::FieldPath;
use crate::json_sink::{send_value, JsonSink, Order};
use serde_json::{Number, Value};

/// Where each field down to the depth sits in the written bytes: its path
/// and the start and end of its value.
pub type Spans = Vec<(FieldPath, usize, usize)>;

/// Writes the canonical JSON of the semantic form of the object sent.
pub struct CanonicalWriter {
    out: Vec<u8>,
    spans: Spans,
    /// Field paths go this deep (1: top-level fields).
    depth: usize,
    open: Vec<Frame>,
    /// The top-level members kept, in the order written.
    top: Vec<TopMember>,
    /// The top-level members must be sorted or dropped at the end.
    top_moved: bool,
    /// The text of the top-level `apiVersion` being written.
    api_version: Option<String>,
    /// Record the value of the top-level member being written.
    recording: bool,
    recorded: Option<Recorded>,
}

/// The value of a top-level member as written: its bytes, the spans below
/// it (from its start) and whether it was empty; written again by
/// [`CanonicalWriter::replay`] for the same value.
pub struct Recorded {
    key: String,
    value: Box<[u8]>,
    spans: Spans,
    empty: bool,
}

impl Recorded {
    /// The member's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Bytes it holds, about.
    pub fn size(&self) -> usize {
        self.value.len() + self.spans.len() * 48
    }
}

/// An object or array being written.
struct Frame {
    array: bool,
    /// Members or items written.
    written: usize,
    /// How deep its members' paths still go (0: they get none).
    depth: usize,
    path: FieldPath,
    /// The top-level `metadata`: storage's members are left out.
    metadata: bool,
    /// The member being written: where it started, its first span, its key
    /// (when it is a set member or at the top), and its path.
    member: Option<Pending>,
}

struct Pending {
    mark: usize,
    /// Where its value starts.
    value_at: usize,
    slot: usize,
    key: String,
    keep_empty: bool,
    spanned: bool,
    /// A member storage adds (`metadata.resourceVersion`): written, then
    /// left out.
    storage: bool,
}

/// A top-level member as written: its key, its bytes (key and value,
/// without a comma) and its spans.
struct TopMember {
    key: String,
    start: usize,
    end: usize,
    spans: std::ops::Range<usize>,
}

impl CanonicalWriter {
    /// A writer of field paths `depth` deep.
    pub fn new(depth: usize) -> Self {
        Self::with_capacity(depth, 4096)
    }

    /// A writer of field paths `depth` deep, with room for `bytes` of JSON
    /// (growing the output as it is written copied a fully filled Pod's
    /// 30 KB three times over, into fresh pages each time).
    pub fn with_capacity(depth: usize, bytes: usize) -> Self {
        CanonicalWriter {
            out: Vec::with_capacity(bytes),
            spans: Vec::new(),
            depth,
            open: Vec::new(),
            top: Vec::new(),
            top_moved: false,
            api_version: None,
            recording: false,
            recorded: None,
        }
    }

    /// The key of the top-level member being written, unless it is
    /// `metadata` (which storage's members leave out) or `apiVersion`.
    pub fn top_member_key(&self) -> Option<&str> {
        let p = self
            .open
            .first()
            .filter(|_| self.open.len() == 1)?
            .member
            .as_ref()?;
        (p.key != "metadata" && p.key != "apiVersion").then_some(p.key.as_str())
    }

    /// Records the value of the top-level member being written (see
    /// [`Self::take_recorded`]).
    pub fn record(&mut self) {
        self.recording = true;
    }

    /// The value recorded since [`Self::record`].
    pub fn take_recorded(&mut self) -> Option<Recorded> {
        self.recording = false;
        self.recorded.take()
    }

    /// Writes `r` as the value of the top-level member being written.
    pub fn replay(&mut self, r: &Recorded) {
        let at = self.out.len();
        self.out.extend_from_slice(&r.value);
        self.spans
            .extend(r.spans.iter().map(|(p, s, e)| (p.clone(), s + at, e + at)));
        self.end_value(r.empty);
    }

    /// The bytes written and the spans of the fields in them.
    pub fn finish(self) -> (Vec<u8>, Spans) {
        (self.out, self.spans)
    }

    /// Whether the object being written is the top-level `metadata`.
    pub fn at_top_metadata(&self) -> bool {
        self.open.len() == 2 && self.open[1].metadata
    }

    /// Starts a value: a list item gets its comma.
    fn begin_value(&mut self) {
        if let Some(f) = self.open.last_mut().filter(|f| f.array) {
            if f.written > 0 {
                self.out.push(b',');
            }
            f.written += 1;
        }
    }

    /// A value ended; `empty` when it is empty in the omitempty sense.
    fn end_value(&mut self, empty: bool) {
        let top = self.open.len() == 1;
        let Some(f) = self.open.last_mut().filter(|f| !f.array) else {
            return;
        };
        let Some(p) = f.member.take() else { return };
        if p.spanned {
            self.spans[p.slot].2 = self.out.len();
        }
        if top {
            return self.end_top_member(p, empty);
        }
        if p.storage || (empty && !p.keep_empty) {
            self.out.truncate(p.mark);
            self.spans.truncate(p.slot);
        } else {
            f.written += 1;
        }
    }

    /// A top-level member ended: `apiVersion` becomes `apiGroup`, a key
    /// already kept is replaced, an empty member is left out.
    fn end_top_member(&mut self, p: Pending, empty: bool) {
        if std::mem::take(&mut self.recording) {
            let own = usize::from(p.spanned);
            let spans = self.spans[p.slot + own..].iter();
            self.recorded = Some(Recorded {
                key: p.key.clone(),
                value: self.out[p.value_at..].into(),
                spans: spans
                    .map(|(path, s, e)| (path.clone(), s - p.value_at, e - p.value_at))
                    .collect(),
                empty,
            });
        }
        let mut key = p.key;
        let mut empty = empty;
        if key == "apiVersion" {
            self.out.truncate(p.mark);
            self.spans.truncate(p.slot);
            let Some(group) = self
                .api_version
                .take()
                .and_then(|v| v.rsplit_once('/').map(|(g, _)| g.to_string()))
            else {
                return;
            };
            key = "apiGroup".into();
            self.write_key(&key, p.mark);
            let start = self.out.len();
            write_str(&mut self.out, &group);
            if self.depth > 0 {
                self.spans.push((FieldPath::field(&key), start, self.out.len()));
            }
            empty = group.is_empty();
        }
        if let Some(at) = self.top.iter().position(|m| m.key == key) {
            self.top.remove(at);
            self.top_moved = true;
        }
        if empty && !is_field_set_member(&key) {
            self.out.truncate(p.mark);
            self.spans.truncate(p.slot);
            return;
        }
        let start = p.mark + usize::from(self.out[p.mark] == b',');
        if self.top.last().is_some_and(|m| m.key > key) {
            self.top_moved = true;
        }
        self.top.push(TopMember {
            key,
            start,
            end: self.out.len(),
            spans: p.slot..self.spans.len(),
        });
        if let Some(f) = self.open.last_mut() {
            f.written = self.top.len();
        }
    }

    /// Writes `key` and its colon, after a comma unless the member starts
    /// its object at `mark`.
    fn write_key(&mut self, key: &str, mark: usize) {
        if self.out[mark - 1] != b'{' {
            self.out.push(b',');
        }
        write_str(&mut self.out, key);
        self.out.push(b':');
    }

    /// Sorts the top-level members and drops the replaced ones.
    fn sort_top(&mut self) {
        let mut top = std::mem::take(&mut self.top);
        top.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Vec::with_capacity(self.out.len());
        let mut spans = Vec::with_capacity(self.spans.len());
        out.push(b'{');
        for (i, m) in top.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let shift = |at: usize| at - m.start + out.len();
            for (path, start, end) in &mut self.spans[m.spans.clone()] {
                spans.push((std::mem::take(path), shift(*start), shift(*end)));
            }
            out.extend_from_slice(&self.out[m.start..m.end]);
        }
        out.push(b'}');
        (self.out, self.spans) = (out, spans);
    }

    fn scalar(&mut self, empty: bool, write: impl FnOnce(&mut Vec<u8>)) {
        self.begin_value();
        write(&mut self.out);
        self.end_value(empty);
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(out, s).expect("strings serialize");
}

impl JsonSink for CanonicalWriter {
    fn order(&self) -> Order {
        match self.open.is_empty() {
            true => Order::Stored,
            false => Order::Sorted,
        }
    }

    fn null(&mut self) {
        self.scalar(true, |out| out.extend_from_slice(b"null"));
    }

    fn bool(&mut self, b: bool) {
        self.scalar(!b, |out| {
            out.extend_from_slice(if b { b"true" } else { b"false" })
        });
    }

    fn number(&mut self, n: Number) {
        let empty = n.as_f64() == Some(0.0);
        self.scalar(empty, |out| {
            serde_json::to_writer(out, &n).expect("numbers serialize")
        });
    }

    fn str(&mut self, s: &str) {
        let top_api_version = self.open.len() == 1
            && self.open[0]
                .member
                .as_ref()
                .is_some_and(|p| p.key == "apiVersion");
        if top_api_version {
            self.api_version = Some(s.to_string());
        }
        self.scalar(s.is_empty(), |out| write_str(out, s));
    }

    fn begin_object(&mut self) {
        self.begin_value();
        let (depth, path, metadata) = match self.open.last() {
            None => (self.depth, FieldPath::root(), false),
            Some(f) if f.array => (0, FieldPath::root(), false),
            Some(f) => {
                let p = f.member.as_ref().expect("the contract keys each member");
                let path = match p.spanned {
                    true => self.spans[p.slot].0.clone(),
                    false => FieldPath::root(),
                };
                let metadata = self.open.len() == 1 && p.key == "metadata";
                (f.depth.saturating_sub(1), path, metadata)
            }
        };
        self.out.push(b'{');
        self.open.push(Frame {
            array: false,
            written: 0,
            depth,
            path,
            metadata,
            member: None,
        });
    }

    fn key(&mut self, key: &str) {
        let top = self.open.len() == 1;
        let Some(f) = self.open.last_mut() else { return };
        let storage = f.metadata && (key == "resourceVersion" || key == "selfLink");
        let (mark, slot) = (self.out.len(), self.spans.len());
        if f.written > 0 {
            self.out.push(b',');
        }
        write_str(&mut self.out, key);
        self.out.push(b':');
        let spanned = f.depth > 0;
        if spanned {
            let path = f.path.join_field(key);
            self.spans.push((path, self.out.len(), self.out.len()));
        }
        let keep_empty = is_field_set_member(key);
        f.member = Some(Pending {
            mark,
            value_at: self.out.len(),
            slot,
            key: if top || key == "metadata" {
                key.to_string()
            } else {
                String::new()
            },
            keep_empty,
            spanned,
            storage,
        });
    }

    fn end_object(&mut self) {
        self.out.push(b'}');
        let f = self.open.pop().expect("the contract ends what it began");
        if self.open.is_empty() && self.top_moved {
            self.sort_top();
        }
        let empty = match self.open.is_empty() {
            true => self.top.is_empty() && f.written == 0,
            false => f.written == 0,
        };
        self.end_value(empty);
    }

    fn begin_array(&mut self) {
        self.begin_value();
        self.out.push(b'[');
        self.open.push(Frame {
            array: true,
            written: 0,
            depth: 0,
            path: FieldPath::root(),
            metadata: false,
            member: None,
        });
    }

    fn end_array(&mut self) {
        self.out.push(b']');
        let f = self.open.pop().expect("the contract ends what it began");
        self.end_value(f.written == 0);
    }

    fn tree(&mut self, v: Value) {
        send_value(&v, self);
    }

    fn clear(&mut self) {
        *self = CanonicalWriter::new(self.depth);
    }
}

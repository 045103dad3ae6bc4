//! What a top-level message (a spec, a status) was written as, kept by its
//! exact bytes: consecutive revisions of an object repeat most of theirs
//! (an unchanged `spec` across status updates), and objects share them (the
//! fully filled Pods of the benchmark), so the same bytes are not decoded
//! and written again. Per thread, bounded: past [`BUDGET`] bytes the map
//! starts over. Exact: a hit compares the bytes, and only what decoded with
//! nothing to report is kept (see [`crate::json_sink::JsonSink::recall`]).

use crate::canon::writer::Recorded;
use hashbrown::DefaultHashBuilder as RandomState;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// Bytes of entries each thread keeps; a data file is read key by key, so
/// repeats come soon.
const BUDGET: usize = 8 << 20;

/// A top-level member holding a message, written with field paths of a
/// depth: the member's key, the message type (see
/// [`crate::json_sink::JsonSink::recall`]), the depth.
pub type Member<'k> = (&'k str, (usize, u32), usize);

/// What a member's value was written as.
pub struct Entry {
    key: String,
    message: (usize, u32),
    depth: usize,
    bytes: Box<[u8]>,
    pub written: Recorded,
    /// Its part of the view, when the view reaches it.
    pub view: Option<Value>,
}

#[derive(Default)]
struct Kept {
    /// Fingerprint (key, message, length, first and last bytes) → entry.
    map: HashMap<u64, Entry, RandomState>,
    bytes: usize,
    state: RandomState,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

fn fingerprint(state: &RandomState, member: Member<'_>, bytes: &[u8]) -> u64 {
    let mut h = state.build_hasher();
    (member, bytes.len()).hash(&mut h);
    bytes[..16.min(bytes.len())].hash(&mut h);
    bytes[bytes.len().saturating_sub(16)..].hash(&mut h);
    h.finish()
}

/// Runs `f` on what `member` holding `bytes` was written as, if kept;
/// whether it was.
pub fn with(member: Member<'_>, bytes: &[u8], f: impl FnOnce(&Entry)) -> bool {
    KEPT.with_borrow(|k| {
        let found = k
            .map
            .get(&fingerprint(&k.state, member, bytes))
            .filter(|e| (e.key.as_str(), e.message, e.depth) == member && *e.bytes == *bytes);
        found.map(f).is_some()
    })
}

/// Keeps what `member` holding `bytes` was written as.
pub fn keep(member: Member<'_>, bytes: &[u8], written: Recorded, view: Option<Value>) {
    KEPT.with_borrow_mut(|k| {
        let cost = bytes.len() + written.size() + 2 * bytes.len() * usize::from(view.is_some());
        if k.bytes + cost > BUDGET {
            k.map.clear();
            k.bytes = 0;
        }
        k.bytes += cost;
        let at = fingerprint(&k.state, member, bytes);
        let (key, message, depth) = member;
        let entry = Entry {
            key: key.to_string(),
            message,
            depth,
            bytes: bytes.into(),
            written,
            view,
        };
        k.map.insert(at, entry);
    });
}

//! Reuse of sub-message decodes: consecutive revisions of one object repeat
//! most of their bytes (an unchanged `spec` across status updates, the same
//! managedFields entries), so the JSON of a sub-message is kept by its exact
//! bytes and handed out again when the same bytes come back as the same
//! message type.
//!
//! Each thread has its own cache, bounded by [`BUDGET`] bytes (keys, JSON
//! and paths, estimated), evicting the oldest entries first. A hit hands
//! out a copy of the JSON, so each message type is kept only while copying
//! its JSON costs well under decoding it (timed on its first kept decodes):
//! on the benchmark's Pods, whose specs are mostly long strings, that took
//! a file run's CPU from 1.28 s to 1.10 s, and kept the fully filled Pod's
//! speed-up. Keys compare
//! the bytes themselves, not only their hash, so a collision costs a decode,
//! never a wrong value. Only sub-messages that decoded are kept; what they
//! add to the paths of unknown fields and warnings is kept relative to the
//! sub-message, so an entry serves the same bytes at any path.

use super::plan::PlanId;
use super::wire::MAX_DEPTH;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Sub-messages shorter than this are decoded every time: looking them up
/// costs about what decoding them does (64 and 128 measured alike on the
/// benchmarks, 256 and up reused less, 16 and 32 cost more where nothing
/// repeats).
pub(super) const MIN_BYTES: usize = 128;

/// What one thread's cache may hold. A data file is read key by key, so
/// repeats come soon: 16 MiB ran no faster.
const BUDGET: usize = 8 << 20;

/// Decodes of a message type timed before the cache judges whether keeping
/// that type pays.
const SAMPLES: u32 = 16;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(true) };
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Whether the calling thread reuses sub-message decodes.
#[inline]
pub(super) fn enabled() -> bool {
    ENABLED.get()
}

/// Turns reuse on or off for the calling thread; off also empties its cache.
pub(super) fn set_enabled(on: bool) {
    ENABLED.set(on);
    if !on {
        CACHE.with_borrow_mut(|c| *c = Cache::default());
    }
}

/// Whether the calling thread looks up and keeps decodes of the message
/// type `plan` of the schema `owner` (see `Cache::pays`); asked before
/// the sub-message's bytes are hashed.
pub(super) fn pays(owner: usize, plan: PlanId) -> bool {
    CACHE.with_borrow(|c| c.pays(owner, plan))
}

/// A sub-message: its type (the plan, within the plans of one schema) and
/// its bytes.
pub(super) struct Key<'k> {
    hash: u64,
    owner: usize,
    plan: PlanId,
    bytes: &'k [u8],
}

impl<'k> Key<'k> {
    /// `owner` tells apart the plans of different schemas.
    pub(super) fn new(owner: usize, plan: PlanId, bytes: &'k [u8]) -> Self {
        let seed = (owner as u64).rotate_left(32) ^ u64::from(plan);
        Key {
            hash: hash(seed, bytes),
            owner,
            plan,
            bytes,
        }
    }
}

/// What decoding a sub-message produced.
pub(super) struct Decode<'d> {
    pub value: &'d Value,
    /// The paths of its unknown fields, without the sub-message's own path.
    pub unknown_fields: Vec<String>,
    /// Its warnings, without the sub-message's own path in front.
    pub warnings: Vec<String>,
    /// How many messages deep it nests (0 when it holds none).
    pub nesting: usize,
    /// How long decoding it took.
    pub took: std::time::Duration,
}

/// What the cache has for a sub-message.
pub(super) enum Lookup {
    /// Its JSON and nesting; its unknown fields and warnings were appended.
    Hit(Value, usize),
    /// Not kept; `store` when its bytes were seen before, so that keeping
    /// its decode is likely to pay (most sub-messages that are ever seen
    /// once are seen only once, and cloning them would be wasted).
    Miss { store: bool },
}

/// The decode of `key`, if kept and valid `depth` messages deep, with its
/// unknown fields and warnings (prefixed with `path`) appended to
/// `unknown_fields` and `warnings`.
pub(super) fn lookup(
    key: &Key<'_>,
    depth: usize,
    path: &str,
    unknown_fields: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Lookup {
    CACHE.with_borrow_mut(|c| {
        let Some(e) = c.get(key) else {
            return Lookup::Miss {
                store: c.seen_again(key.hash),
            };
        };
        // Nested deeper here than where it decoded, it could hit the limit.
        if depth + e.nesting >= MAX_DEPTH {
            return Lookup::Miss { store: false };
        }
        let prefixed = |s: &String| [path, s].concat();
        unknown_fields.extend(e.unknown_fields.iter().map(prefixed));
        warnings.extend(e.warnings.iter().map(prefixed));
        Lookup::Hit(e.value.clone(), e.nesting)
    })
}

/// Keeps the decode of `key`.
pub(super) fn store(key: Key<'_>, decode: Decode<'_>) {
    let strings = |v: &[String]| {
        v.iter()
            .map(|s| s.capacity() + size_of::<String>())
            .sum::<usize>()
    };
    let cost = size_of::<Entry>()
        + key.bytes.len()
        + heap_size(decode.value)
        + strings(&decode.unknown_fields)
        + strings(&decode.warnings);
    let started = std::time::Instant::now();
    let value = decode.value.clone();
    let cloned = started.elapsed();
    CACHE.with_borrow_mut(|c| {
        c.judge(&key, decode.took, cloned);
        c.insert(Entry {
            hash: key.hash,
            owner: key.owner,
            plan: key.plan,
            bytes: key.bytes.into(),
            value,
            unknown_fields: decode.unknown_fields,
            warnings: decode.warnings,
            nesting: decode.nesting,
            cost,
        })
    });
}

struct Entry {
    hash: u64,
    owner: usize,
    plan: PlanId,
    bytes: Box<[u8]>,
    value: Value,
    unknown_fields: Vec<String>,
    warnings: Vec<String>,
    nesting: usize,
    cost: usize,
}

/// Entries oldest first; the index maps a key's hash to the sequence
/// number of its newest entry (`first` is that of `entries[0]`).
#[derive(Default)]
struct Cache {
    entries: VecDeque<Entry>,
    first: u64,
    index: HashMap<u64, u64, BuildHasherDefault<Prehashed>>,
    used: usize,
    /// Hashes of the sub-messages looked up and not kept, up to [`SEEN_MAX`].
    seen: HashSet<u64, BuildHasherDefault<Prehashed>>,
    /// What decoding and copying each message type cost, as timed when its
    /// decodes were kept.
    costs: HashMap<(usize, PlanId), Costs>,
}

/// Time spent decoding the sub-messages of one type that were kept, and
/// copying their JSON into the cache.
#[derive(Default)]
struct Costs {
    decoding: std::time::Duration,
    copying: std::time::Duration,
    samples: u32,
}

/// Hashes remembered as seen before (about 1 MiB); then they start over.
const SEEN_MAX: usize = 1 << 16;

impl Cache {
    /// Whether keeping decodes of the key's type pays: a hit hands out a
    /// copy of the JSON, which costs about what decoding does for a type
    /// made of long strings (a container's environment), far less for one
    /// of many small fields. Judged on the first [`SAMPLES`] decodes kept:
    /// a copy must cost under half the decode.
    fn pays(&self, owner: usize, plan: PlanId) -> bool {
        self.costs
            .get(&(owner, plan))
            .is_none_or(|c| c.samples < SAMPLES || c.copying * 2 < c.decoding)
    }

    /// Notes what decoding and copying a kept decode of the key's type took.
    fn judge(&mut self, key: &Key<'_>, decoding: std::time::Duration, copying: std::time::Duration) {
        let c = self.costs.entry((key.owner, key.plan)).or_default();
        if c.samples < SAMPLES {
            c.decoding += decoding;
            c.copying += copying;
            c.samples += 1;
        }
    }

    /// Whether a sub-message with this hash was looked up before; notes it.
    fn seen_again(&mut self, hash: u64) -> bool {
        if self.seen.len() >= SEEN_MAX {
            self.seen.clear();
        }
        !self.seen.insert(hash)
    }

    fn get(&self, key: &Key<'_>) -> Option<&Entry> {
        let seq = *self.index.get(&key.hash)?;
        let e = self.entries.get(usize::try_from(seq - self.first).ok()?)?;
        (e.owner == key.owner && e.plan == key.plan && *e.bytes == *key.bytes).then_some(e)
    }

    fn insert(&mut self, entry: Entry) {
        if entry.cost > BUDGET {
            return;
        }
        while self.used + entry.cost > BUDGET {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            if self.index.get(&old.hash) == Some(&self.first) {
                self.index.remove(&old.hash);
            }
            self.first += 1;
            self.used -= old.cost;
        }
        self.used += entry.cost;
        self.index
            .insert(entry.hash, self.first + self.entries.len() as u64);
        self.entries.push_back(entry);
    }
}

/// The heap a JSON value holds, roughly.
fn heap_size(v: &Value) -> usize {
    match v {
        Value::String(s) => s.capacity(),
        Value::Array(items) => {
            items.capacity() * size_of::<Value>() + items.iter().map(heap_size).sum::<usize>()
        }
        // An entry, its hash and its slot in the index table.
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| size_of::<(u64, String, Value)>() + 8 + k.capacity() + heap_size(v))
            .sum(),
        _ => 0,
    }
}

/// Hashes keys that are already hashes.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash(self.0, bytes);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
const P3: u64 = 0x5899_65cc_7537_4cc3;

/// The product of `a` and `b`, folded to 64 bits.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A fast 64-bit hash of `bytes` (wyhash-like: two lanes of 16 bytes per
/// folded multiply). Not for hostile input's sake: keys are compared whole.
fn hash(seed: u64, bytes: &[u8]) -> u64 {
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let (mut a, mut b) = (seed ^ P0, seed.rotate_left(32) ^ P1);
    let mut chunks = bytes.chunks_exact(32);
    for c in &mut chunks {
        a = fold(word(c, 0) ^ P1, word(c, 8) ^ a);
        b = fold(word(c, 16) ^ P2, word(c, 24) ^ b);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 32];
        last[..rest.len()].copy_from_slice(rest);
        a = fold(word(&last, 0) ^ P1, word(&last, 8) ^ a);
        b = fold(word(&last, 16) ^ P2, word(&last, 24) ^ b);
    }
    fold((bytes.len() as u64) ^ P1, fold(a ^ P3, b ^ P0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_tells_apart_lengths_and_bytes() {
        let mut seen = std::collections::HashSet::new();
        for len in 0..100 {
            let zeros = vec![0u8; len];
            assert!(seen.insert(hash(1, &zeros)), "zeros {len}");
            let mut one = zeros.clone();
            if len > 0 {
                one[len / 2] = 1;
                assert!(seen.insert(hash(1, &one)), "one {len}");
            }
        }
        assert_ne!(hash(1, b"abc"), hash(2, b"abc"));
    }

    fn entry(hash: u64, bytes: &[u8], cost: usize) -> Entry {
        Entry {
            hash,
            owner: 1,
            plan: 7,
            bytes: bytes.into(),
            value: Value::Null,
            unknown_fields: Vec::new(),
            warnings: Vec::new(),
            nesting: 0,
            cost,
        }
    }

    #[test]
    fn a_type_whose_copies_cost_half_its_decode_is_no_longer_kept() {
        use std::time::Duration;
        let mut c = Cache::default();
        let key = |plan| Key {
            hash: 1,
            owner: 1,
            plan,
            bytes: b"x",
        };
        for _ in 0..SAMPLES - 1 {
            c.judge(&key(1), Duration::from_micros(10), Duration::from_micros(6));
            c.judge(&key(2), Duration::from_micros(10), Duration::from_micros(2));
        }
        assert!(c.pays(1, 1), "not judged before {SAMPLES} samples");
        c.judge(&key(1), Duration::from_micros(10), Duration::from_micros(6));
        c.judge(&key(2), Duration::from_micros(10), Duration::from_micros(2));
        assert!(!c.pays(1, 1), "copies cost 60% of decoding");
        assert!(c.pays(1, 2), "copies cost 20% of decoding");
        assert!(c.pays(1, 3), "a type never kept");
    }

    #[test]
    fn keys_compare_bytes_and_the_oldest_go_first() {
        let mut c = Cache::default();
        let key = |hash, bytes| Key {
            hash,
            owner: 1,
            plan: 7,
            bytes,
        };
        c.insert(entry(5, b"first", BUDGET / 2));
        // Another key with the same hash replaces it in the index, and the
        // first no longer matches anything.
        c.insert(entry(5, b"other", BUDGET / 4));
        assert!(c.get(&key(5, b"first")).is_none());
        assert!(c.get(&key(5, b"other")).is_some());
        assert!(c.get(&key(5, b"othe")).is_none());
        assert!(c
            .get(&Key {
                plan: 8,
                ..key(5, b"other")
            })
            .is_none());
        // Past the budget the oldest entry goes; the other stays indexed.
        c.insert(entry(9, b"third", BUDGET / 2));
        assert_eq!(c.entries.len(), 2);
        assert!(c.get(&key(5, b"other")).is_some());
        assert!(c.get(&key(9, b"third")).is_some());
        assert_eq!(c.used, BUDGET / 4 + BUDGET / 2);
        c.insert(entry(11, b"huge", BUDGET + 1));
        assert!(c.get(&key(11, b"huge")).is_none());
    }
}

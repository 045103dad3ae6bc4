//! Reuse of SHA-256 work across the values a thread hashes.
//!
//! - Byte-identical field values: consecutive revisions of an object repeat
//!   most of their fields (an unchanged `spec` across status updates), and
//!   objects share whole fields (the same tolerations on every pod): a
//!   per-thread, bounded map from a field's path and bytes to their digest
//!   answers those without hashing again ([`sha256`]).
//! - Shared prefixes of whole values: a revision's raw value and canonical
//!   JSON mostly repeat the same key's revision before it up to what
//!   changed, often `status`, which sorts and is written last. The state
//!   of the hash after each [`STRIDE`] bytes of the last two values is kept,
//!   and a value that begins with the same bytes resumes from there
//!   ([`sha256_resuming`]).
//!
//! Exact either way: a hit compares the bytes, so a digest is always that
//! of the bytes given.

use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// foldhash: the map is looked up for every long field of every revision.
type Fast = hashbrown::DefaultHashBuilder;
/// A field's bytes and their digest.
type Digested = (Box<[u8]>, [u8; 32]);

/// Values shorter than this are hashed directly: looking them up costs more.
pub const MIN_BYTES: usize = 256;
/// Bytes of values each thread keeps; past it the map starts over. A data
/// file is read key by key, so repeats come soon: 16 MiB ran no faster.
const BUDGET: usize = 8 << 20;

#[derive(Default)]
struct Reuse {
    /// Cheap fingerprint (path, length, first and last bytes) → bytes, digest.
    map: HashMap<u64, Digested, Fast>,
    bytes: usize,
    state: Fast,
}

thread_local! {
    static REUSE: RefCell<Reuse> = RefCell::new(Reuse::default());
}

fn fingerprint(state: &Fast, path: &str, bytes: &[u8]) -> u64 {
    let mut h = state.build_hasher();
    path.hash(&mut h);
    bytes.len().hash(&mut h);
    bytes[..16.min(bytes.len())].hash(&mut h);
    bytes[bytes.len().saturating_sub(16)..].hash(&mut h);
    h.finish()
}

/// The SHA-256 of `bytes`, the value of the field at `path`.
pub fn sha256(path: &str, bytes: &[u8]) -> [u8; 32] {
    if bytes.len() < MIN_BYTES {
        return Sha256::digest(bytes).into();
    }
    REUSE.with(|r| {
        let mut r = r.borrow_mut();
        let key = fingerprint(&r.state, path, bytes);
        if let Some((stored, digest)) = r.map.get(&key) {
            if **stored == *bytes {
                return *digest;
            }
        }
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        if r.bytes + bytes.len() > BUDGET {
            r.map.clear();
            r.bytes = 0;
        }
        r.bytes += bytes.len();
        if let Some((old, _)) = r.map.insert(key, (bytes.into(), digest)) {
            r.bytes -= old.len();
        }
        digest
    })
}

/// Bytes between kept states of a value's hash: a multiple of SHA-256's
/// 64-byte block. A state is 112 bytes, so keeping one per 4 KiB costs
/// under 3% of the value's own copy.
const STRIDE: usize = 4096;

/// A value hashed before, with the state of its hash after each stride.
#[derive(Default)]
struct Hashed {
    bytes: Vec<u8>,
    /// `states[i]`: the state after `bytes[..(i + 1) * STRIDE]`.
    states: Vec<Sha256>,
}

impl Hashed {
    /// How many whole strides `bytes` shares with this value.
    fn shared_strides(&self, bytes: &[u8]) -> usize {
        let mut n = 0;
        while n < self.states.len()
            && (n + 1) * STRIDE <= bytes.len()
            && self.bytes[n * STRIDE..(n + 1) * STRIDE] == bytes[n * STRIDE..(n + 1) * STRIDE]
        {
            n += 1;
        }
        n
    }

    /// The SHA-256 of `bytes`, resumed after its first `shared` strides,
    /// which this value has; this value becomes `bytes`.
    fn rehash(&mut self, bytes: &[u8], shared: usize) -> [u8; 32] {
        self.states.truncate(shared);
        let mut hash = self.states.last().cloned().unwrap_or_default();
        let mut at = shared * STRIDE;
        while at + STRIDE <= bytes.len() {
            hash.update(&bytes[at..at + STRIDE]);
            self.states.push(hash.clone());
            at += STRIDE;
        }
        hash.update(&bytes[at..]);
        self.bytes.truncate(shared * STRIDE);
        self.bytes.extend_from_slice(&bytes[shared * STRIDE..]);
        hash.finalize().into()
    }
}

/// The last two values each thread hashed with [`sha256_resuming`], the
/// most recent first: a worker alternates a revision's raw value and its
/// canonical JSON.
#[derive(Default)]
struct Recent([Hashed; 2]);

thread_local! {
    static RECENT: RefCell<Recent> = RefCell::new(Recent::default());
}

/// The SHA-256 of `bytes`, a whole value, resumed from the hash of an
/// earlier value on this thread that begins with the same bytes. A value
/// under two strides is hashed directly and not kept.
pub fn sha256_resuming(bytes: &[u8]) -> [u8; 32] {
    if bytes.len() < 2 * STRIDE {
        return Sha256::digest(bytes).into();
    }
    RECENT.with_borrow_mut(|Recent(recent)| {
        let shared = recent.each_ref().map(|h| h.shared_strides(bytes));
        // Resume from the one sharing more; with nothing shared, replace
        // the older one.
        let from = usize::from(shared[1] > shared[0] || (shared[0] == 0 && shared[1] == 0));
        let digest = recent[from].rehash(bytes, shared[from]);
        if from == 1 {
            recent.swap(0, 1);
        }
        digest
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_digests_are_the_digests() {
        let a = vec![7u8; 1000];
        let mut b = a.clone();
        b[500] = 8; // same length, first and last bytes: only the bytes differ
        for _ in 0..2 {
            assert_eq!(sha256("spec", &a), <[u8; 32]>::from(Sha256::digest(&a)));
            assert_eq!(sha256("spec", &b), <[u8; 32]>::from(Sha256::digest(&b)));
        }
        assert_eq!(sha256("x", b"short"), <[u8; 32]>::from(Sha256::digest(b"short")));
    }

    #[test]
    fn resumed_digests_are_the_digests() {
        let plain = |b: &[u8]| <[u8; 32]>::from(Sha256::digest(b));
        let base: Vec<u8> = (0..5 * STRIDE + 100).map(|i| (i * 7 % 251) as u8).collect();
        // Revisions of one value changing late, early, at a stride's edge,
        // growing and shrinking, alternating with another value as raw
        // values and canonical JSON do, and a value of a few strides.
        let mut late = base.clone();
        late[4 * STRIDE + 10] ^= 1;
        let mut early = base.clone();
        early[3] ^= 1;
        let mut edge = base.clone();
        edge[2 * STRIDE] ^= 1;
        let mut longer = base.clone();
        longer.extend_from_slice(&[9; 3 * STRIDE]);
        let shorter = base[..3 * STRIDE].to_vec();
        let other: Vec<u8> = (0..3 * STRIDE + 1).map(|i| (i % 13) as u8).collect();
        let mut other_later = other.clone();
        other_later[3 * STRIDE] = 200;
        // The shared prefix is found, so later revisions resume.
        let mut kept = Hashed::default();
        kept.rehash(&base, 0);
        assert_eq!(kept.shared_strides(&late), 4);
        assert_eq!(kept.shared_strides(&edge), 2);
        assert_eq!(kept.shared_strides(&early), 0);
        assert_eq!(kept.shared_strides(&longer), 5);
        for v in [
            &base,
            &other,
            &late,
            &other_later,
            &early,
            &edge,
            &longer,
            &shorter,
            &base,
            &base[..STRIDE],
        ] {
            assert_eq!(sha256_resuming(v), plain(v), "a value of {} bytes", v.len());
        }
    }
}

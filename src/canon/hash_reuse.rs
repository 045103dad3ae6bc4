//! Reuse of the SHA-256 of byte-identical field values. Consecutive
//! revisions of an object repeat most of their fields (an unchanged `spec`
//! across status updates), and objects share whole fields (the same
//! tolerations on every pod): a per-thread, bounded map from a field's path
//! and bytes to their digest answers those without hashing again. Exact:
//! a hit compares the bytes, so only identical bytes share a digest.

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
}

//! Hashes of stored values. Values of sensitive resources are hashed with
//! HMAC-SHA-256 under a random key kept outside the database, never plain
//! SHA-256: equal values still compare equal under one key, but a leaked
//! database does not let anyone test guesses of a short secret.
//!
//! A key file holds the key as 64 hex digits (what is written, with a
//! newline) or as 32 raw bytes; whitespace around hex digits is ignored.
//! A key is named by its id: the first 8 bytes, in hex, of an HMAC of a
//! fixed label under it, which tells keys apart and says nothing about
//! the key or the values hashed with it.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes in a key.
pub const KEY_LEN: usize = 32;

/// What [`HashKey::id`] hashes.
const ID_LABEL: &[u8] = b"etcd-inspector hash key id";

/// A key for keyed hashes. Its `Debug` shows only its id.
#[derive(Clone, PartialEq, Eq)]
pub struct HashKey([u8; KEY_LEN]);

impl std::fmt::Debug for HashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HashKey({})", self.id())
    }
}

impl HashKey {
    /// A new random key.
    pub fn random() -> Result<HashKey, getrandom::Error> {
        let mut key = [0u8; KEY_LEN];
        getrandom::fill(&mut key)?;
        Ok(HashKey(key))
    }

    /// A key of exactly [`KEY_LEN`] bytes; otherwise how many there are.
    pub fn from_bytes(bytes: &[u8]) -> Result<HashKey, usize> {
        <[u8; KEY_LEN]>::try_from(bytes)
            .map(HashKey)
            .map_err(|_| bytes.len())
    }

    /// The key a key file holds (see the module's doc); otherwise how many
    /// bytes it holds.
    pub fn from_file(bytes: &[u8]) -> Result<HashKey, usize> {
        if bytes.len() == KEY_LEN {
            return HashKey::from_bytes(bytes);
        }
        let digits = std::str::from_utf8(bytes).map(str::trim);
        match digits.map(crate::hex::unhex) {
            Ok(Some(key)) => HashKey::from_bytes(&key).map_err(|_| bytes.len()),
            _ => Err(bytes.len()),
        }
    }

    /// What a key file of this key holds.
    pub fn file_text(&self) -> String {
        format!("{}\n", crate::hex::hex(&self.0))
    }

    /// The key's id (see the module's doc).
    pub fn id(&self) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(ID_LABEL);
        crate::hex::hex(&mac.finalize().into_bytes()[..8])
    }

    /// Hashes values under this key.
    pub fn hasher(&self) -> ValueHasher {
        ValueHasher::new(self.0)
    }
}

/// Hashes values under one key.
#[derive(Clone)]
pub struct ValueHasher {
    key: [u8; KEY_LEN],
}

/// Which hash a value got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashKind {
    Sha256,
    HmacSha256,
}

impl HashKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HashKind::Sha256 => "sha256",
            HashKind::HmacSha256 => "hmac-sha256",
        }
    }
}

impl ValueHasher {
    /// A hasher keyed with `key`.
    pub fn new(key: [u8; KEY_LEN]) -> Self {
        ValueHasher { key }
    }

    /// The hash of `value`: HMAC-SHA-256 when `sensitive`, otherwise
    /// SHA-256, resumed where this thread hashed a value beginning with the
    /// same bytes (see [`super::hash_reuse`]).
    pub fn hash(&self, value: &[u8], sensitive: bool) -> (Vec<u8>, HashKind) {
        if sensitive {
            let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key length");
            mac.update(value);
            (mac.finalize().into_bytes().to_vec(), HashKind::HmacSha256)
        } else {
            (
                super::hash_reuse::sha256_resuming(value).to_vec(),
                HashKind::Sha256,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Digest;

    #[test]
    fn sensitive_values_get_a_keyed_hash() {
        let (a, b) = (ValueHasher::new([1; 32]), ValueHasher::new([2; 32]));
        let plain = Sha256::digest(b"hunter2").to_vec();
        assert_eq!(a.hash(b"hunter2", false), (plain.clone(), HashKind::Sha256));
        let (keyed, kind) = a.hash(b"hunter2", true);
        assert_eq!(kind, HashKind::HmacSha256);
        assert_ne!(keyed, plain);
        assert_eq!(a.hash(b"hunter2", true).0, keyed, "stable for one key");
        assert_ne!(b.hash(b"hunter2", true).0, keyed, "each database has its own key");
    }

    #[test]
    fn a_key_file_holds_hex_or_raw_bytes() {
        let key = HashKey::random().unwrap();
        let text = key.file_text();
        assert_eq!((text.len(), text.ends_with('\n')), (65, true));
        assert_eq!(HashKey::from_file(text.as_bytes()), Ok(key.clone()));
        assert_eq!(HashKey::from_file(text.trim().as_bytes()), Ok(key.clone()));
        assert_eq!(HashKey::from_file(&key.0), Ok(key.clone()));
        assert_eq!(HashKey::from_file(&[7; 31]), Err(31));
        assert_eq!(HashKey::from_file(&text.as_bytes()[..40]), Err(40));
        assert_eq!(HashKey::from_file(&[b'z'; 64]), Err(64));
        assert_eq!(HashKey::from_bytes(&[7; 33]), Err(33));
    }

    #[test]
    fn the_id_tells_keys_apart_and_is_not_the_key() {
        let (a, b) = (HashKey([1; 32]), HashKey([2; 32]));
        assert_eq!(a.id(), HashKey([1; 32]).id());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id().len(), 16);
        assert!(!format!("{a:?}").contains(&crate::hex::hex(&a.0)));
    }
}

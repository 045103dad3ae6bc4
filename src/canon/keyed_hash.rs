//! Hashes of stored values. Values of sensitive resources are hashed with
//! HMAC-SHA-256 under a random key created once per database, never plain
//! SHA-256: equal values still compare equal within the database, but a
//! leaked database does not let anyone test guesses of a short secret.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Hashes values for one database.
#[derive(Clone)]
pub struct ValueHasher {
    key: [u8; 32],
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
    /// A hasher keyed with this database's 32-byte key.
    pub fn new(key: [u8; 32]) -> Self {
        ValueHasher { key }
    }

    pub fn hash(&self, value: &[u8], sensitive: bool) -> (Vec<u8>, HashKind) {
        if sensitive {
            let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key length");
            mac.update(value);
            (mac.finalize().into_bytes().to_vec(), HashKind::HmacSha256)
        } else {
            (Sha256::digest(value).to_vec(), HashKind::Sha256)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

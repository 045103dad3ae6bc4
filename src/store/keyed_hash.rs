//! Hashes of stored values. Values of sensitive resources are hashed with
//! HMAC-SHA-256 under a random key created once per database, never plain
//! SHA-256: equal values still compare equal within the database, but a
//! leaked database does not let anyone test guesses of a short secret.

use super::{Store, StoreError};
use hmac::{Hmac, Mac};
use rusqlite::OptionalExtension;
use sha2::{Digest, Sha256};

const SETTING: &str = "value_hmac_key";

/// Hashes values for one database.
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

impl Store {
    /// This database's value hasher, creating its random key on first use.
    pub fn value_hasher(&self) -> Result<ValueHasher, StoreError> {
        let existing: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT value FROM settings WHERE name = ?1", [SETTING], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        let key = match existing {
            Some(k) if k.len() == 32 => k,
            _ => {
                let mut k = vec![0u8; 32];
                getrandom::fill(&mut k).map_err(|e| StoreError::Io {
                    path: self.path.clone(),
                    source: std::io::Error::other(format!("no randomness for the hashing key: {e}")),
                })?;
                self.conn
                    .execute(
                        "INSERT OR REPLACE INTO settings (name, value) VALUES (?1, ?2)",
                        rusqlite::params![SETTING, k],
                    )
                    .map_err(|e| self.err(e))?;
                k
            }
        };
        Ok(ValueHasher {
            key: key.try_into().expect("32 bytes"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_values_get_a_keyed_hash_per_database() {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open_for_writing(&dir.path().join("a.sqlite")).unwrap();
        let b = Store::open_for_writing(&dir.path().join("b.sqlite")).unwrap();
        let (ha, hb) = (a.value_hasher().unwrap(), b.value_hasher().unwrap());
        let plain = Sha256::digest(b"hunter2").to_vec();
        assert_eq!(ha.hash(b"hunter2", false), (plain.clone(), HashKind::Sha256));
        let (keyed, kind) = ha.hash(b"hunter2", true);
        assert_eq!(kind, HashKind::HmacSha256);
        assert_ne!(keyed, plain);
        assert_eq!(ha.hash(b"hunter2", true).0, keyed, "stable within a database");
        assert_eq!(
            a.value_hasher().unwrap().hash(b"hunter2", true).0,
            keyed,
            "the key is kept"
        );
        assert_ne!(
            hb.hash(b"hunter2", true).0,
            keyed,
            "each database has its own key"
        );
    }
}

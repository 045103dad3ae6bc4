//! Bases: the first content of a key stored in full, whose blobs the key's
//! later contents are compressed against ([`super::blob`]). The writer's
//! thread finds each record's base before the record is decoded, so the
//! decode workers can compress against it; a base read back from the
//! database is decompressed only when a worker first needs it.

use super::blob::{unpack, unpacked_size, ZSTD};
use super::prepare::KeyId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A blob in plain form, shared with what made it (no copy of a canonical
/// JSON of tens of kilobytes per key).
pub type Plain = Arc<Vec<u8>>;

/// Bytes of bases kept in memory before the cache is dropped.
const CACHE_BYTES: usize = 16 << 20;

/// One blob of a base, decompressed on first use.
pub struct BaseBlob {
    packed: Option<Vec<u8>>,
    plain: OnceLock<Plain>,
}

impl BaseBlob {
    /// A blob this writer has in plain form.
    pub fn plain(bytes: Plain) -> BaseBlob {
        BaseBlob {
            packed: None,
            plain: OnceLock::from(bytes),
        }
    }

    /// A blob as stored (zstd, without a base).
    pub fn packed(bytes: Vec<u8>) -> BaseBlob {
        BaseBlob {
            packed: Some(bytes),
            plain: OnceLock::new(),
        }
    }

    /// The decompressed blob; empty (compress without a base) when the
    /// stored blob does not decompress.
    pub fn bytes(&self) -> &[u8] {
        self.plain.get_or_init(|| {
            Arc::new(
                self.packed
                    .as_deref()
                    .and_then(|p| unpack(ZSTD, p, None).ok())
                    .unwrap_or_default(),
            )
        })
    }

    /// Memory it holds, or will once decompressed.
    fn size(&self) -> usize {
        match (&self.packed, self.plain.get()) {
            (Some(p), _) => p.len() + unpacked_size(p).unwrap_or(0),
            (None, Some(plain)) => plain.len(),
            (None, None) => 0,
        }
    }
}

/// A key's base: its `semantic_values` row and blobs.
pub struct Base {
    pub id: i64,
    pub canonical: BaseBlob,
    pub fields: BaseBlob,
    pub managed: BaseBlob,
}

impl Base {
    fn size(&self) -> usize {
        self.canonical.size() + self.fields.size() + self.managed.size()
    }
}

/// The bases of recently written keys, bounded in memory.
#[derive(Default)]
pub(crate) struct Bases {
    by_key: HashMap<KeyId, Arc<Base>>,
    bytes: usize,
}

impl Bases {
    /// The key's base: cached, or that of its latest stored content as
    /// `load` reads it.
    pub(crate) fn find<E>(
        &mut self,
        key_id: KeyId,
        load: impl FnOnce(KeyId) -> Result<Option<Base>, E>,
    ) -> Result<Option<Arc<Base>>, E> {
        if let Some(base) = self.by_key.get(&key_id) {
            return Ok(Some(base.clone()));
        }
        Ok(load(key_id)?.map(|base| self.insert(key_id, base)))
    }

    /// Whether the key's base is cached.
    pub(crate) fn holds(&self, key_id: KeyId) -> bool {
        self.by_key.contains_key(&key_id)
    }

    /// Makes `base` the key's base.
    pub(crate) fn insert(&mut self, key_id: KeyId, base: Base) -> Arc<Base> {
        self.bytes += base.size();
        if self.bytes > CACHE_BYTES {
            self.by_key.clear();
            self.bytes = base.size();
        }
        let base = Arc::new(base);
        self.by_key.insert(key_id, base.clone());
        base
    }
}

#[cfg(test)]
mod tests {
    use super::super::blob::pack;
    use super::*;

    #[test]
    fn a_stored_blob_is_decompressed_when_first_used() {
        let plain = br#"{"spec":{"replicas":3}}"#.to_vec();
        let stored = BaseBlob::packed(pack(&plain, &[]));
        assert!(stored.plain.get().is_none());
        assert_eq!(stored.size(), stored.packed.as_ref().unwrap().len() + plain.len());
        assert_eq!(stored.bytes(), plain);
        assert_eq!(BaseBlob::packed(b"not zstd".to_vec()).bytes(), b"");
        assert_eq!(BaseBlob::plain(Arc::new(plain.clone())).bytes(), plain);
    }
}

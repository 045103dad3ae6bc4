//! The live set of a cluster at a revision: each key's newest stored
//! revision at or before it, unless that is a tombstone.

use std::collections::BTreeMap;

/// One live object at a revision.
#[derive(Clone, Debug, Default)]
pub struct LiveObject {
    pub key: String,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub kind: Option<String>,
    pub uid: Option<String>,
    pub mod_revision: i64,
    pub semantic_sha256: Option<Vec<u8>>,
    /// Field path → value hash.
    pub fields: BTreeMap<crate::canon::path::FieldPath, [u8; crate::canon::semantic::FIELD_HASH_LEN]>,
    /// The object's managedFields, when stored.
    pub managed: Option<serde_json::Value>,
    /// The id of the key its keyed hashes are under, if it has any.
    pub hash_key: Option<String>,
    /// The audited request that wrote this revision, when one is known.
    pub written_by: Option<crate::store::audit::WrittenBy>,
}

/// Live objects as they are read, in key order.
pub type LiveIter<'s> = Box<dyn Iterator<Item = Result<LiveObject, crate::store::StoreError>> + 's>;

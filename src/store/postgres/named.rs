//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FIELD_HASH_LEN;
use crate::store::NamedKey;
use crate::store::StoreError;
use std::collections::BTreeMap;

impl Store {
    pub(in crate::store) fn read_keys_named(
        &self,
        _group: &str,
        _resource: &str,
        _namespace: Option<&str>,
        _name: Option<&str>,
        _limit: i64,
    ) -> Result<Vec<NamedKey>, StoreError> {
        Err(self.unported("objects by name"))
    }

    pub(in crate::store) fn read_semantic_fields(
        &self,
        _semantic_sha256: &[u8],
    ) -> Result<BTreeMap<FieldPath, [u8; FIELD_HASH_LEN]>, StoreError> {
        Err(self.unported("field hashes"))
    }

    pub(in crate::store) fn read_uid_live(&self, _uid: &str) -> Result<bool, StoreError> {
        Err(self.unported("owner look-ups"))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::canon::keyed_hash::HashKey;
use crate::store::hash_key::{HashKeyOptions, KeyError, KeyNotice};

impl Store {
    pub(in crate::store) fn load_hash_key(&self, _options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError> {
        Err(self.unported("hash keys"))
    }

    pub(in crate::store) fn hash_key(&self) -> Result<&HashKey, StoreError> {
        self.hash_key.get().ok_or(StoreError::Key(KeyError::NotLoaded))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::canon::path::FieldPath;
use crate::decode::key::ParsedKey;
use crate::store::base::Base;
use crate::store::rows::{ContentRow, RevisionRow, RevisionRows};
use std::path::Path;

/// The rows of one run.
pub(in crate::store) struct PgRows<'s> {
    store: &'s Store,
}

impl<'s> PgRows<'s> {
    pub(in crate::store) fn new(store: &'s Store) -> Self {
        PgRows { store }
    }
}

impl RevisionRows for PgRows<'_> {
    fn location(&self) -> &Path {
        &self.store.path
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn rollback(&mut self) {}

    fn key_id(&mut self, _cluster: i64, _key: &[u8], _names: Option<&ParsedKey>) -> Result<i64, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn path_id(&mut self, _path: &FieldPath) -> Result<i64, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn has_revision(&mut self, _key_id: i64, _mod_revision: i64) -> Result<bool, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn generation_before(&mut self, _key_id: i64, _mod_revision: i64) -> Result<Option<i64>, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn latest_base(&mut self, _key_id: i64) -> Result<Option<Base>, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn insert_content(&mut self, _content: &ContentRow<'_>) -> Result<Option<i64>, StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn insert_revision(&mut self, _revision: &RevisionRow<'_>) -> Result<(), StoreError> {
        Err(self.store.unported("writing revisions"))
    }

    fn insert_clock_mark(&mut self, _cluster: i64, _revision: i64, _at: &str) -> Result<(), StoreError> {
        Err(self.store.unported("writing revisions"))
    }
}

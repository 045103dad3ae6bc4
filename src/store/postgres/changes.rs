//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::object::ObjectRevision;
use crate::store::ClassifyStats;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn classify_pending(&self) -> Result<ClassifyStats, StoreError> {
        Err(self.unported("analyze"))
    }

    pub(in crate::store) fn read_run_cluster(&self, _run: i64) -> Result<Option<i64>, StoreError> {
        Err(self.unported("--run"))
    }

    pub(in crate::store) fn read_key_histories(
        &self,
        _cluster: i64,
        _visit: &mut dyn FnMut(&[ObjectRevision]),
    ) -> Result<(), StoreError> {
        Err(self.unported("analyze"))
    }

    pub(in crate::store) fn read_gaps(&self, _cluster: i64) -> Result<Vec<crate::store::Gap>, StoreError> {
        Err(self.unported("gaps"))
    }
}

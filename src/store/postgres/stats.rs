//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::Scope;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn read_writes_by_class(
        &self,
        _scope: &Scope,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        Err(self.unported("stats"))
    }

    pub(in crate::store) fn read_writes_by_resource(
        &self,
        _scope: &Scope,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        Err(self.unported("stats"))
    }

    pub(in crate::store) fn read_busiest_keys(
        &self,
        _scope: &Scope,
        _limit: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        Err(self.unported("stats"))
    }

    pub(in crate::store) fn read_revision_at_time(
        &self,
        _cluster: Option<i64>,
        _time: &str,
    ) -> Result<Option<i64>, StoreError> {
        Err(self.unported("--at"))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::store::{ResourceUsage, Scope, Usage};

impl Store {
    pub(in crate::store) fn read_resource_usage(
        &self,
        _scope: &Scope,
    ) -> Result<Vec<ResourceUsage>, StoreError> {
        Err(self.unported("stats"))
    }

    pub(in crate::store) fn read_usage(&self, _scope: &Scope, _top: i64) -> Result<Usage, StoreError> {
        Err(self.unported("stats"))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::Pruned;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn prune(
        &self,
        _before: Option<&str>,
        _keep: Option<u32>,
    ) -> Result<Pruned, StoreError> {
        Err(self.unported("prune"))
    }

    pub(in crate::store) fn vacuum(&self) -> Result<(), StoreError> {
        Err(self.unported("prune --vacuum"))
    }
}

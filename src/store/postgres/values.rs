//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::Contents;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn read_contents_of(
        &self,
        _cluster: i64,
        _group: &str,
        _resource: &str,
    ) -> Result<Vec<Contents>, StoreError> {
        Err(self.unported("analyze"))
    }
}

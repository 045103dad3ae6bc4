//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::LiveIter;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn read_live_objects(&self, _cluster: i64, _revision: i64) -> LiveIter<'_> {
        Box::new(std::iter::once(Err(self.unported("diff"))))
    }

    pub(in crate::store) fn read_run_head(&self, _run: i64) -> Result<Option<(i64, i64)>, StoreError> {
        Err(self.unported("--run"))
    }
}

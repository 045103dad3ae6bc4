//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::HistoryRow;
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn read_history(
        &self,
        _key: &[u8],
        _cluster: Option<i64>,
    ) -> Result<Vec<HistoryRow>, StoreError> {
        Err(self.unported("history"))
    }

    pub(in crate::store) fn read_canonical_value(
        &self,
        _semantic_sha256: &[u8],
    ) -> Result<Option<serde_json::Value>, StoreError> {
        Err(self.unported("stored values"))
    }

    pub(in crate::store) fn read_add_diffs(&self, _rows: &mut [HistoryRow]) -> Result<(), StoreError> {
        Err(self.unported("history --diff"))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;

impl Store {
    pub(in crate::store) fn field_config(
        &self,
        _depth: Option<usize>,
        _sensitive: &[FieldPath],
    ) -> Result<FieldConfig, StoreError> {
        Err(self.unported("settings"))
    }
}

//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::audit::{AuditRecorder, AuditStage, AuditedObject, AuditedRequest, JoinKey, JoinSummary};
use crate::store::StoreError;

impl AuditRecorder for Store {
    fn stage_audit(&self, _cluster: i64) -> Result<Box<dyn AuditStage + '_>, StoreError> {
        Err(self.unported("attribute"))
    }

    fn join_audit(&self, _cluster: i64, _join: &JoinKey<'_>) -> Result<JoinSummary, StoreError> {
        Err(self.unported("attribute"))
    }
}

impl Store {
    pub(in crate::store) fn read_audited_requests(
        &self,
        _cluster: i64,
        _visit: &mut dyn FnMut(&AuditedObject, &[AuditedRequest]),
    ) -> Result<(), StoreError> {
        Err(self.unported("reading audit requests"))
    }
}

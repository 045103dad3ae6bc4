//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::StoreError;
use crate::decrypt::policy::Policy;
use crate::source::LiveKey;
use crate::store::{Previous, RunFact, RunId, RunInfo, RunStatus, RunTime, Shortfall};

impl Store {
    pub(in crate::store) fn begin_run(&self, _source: &str, _prefix: &str, _filter: &str) -> Result<RunId, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn previous_head(
        &self,
        _cluster: i64,
        _prefix: &str,
        _filter: &str,
        _everything: &str,
    ) -> Result<Option<Previous>, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn read_encryption_policy(&self, _cluster: i64) -> Result<Option<(Policy, i64)>, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn read_run_times(&self, _cluster: i64) -> Result<Vec<RunTime>, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn history_shortfall(
        &self,
        _cluster: i64,
        _covered_from: i64,
        _live: &[LiveKey],
        _recorded: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Shortfall>, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn live_keys(&self, _cluster: i64, _prefix: &[u8], _head: i64) -> Result<i64, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn record_fact(&self, _run: RunId, _fact: RunFact<'_>) -> Result<(), StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn finish_run(
        &self,
        _run: RunId,
        _status: RunStatus,
        _keys_seen: i64,
        _error: Option<&str>,
    ) -> Result<i64, StoreError> {
        Err(self.unported("runs"))
    }

    pub(in crate::store) fn read_runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        Err(self.unported("runs"))
    }
}

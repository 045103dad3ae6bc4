//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::clock::{AnchorSink, ClockRecorder};
use crate::store::StoreError;

impl Store {
    pub(in crate::store) fn read_revision_by_clock(
        &self,
        _cluster: Option<i64>,
        _time: jiff::Timestamp,
        _after: bool,
    ) -> Result<Option<Option<i64>>, StoreError> {
        Err(self.unported("--at by the cluster's clock"))
    }
}

impl ClockRecorder for Store {
    fn rebuild_clock(
        &self,
        _cluster: i64,
        _gather: &mut dyn FnMut(&mut AnchorSink<'_>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        Err(self.unported("the cluster's clock"))
    }
}

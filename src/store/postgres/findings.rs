//! (Not ported yet: every method says so; see the SQLite module's file of
//! this name for what it does.)

use super::Store;
use crate::store::finding::{FindingCount, Severity};
use crate::store::StoreError;
use crate::store::{FindingIter, FindingQuery, FindingsWriter, Scope};

impl Store {
    pub(in crate::store) fn findings_writer(
        &self,
        _cluster: i64,
        _detectors: &[&str],
    ) -> Result<Box<dyn FindingsWriter + '_>, StoreError> {
        Err(self.unported("analyze"))
    }

    pub(in crate::store) fn read_findings(&self, _query: &FindingQuery) -> FindingIter<'_> {
        Box::new(std::iter::once(Err(self.unported("findings"))))
    }

    pub(in crate::store) fn read_finding_counts(
        &self,
        _scope: &Scope,
        _severity: Option<Severity>,
    ) -> Result<Vec<FindingCount>, StoreError> {
        Err(self.unported("finding counts"))
    }
}

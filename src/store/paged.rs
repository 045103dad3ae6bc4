//! Rows a reader reads a page at a time (findings, live objects), handed
//! out one by one: memory holds one page, and an error ends the rows.

use super::StoreError;
use std::collections::VecDeque;

/// What reads the pages.
pub(super) trait PageSource {
    type Row;
    /// Reads the next page into `page`, which is empty; leaves it empty
    /// when no rows are left.
    fn fill(&mut self, page: &mut VecDeque<Self::Row>) -> Result<(), StoreError>;
}

/// The rows of a [`PageSource`], in order; after an error, none.
pub(super) struct Paged<S: PageSource> {
    source: S,
    page: VecDeque<S::Row>,
    failed: bool,
}

impl<S: PageSource> Paged<S> {
    pub(super) fn new(source: S) -> Self {
        Paged {
            source,
            page: VecDeque::new(),
            failed: false,
        }
    }
}

impl<S: PageSource> Iterator for Paged<S> {
    type Item = Result<S::Row, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.page.is_empty() {
            if let Err(e) = self.source.fill(&mut self.page) {
                self.failed = true;
                self.page.clear();
                return Some(Err(e));
            }
        }
        self.page.pop_front().map(Ok)
    }
}

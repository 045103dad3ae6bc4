//! What a long run shows on a terminal, and the sink that counts records on
//! their way to the store and stops the source when a signal arrived.

use super::signal::stopping;
use crate::source::{Census, Record, Sink};
use crate::store::{RevisionWriter, StoreError};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A spinner with a message on a terminal; nothing otherwise.
pub(super) fn bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"));
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// The store writer, counted and shown, stopping at a signal.
pub(super) struct Progress<'w, 's> {
    pub writer: &'w mut RevisionWriter<'s>,
    pub bar: ProgressBar,
    pub seen: u64,
    /// The newest revision of each key, where the source's own counters are
    /// what the run checks against (a data file).
    pub census: Option<Census>,
}

impl Sink for Progress<'_, '_> {
    type Error = StoreError;

    fn record(&mut self, record: Record) -> Result<bool, StoreError> {
        if stopping() {
            return Ok(false);
        }
        self.seen += 1;
        if let Some(census) = &mut self.census {
            census.observe(&record);
        }
        if self.seen.is_multiple_of(500) {
            self.bar.set_message(format!(
                "{} records read, {} new, at revision {}",
                self.seen, self.writer.added, record.mod_revision
            ));
        }
        self.writer.record(record)
    }
}

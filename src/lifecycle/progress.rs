//! What a long run shows on a terminal (a spinner while the end is unknown,
//! a bar with percentage, rate and ETA for each phase whose end is known),
//! and the sink that counts records on their way to the store and stops the
//! source when a signal arrived.

use super::signal::stopping;
use super::RevisionWriter;
use crate::source::{Census, Record, Revision, Sink};
use crate::store::StoreError;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

/// The bar on the terminal, if one is shown: log lines suspend it.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// A spinner with a message on a terminal; nothing otherwise.
pub(super) fn bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    spinning(&bar);
    bar.enable_steady_tick(Duration::from_millis(120));
    *SHOWN.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar.clone());
    bar
}

/// Runs `f` (which writes to standard error) with the bar shown on the
/// terminal, if any, cleared for it and drawn again after.
pub fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match shown.filter(|b| !b.is_finished()) {
        Some(bar) => bar.suspend(f),
        None => f(),
    }
}

/// Back to a spinner: the next phase's end is not known.
pub(super) fn spinning(bar: &ProgressBar) {
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"));
}

/// What a phase counts.
#[derive(Clone, Copy, Debug)]
pub(super) enum Unit {
    Bytes,
    Revisions,
}

/// Turns the spinner into a bar for a phase of `len` units.
pub(super) fn phase(bar: &ProgressBar, what: String, len: u64, unit: Unit) {
    let template = match unit {
        Unit::Bytes => "{msg} [{wide_bar}] {percent}% {bytes}/{total_bytes}, {bytes_per_sec}, ETA {eta}",
        Unit::Revisions => {
            "{msg} [{wide_bar}] {percent}% {human_pos}/{human_len} revisions, {per_sec}, ETA {eta}"
        }
    };
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    bar.set_length(len);
    bar.set_position(0);
    bar.set_message(what);
}

/// The store writer, counted and shown, stopping at a signal.
pub(super) struct Progress<'w, 's> {
    pub writer: &'w mut RevisionWriter<'s>,
    pub bar: ProgressBar,
    pub seen: u64,
    /// The newest revision of each key, where the source's own counters are
    /// what the run checks against (a data file).
    pub census: Option<Census>,
    /// How far the bar shows the read is.
    pub position: Position,
}

/// What a run's bar counts.
pub(super) enum Position {
    /// Nothing: the end is unknown, the message counts records.
    Unknown,
    /// Revisions since this one, read in revision order.
    Revision(Revision),
    /// Records read, in any order.
    Records,
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
            match self.position {
                Position::Revision(origin) => self
                    .bar
                    .set_position((record.mod_revision.0 - origin.0).max(0) as u64),
                Position::Records => self.bar.set_position(self.seen),
                Position::Unknown => self.bar.set_message(format!(
                    "{} records read, {} new, at revision {}",
                    self.seen, self.writer.added, record.mod_revision
                )),
            }
        }
        self.writer.record(record)
    }
}

//! What a classification pass did, and the classification of one key's
//! history, which both backends run on the rows they read.

use crate::canon::change::{classify, Facts};
use crate::canon::managed::{attribute, entries, Entry};
use crate::store::blob::Packed;
use crate::store::StoreError;

/// What a classification pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassifyStats {
    /// Revisions that got a change class.
    pub classified: i64,
    /// Rows the pass read: each revision of the keys involved, once.
    pub rows_read: i64,
}

/// One revision as the classification pass sees it.
pub(super) struct Revision {
    pub mod_revision: i64,
    pub create_revision: i64,
    pub facts: Facts,
    /// Whether it has no change class yet.
    pub pending: bool,
    /// Compressed `managedFields` JSON of the revision's content.
    pub managed: Packed,
}

impl Revision {
    /// Its managedFields entries; none when the content has no
    /// managedFields.
    fn entries(&self, damaged: &dyn Fn(std::io::Error) -> StoreError) -> Result<Vec<Entry>, StoreError> {
        Ok(match self.managed.json().map_err(damaged)? {
            Some(v) => entries(&v),
            None => Vec::new(),
        })
    }
}

/// What the pass stores for one revision: its change class and cause, and
/// (as JSON) its changed paths and the field managers behind them.
pub(super) struct Classified {
    pub mod_revision: i64,
    pub class: &'static str,
    pub cause: Option<&'static str>,
    pub changed_paths: Option<String>,
    pub changed_by: Option<String>,
}

/// Classifies the pending revisions of one key's history (oldest first),
/// each against the previous revision of its key generation, and gives
/// each to `write`; the number written. `damaged` names a stored
/// managedFields blob that does not read.
pub(super) fn classify_history(
    rows: &[Revision],
    damaged: &dyn Fn(std::io::Error) -> StoreError,
    write: &mut dyn FnMut(Classified) -> Result<(), StoreError>,
) -> Result<i64, StoreError> {
    let mut written = 0;
    let mut prev: Option<&Revision> = None;
    for row in rows {
        if row.pending {
            let same_generation = prev.filter(|p| p.create_revision == row.create_revision);
            let change = classify(same_generation.map(|p| &p.facts), &row.facts);
            let changed_paths = (!change.changed_paths.is_empty())
                .then(|| serde_json::to_string(&change.changed_paths).expect("JSON"));
            let changed_by = match same_generation.filter(|_| !change.changed_paths.is_empty()) {
                Some(p) => Some(attribute(
                    &p.entries(damaged)?,
                    &row.entries(damaged)?,
                    &change.changed_paths,
                ))
                .filter(|by| !by.is_empty())
                .map(|by| serde_json::to_string(&by).expect("JSON")),
                None => None,
            };
            write(Classified {
                mod_revision: row.mod_revision,
                class: change.class.as_str(),
                cause: change.cause.map(|c| c.as_str()),
                changed_paths,
                changed_by,
            })?;
            written += 1;
        }
        prev = Some(row);
    }
    Ok(written)
}

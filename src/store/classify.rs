//! What a classification pass did, and the classification of one key's
//! history, which both backends run on the rows they read.

use crate::canon::change::{classify, Facts};
use crate::canon::managed::{attribute, entries, Entry};
use crate::ingest::blob::Packed;
use crate::source::Revision;
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
pub(super) struct PassRevision {
    pub mod_revision: Revision,
    pub create_revision: Revision,
    pub facts: Facts,
    /// Whether it has no change class yet.
    pub pending: bool,
    /// Compressed `managedFields` JSON of the revision's content.
    pub managed: Packed,
}

impl PassRevision {
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
    pub mod_revision: Revision,
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
    rows: &[PassRevision],
    damaged: &dyn Fn(std::io::Error) -> StoreError,
    write: &mut dyn FnMut(Classified) -> Result<(), StoreError>,
) -> Result<i64, StoreError> {
    let mut written = 0;
    let mut prev: Option<&PassRevision> = None;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canon::path::FieldPath;

    /// A revision of a key generation created at `create`, whose `spec`
    /// hashes to `spec`, written by `manager`'s managedFields entry.
    fn revision(mod_revision: i64, create: i64, pending: bool, spec: u8, manager: &str) -> PassRevision {
        let managed = serde_json::json!([{"manager": manager, "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]);
        PassRevision {
            mod_revision: Revision(mod_revision),
            create_revision: Revision(create),
            facts: Facts {
                version: mod_revision - create + 1,
                value_hash: Some(vec![mod_revision as u8]),
                semantic_hash: Some(vec![spec]),
                fields: Some([(FieldPath::parse("spec").unwrap(), [spec; 16])].into()),
                ..Facts::default()
            },
            pending,
            managed: Packed {
                codec: Some(crate::ingest::blob::ZSTD.into()),
                blob: Some(crate::ingest::blob::pack(managed.to_string().as_bytes(), &[])),
                base: None,
            },
        }
    }

    /// Only pending revisions are written; each is compared with the one
    /// before it when that is of its generation (classified or not), and a
    /// recreated key starts over.
    #[test]
    fn pending_revisions_are_classified_against_their_generation() {
        let rows = [
            revision(2, 2, false, 1, "a"),
            revision(3, 2, true, 2, "b"),
            revision(4, 2, true, 2, "b"),
            revision(5, 5, true, 3, "c"),
        ];
        let mut written = Vec::new();
        let n = classify_history(&rows, &|e| panic!("{e}"), &mut |c| {
            written.push((c.mod_revision, c.class, c.cause, c.changed_paths, c.changed_by));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            written,
            [
                (
                    Revision(3),
                    "spec",
                    None,
                    Some(r#"["spec"]"#.into()),
                    Some(r#"{"spec":["b"]}"#.into())
                ),
                (Revision(4), "encoding-only", Some("serialization"), None, None),
                (Revision(5), "create", None, None, None),
            ]
        );
    }
}

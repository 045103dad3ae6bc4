//! Per-database settings, whichever backend keeps them: choices fixed when
//! the database is first used (how field hashes are taken).

use crate::canon::path::FieldPath;
use crate::canon::semantic::{FieldConfig, Sensitivity, DEFAULT_DEPTH};
use crate::store::StoreError;
use std::path::Path;

pub(super) const FIELD_DEPTH: &str = "field_depth";
pub(super) const SENSITIVE_PATHS: &str = "sensitive_paths";

/// A backend's `settings` rows.
pub(super) trait Settings {
    /// The database, for errors that name it.
    fn location(&self) -> &Path;
    fn setting(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;
    fn set_setting(&self, name: &str, value: &[u8]) -> Result<(), StoreError>;
    /// The sensitive paths as an older schema spelled them, when it did:
    /// repeating them is not a change.
    fn legacy_sensitive(&self) -> Result<Option<Vec<FieldPath>>, StoreError> {
        Ok(None)
    }
}

/// How this database takes field hashes. The first run fixes it (from
/// `depth` and `sensitive`, or the defaults); later runs may repeat the
/// same choice but not change it, since hashes taken differently do not
/// compare.
pub(super) fn field_config(
    db: &dyn Settings,
    depth: Option<usize>,
    sensitive: &[FieldPath],
) -> Result<FieldConfig, StoreError> {
    let damaged = |column: &str, what: String| StoreError::Damaged {
        path: db.location().to_path_buf(),
        what: format!("settings.{column}: {what}"),
    };
    let stored_depth: Option<usize> = db
        .setting(FIELD_DEPTH)?
        .map(|v| {
            let text = String::from_utf8_lossy(&v);
            text.parse()
                .map_err(|_| damaged(FIELD_DEPTH, format!("{text:?} is not a depth")))
        })
        .transpose()?;
    let stored_paths: Option<Vec<FieldPath>> = db
        .setting(SENSITIVE_PATHS)?
        .map(|v| {
            serde_json::from_slice(&v).map_err(|_| {
                let text = String::from_utf8_lossy(&v);
                damaged(SENSITIVE_PATHS, format!("{text:?} is not a list of paths"))
            })
        })
        .transpose()?;
    let conflict = |what: String| StoreError::Conflict {
        path: db.location().to_path_buf(),
        message: what,
    };
    let depth = match (stored_depth, depth) {
        (Some(s), Some(d)) if s != d => {
            return Err(conflict(format!(
                "takes field hashes to depth {s}; --field-depth {d} would not compare"
            )))
        }
        (Some(s), _) => s,
        (None, d) => {
            let d = d.unwrap_or(DEFAULT_DEPTH);
            db.set_setting(FIELD_DEPTH, d.to_string().as_bytes())?;
            d
        }
    };
    let mut wanted: Vec<FieldPath> = sensitive.to_vec();
    wanted.sort();
    wanted.dedup();
    let paths = match stored_paths {
        Some(s) if !wanted.is_empty() && s != wanted && db.legacy_sensitive()?.as_ref() != Some(&wanted) => {
            return Err(conflict(format!(
                "treats {} as sensitive; --sensitive-path cannot change that",
                s.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
            )))
        }
        Some(s) => s,
        None => {
            db.set_setting(SENSITIVE_PATHS, &serde_json::to_vec(&wanted).expect("JSON"))?;
            wanted
        }
    };
    Ok(FieldConfig {
        depth,
        sensitivity: Sensitivity { paths },
    })
}

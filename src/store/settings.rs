//! Per-database settings (the `settings` table), written once over
//! [`Sql`]: choices fixed when the database is first used (how field
//! hashes are taken).

use super::recorder::FieldConfigs;
use super::sql::{first_row, Sql};
use super::tables::Cell;
use crate::canon::path::FieldPath;
use crate::canon::semantic::{FieldConfig, Sensitivity, DEFAULT_DEPTH};
use crate::store::StoreError;

pub(super) const FIELD_DEPTH: &str = "field_depth";
pub(super) const SENSITIVE_PATHS: &str = "sensitive_paths";
/// The sensitive paths as the user gave them before stored paths were
/// rewritten (SQLite's migration 0014), so that repeating them is not a
/// change.
pub(super) const LEGACY_SENSITIVE_PATHS: &str = "sensitive_paths_legacy";

fn setting(db: &(impl Sql + ?Sized), name: &str) -> Result<Option<Vec<u8>>, StoreError> {
    first_row(
        db,
        "settings",
        "SELECT value FROM settings WHERE name = $1",
        &[Cell::Text(name.to_string())],
        |c| c.bytes("value"),
    )
}

fn set_setting(db: &(impl Sql + ?Sized), name: &str, value: &[u8]) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO settings (name, value) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        &[Cell::Text(name.to_string()), Cell::Bytes(value.to_vec())],
    )
    .map(drop)
}

/// The sensitive paths as an older schema spelled them, when it did.
fn legacy_sensitive(db: &(impl Sql + ?Sized)) -> Result<Option<Vec<FieldPath>>, StoreError> {
    setting(db, LEGACY_SENSITIVE_PATHS)?
        .map(|v| {
            serde_json::from_slice(&v).map_err(|e| db.typed("settings").damage(LEGACY_SENSITIVE_PATHS, e))
        })
        .transpose()
}

impl<T: Sql + ?Sized> FieldConfigs for T {
    fn field_config(&self, depth: Option<usize>, sensitive: &[FieldPath]) -> Result<FieldConfig, StoreError> {
        field_config(self, depth, sensitive)
    }
}

/// How this database takes field hashes. The first run fixes it (from
/// `depth` and `sensitive`, or the defaults); later runs may repeat the
/// same choice but not change it, since hashes taken differently do not
/// compare.
fn field_config(
    db: &(impl Sql + ?Sized),
    depth: Option<usize>,
    sensitive: &[FieldPath],
) -> Result<FieldConfig, StoreError> {
    let damaged = |column: &str, what: String| db.typed("settings").damage(column, what);
    let stored_depth: Option<usize> = setting(db, FIELD_DEPTH)?
        .map(|v| {
            let text = String::from_utf8_lossy(&v);
            text.parse()
                .map_err(|_| damaged(FIELD_DEPTH, format!("{text:?} is not a depth")))
        })
        .transpose()?;
    let stored_paths: Option<Vec<FieldPath>> = setting(db, SENSITIVE_PATHS)?
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
            set_setting(db, FIELD_DEPTH, d.to_string().as_bytes())?;
            d
        }
    };
    let mut wanted: Vec<FieldPath> = sensitive.to_vec();
    wanted.sort();
    wanted.dedup();
    let paths = match stored_paths {
        Some(s) if !wanted.is_empty() && s != wanted && legacy_sensitive(db)?.as_ref() != Some(&wanted) => {
            return Err(conflict(format!(
                "treats {} as sensitive; --sensitive-path cannot change that",
                s.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
            )))
        }
        Some(s) => s,
        None => {
            set_setting(db, SENSITIVE_PATHS, &serde_json::to_vec(&wanted).expect("JSON"))?;
            wanted
        }
    };
    Ok(FieldConfig {
        depth,
        sensitivity: Sensitivity { paths },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::{damage, Store};

    #[test]
    fn field_settings_are_fixed_by_the_first_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_for_writing(&dir.path().join("a.sqlite")).unwrap();
        let token = FieldPath::fields(["spec", "token"]);
        let first = store.field_config(Some(3), std::slice::from_ref(&token)).unwrap();
        assert_eq!((first.depth, first.sensitivity.paths.clone()), (3, vec![token]));
        assert_eq!(store.field_config(None, &[]).unwrap().depth, 3);
        assert!(store.field_config(Some(2), &[]).is_err());
        assert!(store
            .field_config(None, &[FieldPath::fields(["data", "x"])])
            .is_err());
    }

    #[test]
    fn settings_that_do_not_parse_are_damage() {
        for (name, value, column) in [
            (FIELD_DEPTH, &b"deep"[..], "settings.field_depth"),
            (SENSITIVE_PATHS, &b"spec.token"[..], "settings.sensitive_paths"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db.sqlite");
            let store = Store::open_for_writing(&path).unwrap();
            store.field_config(None, &[]).unwrap();
            damage(
                &path,
                &format!(
                    "UPDATE settings SET value = x'{}' WHERE name = '{name}'",
                    crate::hex::hex(value)
                ),
            );
            let e = store.field_config(None, &[]).unwrap_err().to_string();
            assert!(
                e.contains(column) && e.contains(&String::from_utf8_lossy(value).into_owned()),
                "{e}"
            );
        }
    }
}

//! Per-database settings: choices fixed when the database is first used.

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::{FieldConfig, Sensitivity, DEFAULT_DEPTH};
use crate::store::StoreError;
use rusqlite::OptionalExtension;

const FIELD_DEPTH: &str = "field_depth";
const SENSITIVE_PATHS: &str = "sensitive_paths";

impl Store {
    fn setting(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .query_row("SELECT value FROM settings WHERE name = ?1", [name], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn set_setting(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO settings (name, value) VALUES (?1, ?2)",
                rusqlite::params![name, value],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

impl Store {
    /// The sensitive paths as given before stored paths were rewritten
    /// (migration 0014): repeating them is not a change.
    fn legacy_sensitive(&self) -> Result<Option<Vec<FieldPath>>, StoreError> {
        match self.setting(super::legacy_paths::LEGACY_SENSITIVE_PATHS)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| self.damaged("settings.sensitive_paths_legacy", e)),
        }
    }

    /// How this database takes field hashes. The first run fixes it (from
    /// `depth` and `sensitive`, or the defaults); later runs may repeat the
    /// same choice but not change it, since hashes taken differently do not
    /// compare.
    pub(in crate::store) fn field_config(
        &self,
        depth: Option<usize>,
        sensitive: &[FieldPath],
    ) -> Result<FieldConfig, StoreError> {
        let stored_depth: Option<usize> = self
            .setting(FIELD_DEPTH)?
            .map(|v| {
                let text = String::from_utf8_lossy(&v);
                text.parse()
                    .map_err(|_| self.damaged("settings.field_depth", format!("{text:?} is not a depth")))
            })
            .transpose()?;
        let stored_paths: Option<Vec<FieldPath>> = self
            .setting(SENSITIVE_PATHS)?
            .map(|v| {
                serde_json::from_slice(&v).map_err(|_| {
                    let text = String::from_utf8_lossy(&v);
                    self.damaged(
                        "settings.sensitive_paths",
                        format!("{text:?} is not a list of paths"),
                    )
                })
            })
            .transpose()?;
        let conflict = |what: String| StoreError::Conflict {
            path: self.path.clone(),
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
                self.set_setting(FIELD_DEPTH, d.to_string().as_bytes())?;
                d
            }
        };
        let mut wanted: Vec<FieldPath> = sensitive.to_vec();
        wanted.sort();
        wanted.dedup();
        let paths = match stored_paths {
            Some(s)
                if !wanted.is_empty()
                    && s != wanted
                    && self.legacy_sensitive()?.as_ref() != Some(&wanted) =>
            {
                return Err(conflict(format!(
                    "treats {} as sensitive; --sensitive-path cannot change that",
                    s.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
                )))
            }
            Some(s) => s,
            None => {
                self.set_setting(SENSITIVE_PATHS, &serde_json::to_vec(&wanted).expect("JSON"))?;
                wanted
            }
        };
        Ok(FieldConfig {
            depth,
            sensitivity: Sensitivity { paths },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            super::super::damage(
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

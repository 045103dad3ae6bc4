//! Per-database settings in SQLite's `settings` table; what they mean is
//! [`crate::store::settings`]'s.

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::store::settings::{field_config, Settings};
use crate::store::StoreError;
use rusqlite::OptionalExtension;
use std::path::Path;

impl Settings for Store {
    fn location(&self) -> &Path {
        &self.path
    }

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

    /// The sensitive paths as given before stored paths were rewritten
    /// (migration 0014).
    fn legacy_sensitive(&self) -> Result<Option<Vec<FieldPath>>, StoreError> {
        match self.setting(super::legacy_paths::LEGACY_SENSITIVE_PATHS)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| self.damaged("settings.sensitive_paths_legacy", e)),
        }
    }
}

impl crate::store::recorder::FieldConfigs for Store {
    fn field_config(&self, depth: Option<usize>, sensitive: &[FieldPath]) -> Result<FieldConfig, StoreError> {
        field_config(self, depth, sensitive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::recorder::FieldConfigs;
    use crate::store::settings::{FIELD_DEPTH, SENSITIVE_PATHS};

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

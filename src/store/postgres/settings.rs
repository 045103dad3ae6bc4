//! Per-database settings in the `settings` table; what they mean is
//! [`crate::store::settings`]'s.

use super::Store;
use crate::canon::path::FieldPath;
use crate::canon::semantic::FieldConfig;
use crate::store::settings::{field_config, Settings};
use crate::store::StoreError;
use std::path::Path;

impl Settings for Store {
    fn location(&self) -> &Path {
        &self.path
    }

    fn setting(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .query_opt("SELECT value FROM settings WHERE name = $1", &[&name])?
            .map(|r| r.get(0)))
    }

    fn set_setting(&self, name: &str, value: &[u8]) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            &[&name, &value],
        )?;
        Ok(())
    }
}

impl crate::store::recorder::FieldConfigs for Store {
    fn field_config(&self, depth: Option<usize>, sensitive: &[FieldPath]) -> Result<FieldConfig, StoreError> {
        field_config(self, depth, sensitive)
    }
}

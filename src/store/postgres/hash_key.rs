//! The key of keyed hashes for a PostgreSQL database: as for SQLite (see
//! [`crate::store::hash_key`]), kept outside the database, in the file the
//! user names (`--hash-key-file`, a mounted Secret in a fleet) or else in
//! `$XDG_CONFIG_HOME/etcd-inspector/keys/<address>-<port>-<database>.key`
//! (the server's address as it sees the connection)
//! (`~/.config/...` without it), since a server has no directory beside it.

use super::Store;
use crate::canon::keyed_hash::HashKey;
use crate::store::hash_key::{load, HashKeyOptions, KeyError, KeyNotice, KeyRecords};
use crate::store::StoreError;
use std::path::{Path, PathBuf};

impl KeyRecords for Store {
    fn location(&self) -> &Path {
        &self.path
    }

    fn default_file(&self) -> PathBuf {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = config.join("etcd-inspector").join("keys");
        // Created private; a failure shows when the key is written.
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        let _ = builder.create(&dir);
        dir.join(format!("{}.key", self.server))
    }

    fn newest_key_id(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .query_opt(
                "SELECT hash_key FROM runs WHERE hash_key IS NOT NULL ORDER BY id DESC LIMIT 1",
                &[],
            )?
            .map(|r| r.get(0)))
    }
}

impl crate::store::recorder::HashKeyLoad for Store {
    fn load_hash_key(&self, options: &HashKeyOptions) -> Result<Option<KeyNotice>, StoreError> {
        let (key, notice) = load(self, options)?;
        let _ = self.hash_key.set(key);
        Ok(notice)
    }

    fn hash_key(&self) -> Result<&HashKey, StoreError> {
        self.hash_key.get().ok_or(StoreError::Key(KeyError::NotLoaded))
    }
}

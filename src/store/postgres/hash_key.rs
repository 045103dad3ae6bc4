//! The key of keyed hashes for a PostgreSQL database: as for SQLite (see
//! [`crate::store::hash_key`]), kept outside the database, in the file the
//! user names (`--hash-key-file`, a mounted Secret in a fleet) or else in
//! `$XDG_CONFIG_HOME/etcd-inspector/keys/<address>-<port>-<database>.key`
//! (the server's address as it sees the connection)
//! (`~/.config/...` without it), since a server has no directory beside it.

use super::Store;
use crate::canon::keyed_hash::HashKey;
use crate::store::hash_key::KeyRecords;
use std::cell::OnceCell;
use std::path::PathBuf;

impl KeyRecords for Store {
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

    fn loaded_key(&self) -> &OnceCell<HashKey> {
        &self.hash_key
    }
}

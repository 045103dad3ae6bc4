//! Which backend a `--db` names, and the open database behind one type:
//! a PostgreSQL URI (`postgresql://` or `postgres://`) or else a SQLite
//! file path. Commands hold a [`Store`] and call the backend's traits
//! through it, never a backend's own type.

use super::{Backend, StoreError};
use std::path::Path;

/// An open database of either backend.
pub struct Store(Box<dyn Backend>);

impl std::ops::Deref for Store {
    type Target = dyn Backend;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl Store {
    /// Opens (creating it when needed) the database to write runs into;
    /// a second writer of the same database fails clearly.
    pub fn open_for_writing(db: &Path) -> Result<Store, StoreError> {
        if let Some(uri) = uri(db) {
            return Ok(Store(Box::new(super::postgres::Store::open_for_writing(uri)?)));
        }
        Ok(Store(Box::new(super::sqlite::Store::open_for_writing(db)?)))
    }

    /// Opens an existing database to change it (`analyze`, `prune`,
    /// `attribute`): a missing one is an error, not a new empty database.
    pub fn open_existing_for_writing(db: &Path) -> Result<Store, StoreError> {
        if let Some(uri) = uri(db) {
            return Ok(Store(Box::new(
                super::postgres::Store::open_existing_for_writing(uri)?,
            )));
        }
        Ok(Store(Box::new(super::sqlite::Store::open_existing_for_writing(
            db,
        )?)))
    }

    /// Opens an existing database to read it.
    pub fn open_for_reading(db: &Path) -> Result<Store, StoreError> {
        if let Some(uri) = uri(db) {
            return Ok(Store(Box::new(super::postgres::Store::open_for_reading(uri)?)));
        }
        Ok(Store(Box::new(super::sqlite::Store::open_for_reading(db)?)))
    }
}

/// The PostgreSQL URI `db` is, if it is one.
fn uri(db: &Path) -> Option<&str> {
    db.to_str().filter(|s| super::postgres::is_uri(s))
}

/// Where a run keeps a scratch file of `name` (a downloaded snapshot):
/// beside a SQLite database, on the file system it already fills; in the
/// temporary directory for a server, which has no directory of its own.
pub fn scratch_file(db: &Path, name: &str) -> std::path::PathBuf {
    match uri(db) {
        Some(_) => std::env::temp_dir().join(format!("etcd-inspector-{}.{name}", std::process::id())),
        None => std::path::PathBuf::from(format!("{}.{name}", db.display())),
    }
}

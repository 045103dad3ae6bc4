//! SQLite's values as [`Cell`]s and back, for the statements written once
//! over [`crate::store::sql::Sql`].

use crate::store::tables::Cell;
use crate::store::{ClusterId, KeyId, StoreError};
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::path::Path;

/// A cell as a statement's parameter, borrowed.
impl rusqlite::ToSql for Cell {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Cell::Null => ValueRef::Null,
            Cell::Int(n) => ValueRef::Integer(*n),
            Cell::Text(t) => ValueRef::Text(t.as_bytes()),
            Cell::Bytes(b) => ValueRef::Blob(b),
        }))
    }
}

/// A stored value as a [`Cell`]; a real number is no value of ours.
pub(super) fn cell(path: &Path, table: &str, column: &str, value: ValueRef<'_>) -> Result<Cell, StoreError> {
    Ok(match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(n) => Cell::Int(n),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
        ValueRef::Real(r) => {
            return Err(StoreError::Damaged {
                path: path.to_path_buf(),
                what: format!("{table}.{column}: {r} is not an integer"),
            })
        }
    })
}

/// A cluster's row id as a statement's parameter.
impl rusqlite::ToSql for ClusterId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0))
    }
}

/// A key's row id as a statement's parameter.
impl rusqlite::ToSql for KeyId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.0))
    }
}

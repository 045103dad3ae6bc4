//! SQLite's values as [`Cell`]s and back, for the statements written once
//! over [`crate::store::sql::Sql`].

use crate::canon::facts::StoredFact;
use crate::store::tables::Cell;
use crate::store::{ClusterId, KeyId, StoreError};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use std::path::Path;

pub(super) fn to_value(cell: &Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Int(n) => Value::Integer(*n),
        Cell::Text(t) => Value::Text(t.clone()),
        Cell::Bytes(b) => Value::Blob(b.clone()),
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

/// A stored fact as a statement's parameter.
impl rusqlite::ToSql for StoredFact<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            StoredFact::Int(n) => n.to_sql(),
            StoredFact::Text(t) => t.to_sql(),
            StoredFact::Bytes(b) => b.to_sql(),
        }
    }
}

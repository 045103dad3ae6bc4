//! PostgreSQL's values as [`Cell`]s and back, for the statements written
//! once over [`crate::store::sql::Sql`]; flags stored as booleans travel as
//! 0/1.

use super::Store;
use crate::store::tables::Cell;
use crate::store::{ClusterId, StoreError};
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::Row;

/// A cluster's row id as a statement's parameter (`bigint`).
impl ToSql for ClusterId {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.0.to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <i64 as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl ToSql for Cell {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Cell::Null, _) => Ok(IsNull::Yes),
            (Cell::Int(n), &Type::BOOL) => (*n != 0).to_sql(ty, out),
            (Cell::Int(n), &Type::INT4) => i32::try_from(*n)?.to_sql(ty, out),
            (Cell::Int(n), _) => n.to_sql(ty, out),
            (Cell::Text(t), _) => t.as_str().to_sql(ty, out),
            (Cell::Bytes(b), _) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::BOOL, Type::INT4, Type::INT8, Type::TEXT, Type::BYTEA].contains(ty)
    }

    to_sql_checked!();
}

impl Store {
    /// Each of `rows` (read from `table`) as cells.
    pub(super) fn all_cells(&self, table: &str, rows: Vec<Row>) -> Result<Vec<Vec<Cell>>, StoreError> {
        rows.iter()
            .map(|row| {
                let mut cells = Vec::new();
                self.cells(table, row, &mut cells)?;
                Ok(cells)
            })
            .collect()
    }

    pub(super) fn cells(&self, table: &str, row: &Row, out: &mut Vec<Cell>) -> Result<(), StoreError> {
        out.clear();
        for (i, column) in row.columns().iter().enumerate() {
            let bad = |e: postgres::Error| self.damaged(&format!("{table}.{}", column.name()), e);
            out.push(
                match *column.type_() {
                    Type::BOOL => row
                        .try_get::<_, Option<bool>>(i)
                        .map_err(bad)?
                        .map(|b| Cell::Int(b.into())),
                    Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(bad)?.map(Cell::Int),
                    Type::INT4 => row
                        .try_get::<_, Option<i32>>(i)
                        .map_err(bad)?
                        .map(|n| Cell::Int(n.into())),
                    Type::BYTEA => row
                        .try_get::<_, Option<Vec<u8>>>(i)
                        .map_err(bad)?
                        .map(Cell::Bytes),
                    _ => row.try_get::<_, Option<String>>(i).map_err(bad)?.map(Cell::Text),
                }
                .unwrap_or(Cell::Null),
            );
        }
        Ok(())
    }
}

pub(super) fn params(values: &[Cell]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

//! [`Tables`] over PostgreSQL: rows by column name, for `copy`; flags
//! stored as booleans travel as 0/1.

use super::Store;
use crate::store::tables::{Cell, RowFilter, Tables};
use crate::store::StoreError;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::Row;

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

/// `filter` as a WHERE clause and its parameters.
fn clause(filter: &RowFilter) -> (String, Vec<Cell>) {
    match filter {
        RowFilter::All => ("true".into(), Vec::new()),
        RowFilter::In(column, ids) => (
            format!("{column} = ANY(string_to_array($1, ',')::bigint[])"),
            vec![Cell::Text(
                ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
            )],
        ),
        RowFilter::Eq(column, value) => (format!("{column} = $1"), vec![value.clone()]),
        RowFilter::KeysOfClusters(ids) => (
            "key_id IN (SELECT id FROM keys WHERE cluster_id = ANY(string_to_array($1, ',')::bigint[]))"
                .into(),
            vec![Cell::Text(
                ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
            )],
        ),
    }
}

impl Store {
    fn cells(&self, table: &str, row: &Row, out: &mut Vec<Cell>) -> Result<(), StoreError> {
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

fn params(values: &[Cell]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Tables for Store {
    fn each_row(
        &self,
        table: &str,
        columns: &[&str],
        filter: &RowFilter,
        order: &str,
        visit: &mut dyn FnMut(&[Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let (condition, values) = clause(filter);
        let sql = format!(
            "SELECT {} FROM {table} WHERE {condition} ORDER BY {order}",
            columns.join(", ")
        );
        let mut cells = Vec::with_capacity(columns.len());
        self.each_page(&sql, &params(&values), &mut |rows| {
            for row in rows {
                self.cells(table, row, &mut cells)?;
                visit(&cells)?;
            }
            Ok(())
        })
    }

    fn insert_row(
        &self,
        table: &str,
        columns: &[&str],
        values: &[Cell],
        id: bool,
    ) -> Result<Option<i64>, StoreError> {
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let returning = if id { " RETURNING id" } else { "" };
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT DO NOTHING{returning}",
            columns.join(", "),
            marks.join(", ")
        );
        if id {
            Ok(self.query_opt(&sql, &params(values))?.map(|r| r.get(0)))
        } else {
            Ok((self.execute(&sql, &params(values))? > 0).then_some(0))
        }
    }

    fn find_id(&self, table: &str, columns: &[&str], values: &[Cell]) -> Result<Option<i64>, StoreError> {
        let condition: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} IS NOT DISTINCT FROM ${}", i + 1))
            .collect();
        let sql = format!("SELECT id FROM {table} WHERE {} LIMIT 1", condition.join(" AND "));
        Ok(self.query_opt(&sql, &params(values))?.map(|r| r.get(0)))
    }

    fn begin_rows(&self) -> Result<(), StoreError> {
        self.begin()
    }

    fn commit_rows(&self) -> Result<(), StoreError> {
        self.commit()
    }

    fn rollback_rows(&self) {
        self.rollback()
    }
}

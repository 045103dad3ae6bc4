//! [`Tables`] over SQLite: rows by column name, for `copy`.

use super::Store;
use crate::store::tables::{Cell, RowFilter, Tables};
use crate::store::StoreError;
use rusqlite::types::{Value, ValueRef};

/// `filter` as a WHERE clause and its parameters.
fn clause(filter: &RowFilter) -> (String, Vec<Value>) {
    match filter {
        RowFilter::All => ("1".into(), Vec::new()),
        RowFilter::In(column, ids) => (
            format!("{column} IN (SELECT value FROM json_each(?1))"),
            vec![Value::Text(serde_json::to_string(ids).expect("JSON"))],
        ),
        RowFilter::Eq(column, value) => (format!("{column} = ?1"), vec![to_value(value)]),
        RowFilter::KeysOfClusters(ids) => (
            "key_id IN (SELECT id FROM keys WHERE cluster_id IN (SELECT value FROM json_each(?1)))".into(),
            vec![Value::Text(serde_json::to_string(ids).expect("JSON"))],
        ),
    }
}

fn to_value(cell: &Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Int(n) => Value::Integer(*n),
        Cell::Text(t) => Value::Text(t.clone()),
        Cell::Bytes(b) => Value::Blob(b.clone()),
    }
}

impl Store {
    fn cell(&self, table: &str, column: &str, value: ValueRef<'_>) -> Result<Cell, StoreError> {
        Ok(match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(n) => Cell::Int(n),
            ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
            ValueRef::Real(r) => {
                return Err(self.damaged(&format!("{table}.{column}"), format!("{r} is not an integer")))
            }
        })
    }
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
        let (condition, params) = clause(filter);
        let sql = format!(
            "SELECT {} FROM {table} WHERE {condition} ORDER BY {order}",
            columns.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| self.err(e))?;
        let mut cells = Vec::with_capacity(columns.len());
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            cells.clear();
            for (i, column) in columns.iter().enumerate() {
                let value = row.get_ref(i).map_err(|e| self.err(e))?;
                cells.push(self.cell(table, column, value)?);
            }
            visit(&cells)?;
        }
        Ok(())
    }

    fn insert_row(
        &self,
        table: &str,
        columns: &[&str],
        values: &[Cell],
        id: bool,
    ) -> Result<Option<i64>, StoreError> {
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT OR IGNORE INTO {table} ({}) VALUES ({})",
            columns.join(", "),
            marks.join(", ")
        );
        let changed = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(values.iter().map(to_value))))
            .map_err(|e| self.err(e))?;
        Ok((changed > 0).then(|| if id { self.conn.last_insert_rowid() } else { 0 }))
    }

    fn find_id(&self, table: &str, columns: &[&str], values: &[Cell]) -> Result<Option<i64>, StoreError> {
        let condition: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} IS ?{}", i + 1))
            .collect();
        let sql = format!("SELECT id FROM {table} WHERE {} LIMIT 1", condition.join(" AND "));
        use rusqlite::OptionalExtension;
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_row(rusqlite::params_from_iter(values.iter().map(to_value)), |r| {
                    r.get(0)
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    fn begin_rows(&self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))
    }

    fn commit_rows(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))
    }

    fn rollback_rows(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

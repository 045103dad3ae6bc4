//! [`Sql`] over PostgreSQL: the shared statements run as written, their
//! rows read page by page through a cursor.

use super::cells::params;
use super::Store;
use crate::store::sql::{Dialect, Sql};
use crate::store::tables::Cell;
use crate::store::StoreError;
use std::path::Path;

const POSTGRES: Dialect = Dialect {
    byte_order: r#" COLLATE "C""#,
    greatest: "greatest",
    int: "bigint",
    bytes: "bytea",
    id_list: "(SELECT unnest(string_to_array($1, ',')::bigint[]))",
};

impl Sql for Store {
    fn location(&self) -> &Path {
        &self.path
    }

    fn dialect(&self) -> &'static Dialect {
        &POSTGRES
    }

    fn execute(&self, sql: &str, values: &[Cell]) -> Result<u64, StoreError> {
        Store::execute(self, sql, &params(values))
    }

    fn each(
        &self,
        table: &str,
        sql: &str,
        values: &[Cell],
        visit: &mut dyn FnMut(&[Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut cells = Vec::new();
        self.each_page(sql, &params(values), &mut |rows| {
            for row in rows {
                self.cells(table, row, &mut cells)?;
                visit(&cells)?;
            }
            Ok(())
        })
    }

    fn rows(&self, table: &str, sql: &str, values: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError> {
        self.query(sql, &params(values))?
            .iter()
            .map(|row| {
                let mut cells = Vec::new();
                self.cells(table, row, &mut cells)?;
                Ok(cells)
            })
            .collect()
    }

    fn begin_transaction(&self) -> Result<(), StoreError> {
        self.begin()
    }

    fn commit_transaction(&self) -> Result<(), StoreError> {
        self.commit()
    }

    fn rollback_transaction(&self) {
        self.rollback()
    }

    fn transaction_open(&self) -> bool {
        self.in_transaction_now()
    }

    /// In a transaction only: the table is dropped when it commits.
    fn temp_table(&self, name: &str, columns: &str) -> Result<(), StoreError> {
        self.with_client(|c| {
            c.batch_execute(&format!(
                "DROP TABLE IF EXISTS pg_temp.{name}; CREATE TEMP TABLE {name} {columns} ON COMMIT DROP"
            ))
        })
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        let tables = self.query(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
            &[&super::SCHEMA],
        )?;
        for table in tables.iter().map(|r| r.get::<_, String>(0)) {
            self.with_client(|c| c.batch_execute(&format!("VACUUM (ANALYZE) {table}")))?;
        }
        Ok(())
    }
}

//! [`Sql`] over SQLite: the shared statements run as written, their `$n`
//! parameters read as SQLite's `?n`.

use super::cells::cell;
use super::Store;
use crate::store::sql::{Dialect, Sql};
use crate::store::tables::Cell;
use crate::store::StoreError;

/// [`Dialect::scope`] in SQLite.
///
/// It opens with `r.key_id > 0`, true of every row: without it SQLite scans
/// `revisions` through `revisions_by_revision` and looks every row up in
/// the table, whose rows lie in key order; that is a page read per row once
/// the table outgrows the page cache (12× slower on 240,000 revisions). The
/// term makes the table's own key order the scan.
const SCOPE: &str =
    "r.key_id > 0 AND ($1 IS NULL OR r.mod_revision >= $1) AND ($2 IS NULL OR r.mod_revision <= $2) \
     AND ($3 IS NULL OR k.namespace = $3) AND ($4 IS NULL OR k.resource = $4) \
     AND ($5 IS NULL OR substr(k.key, 1, length(CAST($5 AS BLOB))) = CAST($5 AS BLOB)) AND ($6 IS NULL OR k.cluster_id = $6) \
     AND ($7 IS NULL OR k.key = CAST($7 AS BLOB))";

const SQLITE: Dialect = Dialect {
    byte_order: "",
    greatest: "max",
    int: "INTEGER",
    bytes: "BLOB",
    id_list: "(SELECT value FROM json_each('[' || $1 || ']'))",
    scope: SCOPE,
    // A path's last member is what follows its last `.` once escaped dots
    // (`\.`, a dot inside a key such as `data.build\.time`) are set aside.
    manager_writes: r#"SELECT m.value AS manager, grp, res, count(*),
          count(*) FILTER (WHERE change_class = 'metadata-only'),
          sum(NOT EXISTS (SELECT 1 FROM (SELECT replace(p.value, '\.', char(1)) AS path
              FROM json_each(s.changed_paths) p) v
            WHERE replace(v.path, rtrim(v.path, replace(v.path, '.', '')), '') NOT IN ({times}))),
          s.cluster
        FROM scoped_rows s,
          (SELECT DISTINCT w.key_id AS kid, w.mod_revision AS rev, m.value FROM scoped_rows AS w,
             json_each(w.changed_by) c, json_each(c.value) m WHERE w.changed_by IS NOT NULL) m
        WHERE m.kid = s.key_id AND m.rev = s.mod_revision GROUP BY s.cluster, manager, grp, res
        ORDER BY 4 DESC, manager, s.cluster LIMIT $1"#,
    unlimited: Some(-1),
    json_items: |list, alias| format!("json_each({list}) AS {alias}"),
    utf8: |text| format!("CAST({text} AS BLOB)"),
    same: |a, b| format!("{a} IS {b}"),
    snapshot_reads: false,
    findings_lock: None,
    new_key_ids: None,
};

/// `sql` with every `$n` parameter spelled `?n`.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        let param = c == '$' && chars.peek().is_some_and(char::is_ascii_digit);
        out.push(if param { '?' } else { c });
    }
    out
}

impl Store {
    /// Inserts `cells`, rows of `columns`, one prepared statement each
    /// (ending in `conflict`): how many went in.
    fn insert_each(
        &self,
        table: &str,
        columns: &[&str],
        conflict: &str,
        cells: &[Cell],
    ) -> Result<u64, StoreError> {
        if cells.is_empty() {
            return Ok(0);
        }
        let slots: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({}){conflict}",
            columns.join(", "),
            slots.join(", ")
        );
        let mut statement = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let mut added = 0;
        for row in cells.chunks(columns.len()) {
            added += statement
                .execute(rusqlite::params_from_iter(row))
                .map_err(|e| self.err(e))?;
        }
        Ok(added as u64)
    }
}

impl Sql for Store {
    fn dialect(&self) -> &'static Dialect {
        &SQLITE
    }

    fn execute(&self, sql: &str, params: &[Cell]) -> Result<u64, StoreError> {
        self.conn
            .prepare_cached(&numbered(sql))
            .and_then(|mut s| s.execute(rusqlite::params_from_iter(params)))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// SQLite's bulk path: one prepared statement, run for each row.
    fn insert_rows(&self, table: &str, columns: &[&str], cells: &[Cell]) -> Result<(), StoreError> {
        self.insert_each(table, columns, "", cells).map(drop)
    }

    fn insert_new_rows(
        &self,
        table: &str,
        columns: &[&str],
        unique: &[&str],
        cells: &[Cell],
    ) -> Result<u64, StoreError> {
        let conflict = format!(" ON CONFLICT ({}) DO NOTHING", unique.join(", "));
        self.insert_each(table, columns, &conflict, cells)
    }

    fn each(
        &self,
        table: &str,
        sql: &str,
        params: &[Cell],
        visit: &mut dyn FnMut(&mut [Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let err = |e| self.err(e);
        let mut stmt = self.conn.prepare_cached(&numbered(sql)).map_err(err)?;
        let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
        let mut rows = stmt.query(rusqlite::params_from_iter(params)).map_err(err)?;
        let mut cells = Vec::with_capacity(names.len());
        while let Some(row) = rows.next().map_err(err)? {
            cells.clear();
            for (i, name) in names.iter().enumerate() {
                cells.push(cell(&self.path, table, name, row.get_ref(i).map_err(err)?)?);
            }
            visit(&mut cells)?;
        }
        Ok(())
    }

    fn rows(&self, table: &str, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError> {
        let mut rows = Vec::new();
        self.each(table, sql, params, &mut |row| {
            rows.push(row.to_vec());
            Ok(())
        })?;
        Ok(rows)
    }

    fn begin_transaction(&self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))
    }

    fn commit_transaction(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))
    }

    fn rollback_transaction(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    fn transaction_open(&self) -> bool {
        !self.conn.is_autocommit()
    }

    fn temp_table(&self, name: &str, columns: &str) -> Result<(), StoreError> {
        self.drop_temp(name);
        self.conn
            .execute_batch(&format!("CREATE TEMP TABLE {name} {columns}"))
            .map_err(|e| self.err(e))
    }

    fn temp_table_as(&self, name: &str, select: &str, params: &[Cell]) -> Result<(), StoreError> {
        self.drop_temp(name);
        self.execute(&format!("CREATE TEMP TABLE {name} AS {select}"), params)
            .map(|_| ())
    }

    fn drop_temp(&self, name: &str) {
        let _ = self
            .conn
            .execute_batch(&format!("DROP TABLE IF EXISTS temp.{name}"));
    }

    /// SQLite's temporary tables are the connection's: no transaction.
    fn reading(&self, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError> {
        work()
    }

    /// SQLite plans without statistics unless ANALYZE wrote them.
    fn loaded(&self, _revisions: u64, _audit_requests: u64) -> Result<(), StoreError> {
        Ok(())
    }

    /// A writer holds the whole file.
    fn lock_cluster(&self, _row: i64, _etcd_cluster_id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// A file is never lost.
    fn reconnect_if_lost(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn vacuum(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("VACUUM").map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn parameters_are_renumbered_and_nothing_else() {
        assert_eq!(
            numbered("SELECT $1, '$', x$y FROM t WHERE a = $12"),
            "SELECT ?1, '$', x$y FROM t WHERE a = ?12"
        );
    }
}

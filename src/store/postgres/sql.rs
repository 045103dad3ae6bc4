//! [`Sql`] over PostgreSQL: the shared statements run as written, their
//! rows read page by page through a cursor.

use super::cells::params;
use super::Store;
use crate::store::sql::{update_from, Dialect, Sql};
use crate::store::tables::Cell;
use crate::store::StoreError;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

/// [`Dialect::scope`] in PostgreSQL. Every use of a parameter is cast, since a NULL alone has no type. Keys
/// are bytes: the prefix and key compare as their UTF-8. The cluster is
/// asked of both tables, so that each is read through its cluster's index
/// (the key's cluster is the revision's).
const SCOPE: &str = "($1::bigint IS NULL OR r.mod_revision >= $1::bigint) \
     AND ($2::bigint IS NULL OR r.mod_revision <= $2::bigint) \
     AND ($3::text IS NULL OR k.namespace = $3::text) AND ($4::text IS NULL OR k.resource = $4::text) \
     AND ($5::text IS NULL OR substr(k.key, 1, octet_length($5::text)) = convert_to($5::text, 'UTF8')) \
     AND ($6::bigint IS NULL OR (r.cluster_id = $6::bigint AND k.cluster_id = $6::bigint)) \
     AND ($7::text IS NULL OR k.key = convert_to($7::text, 'UTF8'))";

const POSTGRES: Dialect = Dialect {
    byte_order: r#" COLLATE "C""#,
    greatest: "greatest",
    int: "bigint",
    bytes: "bytea",
    id_list: "(SELECT unnest(string_to_array($1, ',')::bigint[]))",
    scope: SCOPE,
    // A path's last member is what follows its last `.` once escaped dots
    // (`\.`, a dot inside a key such as `data.build\.time`) are set aside.
    manager_writes: r#"SELECT m.manager COLLATE "C" AS manager, grp, res, count(*),
          count(*) FILTER (WHERE change_class = 'metadata-only'),
          count(*) FILTER (WHERE NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements_text(s.changed_paths::jsonb) p(path)
            WHERE regexp_replace(replace(p.path, '\.', chr(1)), '^.*\.', '') NOT IN ({times}))),
          s.cluster
        FROM scoped_rows s,
          (SELECT DISTINCT w.key_id AS kid, w.mod_revision AS rev, m.manager FROM scoped_rows AS w,
             jsonb_each(w.changed_by::jsonb) c, jsonb_array_elements_text(c.value) m(manager)
           WHERE w.changed_by IS NOT NULL) m
        WHERE m.kid = s.key_id AND m.rev = s.mod_revision GROUP BY s.cluster, 1, grp, res
        ORDER BY 4 DESC, manager, s.cluster LIMIT $1"#,
    unlimited: None,
    json_items: |list, alias| {
        format!("jsonb_array_elements_text(CAST(CAST({list} AS text) AS jsonb)) AS {alias}(value)")
    },
    utf8: |text| format!("convert_to({text}, 'UTF8')"),
    // `IS NOT DISTINCT FROM` neither hashes nor uses an index.
    same: |a, b| format!("({a} = {b} OR ({a} IS NULL AND {b} IS NULL))"),
    snapshot_reads: true,
    findings_lock: Some(
        "SELECT pg_advisory_xact_lock(hashtextextended('etcd_inspector.findings.' || $1::bigint, 0))",
    ),
    new_key_ids: Some(
        "SELECT nextval(pg_get_serial_sequence('keys', 'id')) FROM generate_series(1, $1::bigint) ORDER BY 1 DESC",
    ),
};

impl Sql for Store {
    fn dialect(&self) -> &'static Dialect {
        &POSTGRES
    }

    fn execute(&self, sql: &str, values: &[Cell]) -> Result<u64, StoreError> {
        Store::execute(self, sql, &params(values))
    }

    /// One statement, each column's values an array: `unnest` makes the
    /// rows (thousands of parameters would cost more to parse and bind
    /// than the update itself).
    fn update_rows(
        &self,
        table: &str,
        columns: &[(&str, &str)],
        keys: usize,
        cells: &[Cell],
    ) -> Result<(), StoreError> {
        if cells.is_empty() {
            return Ok(());
        }
        let width = columns.len();
        let arrays: Vec<Vec<&Cell>> = (0..width)
            .map(|c| cells.iter().skip(c).step_by(width).collect())
            .collect();
        let unnest: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (_, ty))| format!("CAST(${} AS {ty}[])", i + 1))
            .collect();
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let from = format!("unnest({}) AS u ({})", unnest.join(", "), names.join(", "));
        let params: Vec<&(dyn ToSql + Sync)> = arrays.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        Store::execute(self, &update_from(table, columns, keys, &from), &params)?;
        Ok(())
    }

    /// Through the bulk path: the rows are copied into a temporary table
    /// shaped as `table` (emptied before and after; one per table and
    /// connection, whichever columns a caller gives), then inserted from
    /// it. Two rows of one batch with the same unique key are the same row
    /// (a content's hash, an audit id deduplicated before the batch), so
    /// which of them goes in does not matter.
    fn insert_new_rows(
        &self,
        table: &str,
        columns: &[&str],
        unique: &[&str],
        cells: &[Cell],
    ) -> Result<u64, StoreError> {
        if cells.is_empty() {
            return Ok(0);
        }
        let (staged, columns_list) = (format!("staged_{table}"), columns.join(", "));
        self.with_client(|c| {
            c.batch_execute(&format!(
                "CREATE TEMP TABLE IF NOT EXISTS {staged} AS SELECT * FROM {table} LIMIT 0; \
                 TRUNCATE {staged}"
            ))
        })?;
        self.insert_rows(&staged, columns, cells)?;
        let added = Store::execute(
            self,
            &format!(
                "INSERT INTO {table} ({columns_list}) SELECT {columns_list} FROM {staged} \
                 ON CONFLICT ({}) DO NOTHING",
                unique.join(", ")
            ),
            &[],
        )?;
        self.with_client(|c| c.batch_execute(&format!("TRUNCATE {staged}")))?;
        Ok(added)
    }

    /// PostgreSQL's bulk path: one binary `COPY`, each value typed as its
    /// column is (which a statement selecting the columns tells).
    fn insert_rows(&self, table: &str, columns: &[&str], cells: &[Cell]) -> Result<(), StoreError> {
        if cells.is_empty() {
            return Ok(());
        }
        let columns = columns.join(", ");
        self.with_client(|client| {
            let types: Vec<Type> = client
                .prepare(&format!("SELECT {columns} FROM {table} LIMIT 0"))?
                .columns()
                .iter()
                .map(|c| c.type_().clone())
                .collect();
            let sink = client.copy_in(&format!("COPY {table} ({columns}) FROM STDIN (FORMAT binary)"))?;
            let mut rows = BinaryCopyInWriter::new(sink, &types);
            for row in cells.chunks(types.len()) {
                rows.write_raw(row)?;
            }
            rows.finish().map(|_| ())
        })
    }

    fn each(
        &self,
        table: &str,
        sql: &str,
        values: &[Cell],
        visit: &mut dyn FnMut(&mut [Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut cells = Vec::new();
        self.each_page(sql, &params(values), &mut |rows| {
            for row in rows {
                self.cells(table, row, &mut cells)?;
                visit(&mut cells)?;
            }
            Ok(())
        })
    }

    fn rows(&self, table: &str, sql: &str, values: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError> {
        self.all_cells(table, self.query(sql, &params(values))?)
    }

    fn rows_prepared(&self, table: &str, sql: &str, values: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError> {
        self.all_cells(table, self.query_prepared(sql, &params(values))?)
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
        self.drop_temp(name);
        self.with_client(|c| c.batch_execute(&format!("CREATE TEMP TABLE {name} {columns} ON COMMIT DROP")))
    }

    fn temp_table_as(&self, name: &str, select: &str, values: &[Cell]) -> Result<(), StoreError> {
        self.drop_temp(name);
        Store::execute(
            self,
            &format!("CREATE TEMP TABLE {name} ON COMMIT DROP AS {select}"),
            &params(values),
        )
        .map(|_| ())
    }

    fn drop_temp(&self, name: &str) {
        let _ = self.with_client(|c| c.batch_execute(&format!("DROP TABLE IF EXISTS pg_temp.{name}")));
    }

    /// Temporary tables live until the transaction ends; cursors need one.
    fn reading(&self, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError> {
        self.in_transaction(work)
    }

    fn loaded(&self, revisions: u64, audit_requests: u64) -> Result<(), StoreError> {
        self.refresh_statistics("revisions", revisions, super::RUN_TABLES)?;
        self.refresh_statistics("audit_requests", audit_requests, &["audit_requests"])
    }

    fn lock_cluster(&self, row: i64, etcd_cluster_id: &str) -> Result<(), StoreError> {
        Store::lock_cluster(self, row, etcd_cluster_id)
    }

    fn reconnect_if_lost(&self) -> Result<(), StoreError> {
        Store::reconnect_if_lost(self)
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

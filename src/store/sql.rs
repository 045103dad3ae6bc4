//! The dialect boundary: what both backends do (runs, clusters,
//! classification, history, live objects, names, the clock, vanished keys,
//! prune, usage, the stats counts, copy's row access, shared revisions,
//! unaudited creates, contents) is written once over [`Sql`], which each backend gives with its
//! connection, transactions and the few words its dialect spells its own
//! way ([`Dialect`]). Statements are written once, in the part of SQL both
//! backends run: parameters numbered `$1`, `$2` ..., `CAST(x AS bigint)`
//! for a type, `IS NOT DISTINCT FROM`, `ON CONFLICT DO NOTHING`,
//! `RETURNING`, `count(*) FILTER (WHERE ...)`; values travel as [`Cell`]s
//! and are read back through a [`Cursor`], which names table and column
//! when a stored value is not what its column holds.

use super::reader::Located;
use super::tables::Cell;
use super::{Scope, StoreError};
use crate::canon::facts::FactRow;
use crate::ingest::blob::Packed;
use crate::source::Revision;
use std::path::Path;

/// How a dialect spells what the shared SQL leaves open.
pub struct Dialect {
    /// Appended to a text expression so it compares byte by byte, as the
    /// stored times and names are ordered (SQLite's default).
    pub byte_order: &'static str,
    /// The larger of two values (`max(a, b)` in SQLite).
    pub greatest: &'static str,
    /// Column types of a temporary table: an integer and bytes.
    pub int: &'static str,
    pub bytes: &'static str,
    /// The ids in parameter `$1` (a comma-separated list) as a subquery.
    pub id_list: &'static str,
    /// A [`Scope`] as conditions over `r` (revisions) and `k` (keys), its
    /// values bound to `$1`..`$7` as [`scope_cells`] gives them.
    pub scope: &'static str,
    /// Writes per field manager over `scoped_rows` (the usage's rows), at
    /// most `$1`: manager, group, resource, writes, metadata-only writes,
    /// writes of `{times}` only (the quoted time fields) and cluster. Each
    /// dialect reads the JSON lists its own way.
    pub manager_writes: &'static str,
    /// The `LIMIT` that keeps every row (SQLite's -1, PostgreSQL's NULL).
    pub unlimited: Option<i64>,
    /// The items of a JSON list (an expression) as a table of one column,
    /// `value` (a string item as text), named `alias`.
    pub json_items: fn(list: &str, alias: &str) -> String,
    /// A text expression as its UTF-8 bytes, as keys are stored.
    pub utf8: fn(text: &str) -> String,
    /// Whether two expressions are equal or both NULL, spelled so that a
    /// join can still use an index or a hash on it.
    pub same: fn(a: &str, b: &str) -> String,
    /// Whether a statement's rows, read while the same transaction writes,
    /// are the database as it was when the statement began (PostgreSQL's
    /// cursors). Where not (SQLite), a read must end before its table is
    /// written.
    pub snapshot_reads: bool,
    /// Serializes findings writers of cluster `$1` within a transaction,
    /// where the write transaction alone does not.
    pub findings_lock: Option<&'static str>,
    /// `$1` ids for new keys, taken ahead of inserting them, where the
    /// dialect has a sequence to take them from (so a run's new keys go in
    /// by the bulk path, not one statement each).
    pub new_key_ids: Option<&'static str>,
}

/// Rows one [`Sql::insert_rows`] statement inserts at most (within both
/// backends' limits on parameters).
pub const INSERTED_PER_STATEMENT: usize = 500;

/// `rows` rows of `width` parameters each, numbered from `$1`, for a
/// `VALUES` list; with `types`, the first row's cast to them, which types
/// the list's columns where no table does.
pub fn values(width: usize, rows: usize, types: Option<&[&str]>) -> String {
    let rows: Vec<String> = (0..rows)
        .map(|row| {
            let params: Vec<String> = (1..=width)
                .map(|c| {
                    let param = format!("${}", row * width + c);
                    match types {
                        Some(types) if row == 0 => format!("CAST({param} AS {})", types[c - 1]),
                        _ => param,
                    }
                })
                .collect();
            format!("({})", params.join(", "))
        })
        .collect();
    rows.join(", ")
}

/// `UPDATE table` from the rows of `u` (`from` names or makes it), matched
/// on the first `keys` of `columns` and setting the others.
pub fn update_from(table: &str, columns: &[(&str, &str)], keys: usize, from: &str) -> String {
    let set: Vec<String> = columns[keys..]
        .iter()
        .map(|(c, _)| format!("{c} = u.{c}"))
        .collect();
    let matched: Vec<String> = columns[..keys]
        .iter()
        .map(|(c, _)| format!("t.{c} = u.{c}"))
        .collect();
    format!(
        "UPDATE {table} AS t SET {} FROM {from} WHERE {}",
        set.join(", "),
        matched.join(" AND ")
    )
}

/// The values [`Dialect::scope`] binds, in order: the revision range, then
/// the object filter's namespace, resource, key prefix, cluster and key.
pub fn scope_cells(scope: &Scope) -> [Cell; 7] {
    let text = |v: &Option<String>| v.clone().map_or(Cell::Null, Cell::Text);
    let o = &scope.objects;
    [
        scope.from_revision.map_or(Cell::Null, Cell::from),
        scope.to_revision.map_or(Cell::Null, Cell::from),
        text(&o.namespace),
        text(&o.resource),
        text(&o.key_prefix),
        o.cluster.map_or(Cell::Null, Cell::from),
        text(&o.key),
    ]
}

/// What a backend gives the logic written once (and where it is, for
/// errors that name it).
pub trait Sql: Located {
    fn dialect(&self) -> &'static Dialect;
    /// Runs one statement: the rows it changed.
    fn execute(&self, sql: &str, params: &[Cell]) -> Result<u64, StoreError>;
    /// Each row one statement answers, in bounded memory; a value no
    /// [`Cell`] holds is damage to `table` (what the rows are read from).
    fn each(
        &self,
        table: &str,
        sql: &str,
        params: &[Cell],
        visit: &mut dyn FnMut(&mut [Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Opens a write transaction.
    fn begin_transaction(&self) -> Result<(), StoreError>;
    fn commit_transaction(&self) -> Result<(), StoreError>;
    /// Drops the open transaction, if any.
    fn rollback_transaction(&self);
    fn transaction_open(&self) -> bool;
    /// Creates the temporary table `name` with `columns` (a column list in
    /// parentheses), gone when the transaction ends or the next one of the
    /// name is created.
    fn temp_table(&self, name: &str, columns: &str) -> Result<(), StoreError>;
    /// Creates the temporary table `name` from `select`, as
    /// [`Sql::temp_table`].
    fn temp_table_as(&self, name: &str, select: &str, params: &[Cell]) -> Result<(), StoreError>;
    /// Drops the temporary table `name` if it is there, whatever happens.
    fn drop_temp(&self, name: &str);
    /// Runs reads that share temporary tables: in one transaction where
    /// the backend needs one for them (never a write lock).
    fn reading(&self, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError>;
    /// After a bulk load (`copy`) committed `revisions` and
    /// `audit_requests`: a server refreshes what its planner knows of the
    /// tables filled, so the next step is not planned for empty ones.
    fn loaded(&self, revisions: u64, audit_requests: u64) -> Result<(), StoreError>;
    /// Takes the write lock of cluster `row` (etcd's `etcd_cluster_id`)
    /// for this session, or fails naming who holds it; where a writer
    /// holds the whole database already, nothing.
    fn lock_cluster(&self, row: i64, etcd_cluster_id: &str) -> Result<(), StoreError>;
    /// Connects again when the connection to a server was lost, so that a
    /// run can still record how it ended.
    fn reconnect_if_lost(&self) -> Result<(), StoreError>;
    /// Gives the space of removed rows back and refreshes the planner's
    /// statistics.
    fn vacuum(&self) -> Result<(), StoreError>;

    /// Runs `work` in one write transaction (or in the open one): all of it
    /// is kept or none.
    fn atomically(&self, work: &mut dyn FnMut() -> Result<(), StoreError>) -> Result<(), StoreError> {
        if self.transaction_open() {
            return work();
        }
        self.begin_transaction()?;
        match work() {
            Ok(()) => self.commit_transaction(),
            Err(e) => {
                self.rollback_transaction();
                Err(e)
            }
        }
    }

    /// Inserts `cells` into `table` as rows of `columns` (a value of each
    /// column per row, in order), many rows per statement.
    fn insert_rows(&self, table: &str, columns: &[&str], cells: &[Cell]) -> Result<(), StoreError> {
        let width = columns.len();
        debug_assert!(width > 0 && cells.len().is_multiple_of(width));
        for chunk in cells.chunks(width * INSERTED_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO {table} ({}) VALUES {}",
                columns.join(", "),
                values(width, chunk.len() / width, None)
            );
            self.execute(&sql, chunk)?;
        }
        Ok(())
    }

    /// Inserts the rows of `cells` (as [`Sql::insert_rows`] takes them), in
    /// order, but those a stored row (or an earlier one) matches on the
    /// unique key `unique`: how many went in.
    fn insert_new_rows(
        &self,
        table: &str,
        columns: &[&str],
        unique: &[&str],
        cells: &[Cell],
    ) -> Result<u64, StoreError> {
        let width = columns.len();
        debug_assert!(width > 0 && cells.len().is_multiple_of(width));
        let mut added = 0;
        for chunk in cells.chunks(width * INSERTED_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO {table} ({}) VALUES {} ON CONFLICT ({}) DO NOTHING",
                columns.join(", "),
                values(width, chunk.len() / width, None),
                unique.join(", ")
            );
            added += self.execute(&sql, chunk)?;
        }
        Ok(added)
    }

    /// Updates rows of `table` from `cells`, rows of `columns` (each a name
    /// and its SQL type): the first `keys` columns find the row, the others
    /// are set; many rows per statement.
    fn update_rows(
        &self,
        table: &str,
        columns: &[(&str, &str)],
        keys: usize,
        cells: &[Cell],
    ) -> Result<(), StoreError> {
        let width = columns.len();
        debug_assert!(keys < width && cells.len().is_multiple_of(width));
        let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
        let types: Vec<&str> = columns.iter().map(|(_, ty)| *ty).collect();
        for chunk in cells.chunks(width * INSERTED_PER_STATEMENT) {
            let sql = format!(
                "WITH u ({}) AS (VALUES {}) {}",
                names.join(", "),
                values(width, chunk.len() / width, Some(&types)),
                update_from(table, columns, keys, "u")
            );
            self.execute(&sql, chunk)?;
        }
        Ok(())
    }

    /// The `LIMIT` parameter for at most `n` rows (`None`: all of them).
    fn limit(&self, n: Option<u32>) -> Cell {
        match n.map(i64::from).or(self.dialect().unlimited) {
            Some(n) => Cell::Int(n),
            None => Cell::Null,
        }
    }

    /// Cells read as what `table` holds.
    fn typed<'a>(&'a self, table: &'a str) -> Typed<'a> {
        Typed {
            location: self.location(),
            table,
        }
    }

    /// The rows of a statement that answers few (any statement, a
    /// `RETURNING` one included).
    fn rows(&self, table: &str, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError>;

    /// [`Sql::rows`] of a statement run often, prepared once per
    /// connection where preparing costs a round trip (never one over a
    /// temporary table, whose prepared form would outlive it).
    fn rows_prepared(&self, table: &str, sql: &str, params: &[Cell]) -> Result<Vec<Vec<Cell>>, StoreError> {
        self.rows(table, sql, params)
    }
}

/// Cells read as what `table` holds: a cell of another type is damage
/// naming table and column.
pub struct Typed<'a> {
    pub location: &'a Path,
    pub table: &'a str,
}

impl Typed<'_> {
    /// Damage to `column` (of the table read, unless it is named as
    /// `table.column`).
    pub fn damage(&self, column: &str, problem: impl std::fmt::Display) -> StoreError {
        let what = if column.contains('.') {
            format!("{column}: {problem}")
        } else {
            format!("{}.{column}: {problem}", self.table)
        };
        StoreError::Damaged {
            path: self.location.to_path_buf(),
            what,
        }
    }

    fn damaged(&self, column: &str, cell: &Cell) -> StoreError {
        self.damage(column, format_args!("{cell:?} is not what the column holds"))
    }

    /// An integer or NULL.
    pub fn opt_int(&self, cell: &Cell, column: &str) -> Result<Option<i64>, StoreError> {
        match cell {
            Cell::Null => Ok(None),
            other => self.int(other, column).map(Some),
        }
    }

    /// Text.
    pub fn text(&self, cell: &Cell, column: &str) -> Result<String, StoreError> {
        match cell {
            Cell::Text(t) => Ok(t.clone()),
            other => Err(self.damaged(column, other)),
        }
    }

    /// Text or NULL.
    pub fn opt_text(&self, cell: &Cell, column: &str) -> Result<Option<String>, StoreError> {
        match cell {
            Cell::Null => Ok(None),
            other => self.text(other, column).map(Some),
        }
    }

    /// Bytes (a key), shown as (lossy) text.
    pub fn lossy(&self, cell: &Cell, column: &str) -> Result<String, StoreError> {
        match cell {
            Cell::Bytes(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            other => Err(self.damaged(column, other)),
        }
    }

    /// An integer.
    pub fn int(&self, cell: &Cell, column: &str) -> Result<i64, StoreError> {
        match cell {
            Cell::Int(n) => Ok(*n),
            other => Err(self.damaged(column, other)),
        }
    }
}

/// A row's cells read in order, each as what its column holds.
pub struct Cursor<'a> {
    typed: Typed<'a>,
    row: &'a mut [Cell],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Reads `row` of `table`.
    pub fn new(db: &'a (impl Sql + ?Sized), table: &'a str, row: &'a mut [Cell]) -> Self {
        Cursor::of(db.typed(table), row)
    }

    /// Reads `row` as `typed` reads cells.
    pub fn of(typed: Typed<'a>, row: &'a mut [Cell]) -> Self {
        Cursor { typed, row, at: 0 }
    }

    /// Passes over the next `n` cells.
    pub fn skip(&mut self, n: usize) {
        self.at += n;
    }

    /// The next cell, taken out of the row (NULL past its end).
    fn next(&mut self) -> Cell {
        let cell = self.row.get_mut(self.at).map_or(Cell::Null, std::mem::take);
        self.at += 1;
        cell
    }

    pub fn int(&mut self, column: &str) -> Result<i64, StoreError> {
        let cell = self.next();
        self.typed.int(&cell, column)
    }

    /// A flag (0 or 1; PostgreSQL's booleans arrive so).
    pub fn flag(&mut self, column: &str) -> Result<bool, StoreError> {
        match self.int(column)? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(self.damaged_int(column, n)),
        }
    }

    pub fn text(&mut self, column: &str) -> Result<String, StoreError> {
        match self.next() {
            Cell::Text(t) => Ok(t),
            other => Err(self.typed.damaged(column, &other)),
        }
    }

    /// Bytes (a key), shown as (lossy) text.
    pub fn lossy(&mut self, column: &str) -> Result<String, StoreError> {
        let cell = self.next();
        self.typed.lossy(&cell, column)
    }

    pub fn opt_bytes(&mut self, column: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.next() {
            Cell::Null => Ok(None),
            Cell::Bytes(b) => Ok(Some(b)),
            other => Err(self.typed.damaged(column, &other)),
        }
    }

    pub fn bytes(&mut self, column: &str) -> Result<Vec<u8>, StoreError> {
        match self.next() {
            Cell::Bytes(b) => Ok(b),
            other => Err(self.typed.damaged(column, &other)),
        }
    }

    pub fn opt_int(&mut self, column: &str) -> Result<Option<i64>, StoreError> {
        let cell = self.next();
        self.typed.opt_int(&cell, column)
    }

    /// A revision, stored as its integer.
    pub fn revision(&mut self, column: &str) -> Result<Revision, StoreError> {
        self.int(column).map(Revision)
    }

    /// A revision or none.
    pub fn opt_revision(&mut self, column: &str) -> Result<Option<Revision>, StoreError> {
        Ok(self.opt_int(column)?.map(Revision))
    }

    pub fn opt_text(&mut self, column: &str) -> Result<Option<String>, StoreError> {
        match self.next() {
            Cell::Null => Ok(None),
            Cell::Text(t) => Ok(Some(t)),
            other => Err(self.typed.damaged(column, &other)),
        }
    }

    /// A time this tool wrote (see `Cell::from(Timestamp)`).
    pub fn time(&mut self, column: &str) -> Result<jiff::Timestamp, StoreError> {
        let micros = self.int(column)?;
        jiff::Timestamp::from_microsecond(micros).map_err(|_| self.damaged_int(column, micros))
    }

    /// A time this tool wrote, or NULL.
    pub fn opt_time(&mut self, column: &str) -> Result<Option<jiff::Timestamp>, StoreError> {
        let Some(micros) = self.opt_int(column)? else {
            return Ok(None);
        };
        let time = jiff::Timestamp::from_microsecond(micros);
        time.map(Some).map_err(|_| self.damaged_int(column, micros))
    }

    fn damaged_int(&self, column: &str, n: i64) -> StoreError {
        self.typed.damaged(column, &Cell::Int(n))
    }

    /// A flag or NULL.
    pub fn opt_flag(&mut self, column: &str) -> Result<Option<bool>, StoreError> {
        match self.row.get(self.at) {
            None | Some(Cell::Null) => {
                self.at += 1;
                Ok(None)
            }
            Some(_) => self.flag(column).map(Some),
        }
    }

    /// Text or NULL read as `T` by `parse`: text it does not read is damage.
    pub fn parsed<T, E: std::fmt::Display>(
        &mut self,
        column: &str,
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Result<Option<T>, StoreError> {
        self.opt_text(column)?
            .map(|t| parse(&t).map_err(|e| self.typed.damage(column, e)))
            .transpose()
    }

    /// A JSON text or NULL as `T` (`T::default()` for NULL): text that does
    /// not parse is damage.
    pub fn json<T: serde::de::DeserializeOwned + Default>(&mut self, column: &str) -> Result<T, StoreError> {
        Ok(self
            .parsed(column, |t: &str| serde_json::from_str::<T>(t))?
            .unwrap_or_default())
    }

    /// The next three cells, selected as `s.codec, s.<column>, b.<column>`
    /// (`b` joined on `b.id = s.base`): a compressed column.
    pub fn packed(&mut self, column: &str) -> Result<Packed, StoreError> {
        Ok(Packed {
            codec: self.opt_text(column)?,
            blob: self.opt_bytes(column)?,
            base: self.opt_bytes(column)?,
        })
    }

    /// Damage to `column` found past reading it.
    pub fn damage(&self, column: &str, problem: impl std::fmt::Display) -> StoreError {
        self.typed.damage(column, problem)
    }
}

/// A revision row's stored facts, read as the rest of it is.
impl FactRow for Cursor<'_> {
    type Error = StoreError;

    fn int(&mut self, column: &'static str) -> Result<Option<i64>, StoreError> {
        self.opt_int(column)
    }

    fn text(&mut self, column: &'static str) -> Result<Option<String>, StoreError> {
        self.opt_text(column)
    }

    fn bytes(&mut self, column: &'static str) -> Result<Option<Vec<u8>>, StoreError> {
        self.opt_bytes(column)
    }
}

/// The first row `sql` answers, as `read` reads it from `table`; `None`
/// when it answers none.
pub fn first_row<T>(
    db: &(impl Sql + ?Sized),
    table: &str,
    sql: &str,
    params: &[Cell],
    read: impl FnOnce(&mut Cursor) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut rows = db.rows(table, sql, params)?;
    rows.first_mut()
        .map(|row| read(&mut Cursor::new(db, table, row)))
        .transpose()
}

/// The one row `sql` always answers (an aggregate, a `RETURNING`), as
/// `read` reads it from `table`.
pub fn one_row<T>(
    db: &(impl Sql + ?Sized),
    table: &str,
    sql: &str,
    params: &[Cell],
    read: impl FnOnce(&mut Cursor) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    first_row(db, table, sql, params, read)?.ok_or_else(|| StoreError::Damaged {
        path: db.location().to_path_buf(),
        what: format!("{table}: a statement that always answers a row answered none"),
    })
}

/// `ids` as the parameter [`Dialect::id_list`] reads.
pub fn id_list(ids: &[i64]) -> Cell {
    Cell::Text(ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_of_another_type_is_damage_naming_table_and_column() {
        let row = || {
            [
                Cell::Int(7),
                Cell::Text("x".into()),
                Cell::Int(2),
                Cell::Bytes(b"/k".to_vec()),
            ]
        };
        let typed = || Typed {
            location: Path::new("db.sqlite"),
            table: "revisions",
        };
        let mut cells = row();
        let mut c = Cursor::of(typed(), &mut cells);
        assert_eq!(c.int("mod_revision").unwrap(), 7);
        let said = c.int("version").unwrap_err().to_string();
        assert_eq!(
            said,
            "database db.sqlite is damaged: revisions.version: Text(\"x\") is not what the column holds"
        );
        let said = c.flag("deleted").unwrap_err().to_string();
        assert!(said.contains("revisions.deleted: Int(2)"), "{said}");
        assert_eq!(c.lossy("key").unwrap(), "/k");
        assert!(
            c.text("past the row").is_err(),
            "a missing cell is NULL, not text"
        );
        let mut cells = row();
        let mut c = Cursor::of(typed(), &mut cells);
        assert!(c.opt_bytes("semantic_sha256").is_err());
    }

    #[test]
    fn id_lists_are_comma_separated() {
        assert_eq!(id_list(&[3, 1, 20]), Cell::Text("3,1,20".into()));
        assert_eq!(id_list(&[]), Cell::Text(String::new()));
    }
}

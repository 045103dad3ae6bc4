//! Rows as tables hold them, for moving data between databases (`copy`):
//! a value of either backend ([`Cell`]), which rows to read
//! ([`RowFilter`]), the row-level access each backend gives ([`Tables`]),
//! and the columns of each table copied, the same in both schemas.

use super::rows::{ContentRow, RevisionRow};
use super::sql::{id_list, Sql};
use super::StoreError;
use crate::canon::facts::{ObjectFacts, STORED_FACTS};
use crate::source::Revision;

/// One column's value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Cell {
    #[default]
    Null,
    /// Integers and flags (0/1; PostgreSQL's booleans).
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

/// A revision is stored as its integer.
impl From<Revision> for Cell {
    fn from(revision: Revision) -> Cell {
        Cell::Int(revision.0)
    }
}

impl Cell {
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Cell::Bytes(b) => Some(b),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// A time this tool wrote, as stored: integer microseconds since 1970 UTC
/// (read back by [`super::sql::Cursor::time`]).
impl From<jiff::Timestamp> for Cell {
    fn from(t: jiff::Timestamp) -> Cell {
        Cell::Int(t.as_microsecond())
    }
}

/// Which rows of a table to read.
#[derive(Clone, Debug)]
pub enum RowFilter {
    All,
    /// `column IN (ids)`.
    In(&'static str, Vec<i64>),
    /// `column = value`.
    Eq(&'static str, Cell),
    /// Rows whose `key_id` is a key of one of the clusters.
    KeysOfClusters(Vec<i64>),
}

/// Row-level reads and writes of a backend's tables (names and columns
/// from [`COLUMNS`], never from input).
pub trait Tables {
    /// Streams the `columns` of `table`'s rows that `filter` keeps, ordered
    /// by `order` (a column), in bounded memory.
    fn each_row(
        &self,
        table: &str,
        columns: &[&str],
        filter: &RowFilter,
        order: &str,
        visit: &mut dyn FnMut(&[Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;

    /// Inserts a row unless it conflicts with one stored (a unique key):
    /// whether it went in, and its `id` when `id` is asked for.
    fn insert_row(
        &self,
        table: &str,
        columns: &[&str],
        values: &[Cell],
        id: bool,
    ) -> Result<Option<i64>, StoreError>;

    /// The `id` of the row whose `columns` hold `values`.
    fn find_id(&self, table: &str, columns: &[&str], values: &[Cell]) -> Result<Option<i64>, StoreError>;

    /// Opens a transaction the rows that follow go into.
    fn begin_rows(&self) -> Result<(), StoreError>;
    fn commit_rows(&self) -> Result<(), StoreError>;
    fn rollback_rows(&self);
    /// After the rows committed: `revisions` and `audit_requests` were
    /// added (see [`Sql::loaded`]).
    fn loaded(&self, revisions: u64, audit_requests: u64) -> Result<(), StoreError>;
}

/// Row access written once, over either backend's statements.
impl<T: Sql + ?Sized> Tables for T {
    fn each_row(
        &self,
        table: &str,
        columns: &[&str],
        filter: &RowFilter,
        order: &str,
        visit: &mut dyn FnMut(&[Cell]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let ids = self.dialect().id_list;
        let (condition, params) = match filter {
            RowFilter::All => ("1 = 1".to_string(), Vec::new()),
            RowFilter::In(column, rows) => (format!("{column} IN {ids}"), vec![id_list(rows)]),
            RowFilter::Eq(column, value) => (format!("{column} = $1"), vec![value.clone()]),
            RowFilter::KeysOfClusters(clusters) => (
                format!("key_id IN (SELECT id FROM keys WHERE cluster_id IN {ids})"),
                vec![id_list(clusters)],
            ),
        };
        let sql = format!(
            "SELECT {} FROM {table} WHERE {condition} ORDER BY {order}",
            columns.join(", ")
        );
        self.each(table, &sql, &params, &mut |row| visit(row))
    }

    fn insert_row(
        &self,
        table: &str,
        columns: &[&str],
        values: &[Cell],
        id: bool,
    ) -> Result<Option<i64>, StoreError> {
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({}) ON CONFLICT DO NOTHING{}",
            columns.join(", "),
            marks.join(", "),
            if id { " RETURNING id" } else { "" }
        );
        if !id {
            return Ok((self.execute(&sql, values)? > 0).then_some(0));
        }
        let inserted = self.rows(table, &sql, values)?;
        inserted
            .first()
            .map(|r| self.typed(table).int(&r[0], "id"))
            .transpose()
    }

    fn find_id(&self, table: &str, columns: &[&str], values: &[Cell]) -> Result<Option<i64>, StoreError> {
        let condition: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} IS NOT DISTINCT FROM ${}", i + 1))
            .collect();
        let sql = format!("SELECT id FROM {table} WHERE {} LIMIT 1", condition.join(" AND "));
        let found = self.rows(table, &sql, values)?;
        found
            .first()
            .map(|r| self.typed(table).int(&r[0], "id"))
            .transpose()
    }

    fn begin_rows(&self) -> Result<(), StoreError> {
        self.begin_transaction()
    }

    fn commit_rows(&self) -> Result<(), StoreError> {
        self.commit_transaction()
    }

    fn rollback_rows(&self) {
        self.rollback_transaction()
    }

    fn loaded(&self, revisions: u64, audit_requests: u64) -> Result<(), StoreError> {
        Sql::loaded(self, revisions, audit_requests)
    }
}

/// A revision's columns: what a run writes ([`RevisionRow::COLUMNS`], then
/// its facts), and what classification and a vanished key's tombstone add.
const REVISION_COLUMNS: [&str; RevisionRow::COLUMNS.len() + STORED_FACTS + 5] = joined(&[
    &RevisionRow::COLUMNS,
    &ObjectFacts::COLUMNS,
    &[
        "change_class",
        "change_cause",
        "changed_paths",
        "changed_by",
        "deleted_after",
    ],
]);

/// `parts` one after another, as one list of `N` names.
const fn joined<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut at, mut part) = (0, 0);
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            (at, i) = (at + 1, i + 1);
        }
        part += 1;
    }
    assert!(at == N, "the parts make N names");
    out
}

/// The columns of every table, declared once (row ids aside): what a copy
/// moves, and what both backends' migrations must give (the test
/// `store_contract::every_table_holds_the_columns_declared_once`).
pub const COLUMNS: &[(&str, &[&str])] = &[
    ("settings", &["name", "value"]),
    ("clusters", &["etcd_cluster_id", "first_seen", "name"]),
    (
        "runs",
        &[
            "cluster_id",
            "kind",
            "source",
            "prefix",
            "started_at",
            "finished_at",
            "status",
            "head_revision",
            "compact_revision",
            "history_from",
            "keys_seen",
            "revisions_added",
            "error",
            "tool_version",
            "pid",
            "file_size",
            "file_sha256",
            "file_first_revision",
            "file_last_revision",
            "resource_filter",
            "complete_through",
            "etcd_version",
            "covered_from",
            "encryption_policy",
            "fetched",
            "salvage",
            "schema",
            "hash_key",
            "wal",
            "restored",
        ],
    ),
    (
        "keys",
        &["cluster_id", "key", "api_group", "resource", "namespace", "name"],
    ),
    ("field_paths", &["path"]),
    ("semantic_values", &ContentRow::COLUMNS),
    ("revisions", &REVISION_COLUMNS),
    (
        "history_gaps",
        &["run_id", "cluster_id", "from_revision", "to_revision"],
    ),
    (
        "findings",
        &[
            "cluster_id",
            "detector",
            "severity",
            "keys",
            "revisions",
            "summary",
            "details",
            "analyzed_at",
        ],
    ),
    (
        "run_members",
        &["run_id", "at", "endpoint", "member_id", "moved_because"],
    ),
    (
        "audit_requests",
        &[
            "cluster_id",
            "audit_id",
            "verb",
            "api_group",
            "resource",
            "namespace",
            "name",
            "subresource",
            "key_id",
            "username",
            "groups",
            "impersonated_user",
            "user_agent",
            "source_ips",
            "code",
            "level",
            "response_revision",
            "precondition_revision",
            "time",
            "outcome",
            "log",
        ],
    ),
    (
        "revision_writers",
        &["key_id", "mod_revision", "request_id", "match"],
    ),
    ("clock_marks", &["cluster_id", "revision", "at"]),
    (
        "clock_envelope",
        &["cluster_id", "revision", "earliest", "latest"],
    ),
];

/// The columns of `table` a copy moves.
pub fn columns(table: &str) -> &'static [&'static str] {
    COLUMNS
        .iter()
        .find(|(t, _)| *t == table)
        .map(|(_, c)| *c)
        .expect("a table of ours")
}

/// Where `column` is in `table`'s [`columns`].
pub fn at(table: &str, column: &str) -> usize {
    columns(table)
        .iter()
        .position(|c| *c == column)
        .expect("a column of the table")
}

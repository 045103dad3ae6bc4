//! The PostgreSQL backend: a fleet's runs of many clusters in one database
//! server, in the schema `etcd_inspector`; the schema changes only through
//! `migrations/postgres/`. Every SQL statement and postgres type of this
//! backend lives in this module. Writers of different clusters run at once;
//! a cluster has one writer at a time (a session advisory lock).

mod cells;
mod clusters;
pub mod connect;
mod hash_key;
mod shortfall;
mod sql;

use super::StoreError;
use postgres::types::ToSql;
use postgres::{Client, Row};
use std::cell::{Cell, OnceCell, RefCell};
use std::path::{Path, PathBuf};

/// The schema every table of ours is in.
const SCHEMA: &str = "etcd_inspector";

// The migrations, applied in order: the version of a database this binary
// has upgraded is their count.
include!(concat!(env!("OUT_DIR"), "/postgres_migrations.rs"));

/// What every session of ours sets once our schema is there: our schema
/// first on the search path, and no JIT (our aggregates run once each, and
/// compiling one took 0.3 s for a cluster alone to 1.6 s among ten, of a
/// 0.6 s to 2 s query; PostgreSQL 15, a million revisions a cluster).
fn session() -> String {
    format!("SET search_path TO {SCHEMA}; SET jit = off")
}

/// The tables a run fills, whose planner statistics a large load refreshes.
const RUN_TABLES: &[&str] = &[
    "keys",
    "revisions",
    "semantic_values",
    "field_paths",
    "clock_marks",
];

/// What a reading session sets besides: unless the server's administrator
/// set it, `random_page_cost` 1.1, as for SSDs. A cluster's revisions lie
/// together (each run copies its rows in pages), but the default 4 prices
/// reading them through `revisions_by_cluster` above scanning every
/// cluster's revisions, 5-6x slower among ten clusters. Writers keep the
/// server's: a cluster's first run asks before the statistics know its
/// keys, and the cheaper random read then tipped key lookups onto scans.
const READING: &str = "SELECT set_config('random_page_cost', '1.1', false) FROM pg_settings \
     WHERE name = 'random_page_cost' AND source = 'default'";

/// Prepared statements a connection keeps.
const STATEMENTS: usize = 256;

/// Rows fetched per page where a read streams.
pub(in crate::store) const PAGE: i64 = 1000;

/// An open PostgreSQL database.
pub struct Store {
    client: RefCell<Client>,
    /// Statements prepared on this connection, by their SQL: a statement
    /// runs in one round trip instead of two.
    statements: RefCell<std::collections::HashMap<String, postgres::Statement>>,
    /// The `--db` it was opened with, to connect again (never shown).
    uri: String,
    /// The URI without its password, for messages and `runs`.
    pub(in crate::store) path: PathBuf,
    /// Whether a transaction is open (statements then join it).
    in_tx: Cell<bool>,
    /// Names of cursors open at once.
    cursors: Cell<u64>,
    /// `<address>-<port>-<database>` of the server, naming its default key
    /// file.
    server: String,
    /// The key this handle's runs hash with, once loaded.
    hash_key: OnceCell<crate::canon::keyed_hash::HashKey>,
}

impl Store {
    /// Runs `f` on the connection. The `postgres` client drives its own
    /// runtime, which may not start inside a runtime's thread (a live run
    /// reads etcd in one), so `f` runs as a blocking section; the
    /// connection is never held while a caller's closure runs.
    pub(in crate::store) fn with_client<T>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        tokio::task::block_in_place(|| f(&mut self.client.borrow_mut())).map_err(|e| self.err(e))
    }

    pub(in crate::store) fn err(&self, source: postgres::Error) -> StoreError {
        StoreError::Backend {
            path: self.path.clone(),
            source: Box::new(connect::Described(source)),
        }
    }

    /// The error for a stored value that cannot be what its column holds.
    pub(in crate::store) fn damaged(&self, column: &str, problem: impl std::fmt::Display) -> StoreError {
        StoreError::Damaged {
            path: self.path.clone(),
            what: format!("{column}: {problem}"),
        }
    }

    /// Runs `f` in one transaction (or in the open one): committed when it
    /// succeeds, rolled back when it fails.
    pub(in crate::store) fn in_transaction<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        if self.in_tx.get() {
            return f();
        }
        self.begin()?;
        match f() {
            Ok(value) => {
                self.commit()?;
                Ok(value)
            }
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    pub(in crate::store) fn begin(&self) -> Result<(), StoreError> {
        self.with_client(|c| c.batch_execute("BEGIN"))?;
        self.in_tx.set(true);
        Ok(())
    }

    pub(in crate::store) fn commit(&self) -> Result<(), StoreError> {
        self.in_tx.set(false);
        self.with_client(|c| c.batch_execute("COMMIT"))
    }

    pub(in crate::store) fn rollback(&self) {
        if self.in_tx.replace(false) {
            let _ = self.with_client(|c| c.batch_execute("ROLLBACK"));
        }
    }

    pub(in crate::store) fn in_transaction_now(&self) -> bool {
        self.in_tx.get()
    }

    /// One statement's rows.
    pub(in crate::store) fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        self.with_client(|c| c.query(sql, params))
    }

    /// One statement's only row, if any.
    pub(in crate::store) fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        self.with_client(|c| c.query_opt(sql, params))
    }

    /// [`Store::query`] through a statement prepared once per connection:
    /// one round trip instead of two, for statements run once per key or
    /// content. Never for a statement on a temporary table, whose prepared
    /// form outlives the table.
    pub(in crate::store) fn query_prepared(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql)?;
        self.with_client(|c| c.query(&statement, params))
    }

    /// Runs one statement: the rows it changed.
    pub(in crate::store) fn execute(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        self.with_client(|c| c.execute(sql, params))
    }

    /// Brings the planner's statistics of `tables` up to date when `added`
    /// rows of `counted` (one of them) are a tenth or more of what the
    /// planner believes it holds (autovacuum's own threshold). A bulk load
    /// leaves the statistics stale until autovacuum's next round (a minute
    /// or more later), and what follows at once (`analyze` straight after a
    /// run, the audit join straight after staging) is then planned for
    /// near-empty tables: nested loops over every revision, 19 s where 2 s
    /// do at 18,000 revisions, and worse beyond. ANALYZE samples a bounded
    /// number of rows, so it costs about the same at any size; a role that
    /// does not own the tables gets a warning, not an error.
    pub(in crate::store) fn refresh_statistics(
        &self,
        counted: &str,
        added: u64,
        tables: &[&str],
    ) -> Result<(), StoreError> {
        let planned: f64 = self
            .query_opt(
                "SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1::text)",
                &[&counted],
            )?
            .map_or(-1.0, |r| r.get(0));
        // Never analyzed: -1 (0 before PostgreSQL 14).
        if added > 0 && (planned <= 0.0 || added as f64 >= planned / 10.0) {
            self.execute(&format!("ANALYZE {}", tables.join(", ")), &[])?;
        }
        Ok(())
    }

    /// `sql` prepared, once per connection (at most [`STATEMENTS`] kept).
    fn statement(&self, sql: &str) -> Result<postgres::Statement, StoreError> {
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let prepared = self.with_client(|c| c.prepare(sql))?;
        let mut cache = self.statements.borrow_mut();
        if cache.len() >= STATEMENTS {
            cache.clear();
        }
        cache.insert(sql.to_string(), prepared.clone());
        Ok(prepared)
    }

    /// Streams a query's rows `PAGE` at a time through a cursor, in a
    /// transaction (its own unless one is open), without holding the
    /// connection while `visit` runs: `visit` may query the store, and
    /// memory stays bounded however many rows there are.
    pub(in crate::store) fn each_page(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        visit: &mut dyn FnMut(&[Row]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.in_transaction(|| {
            let n = self.cursors.get();
            self.cursors.set(n + 1);
            let name = format!("page_cursor_{n}");
            let walked = (|| {
                self.execute(&format!("DECLARE {name} NO SCROLL CURSOR FOR {sql}"), params)?;
                loop {
                    let rows = self.query(&format!("FETCH {PAGE} FROM {name}"), &[])?;
                    if rows.is_empty() {
                        break;
                    }
                    visit(&rows)?;
                }
                self.with_client(|c| c.batch_execute(&format!("CLOSE {name}")))
            })();
            self.cursors.set(n);
            walked
        })
    }

    /// Connects, checks the schema version and upgrades it; creates the
    /// schema when missing only if `create`.
    fn open_inner(uri: &str, create: bool) -> Result<Store, StoreError> {
        let (client, shown) = connect::connect(uri)?;
        let store = Store {
            client: RefCell::new(client),
            uri: uri.to_string(),
            statements: RefCell::new(std::collections::HashMap::new()),
            path: PathBuf::from(shown),
            in_tx: Cell::new(false),
            cursors: Cell::new(0),
            server: String::new(),
            hash_key: OnceCell::new(),
        };
        let mut store = store;
        let me = store
            .query_opt(
                "SELECT coalesce(host(inet_server_addr()), 'local'), coalesce(inet_server_port(), 0), current_database()",
                &[],
            )?
            .expect("a row");
        store.server = format!(
            "{}-{}-{}",
            me.get::<_, String>(0),
            me.get::<_, i32>(1),
            me.get::<_, String>(2)
        )
        .replace(['/', ':'], "_");
        store.prepare_schema(create)?;
        Ok(store)
    }

    /// Connects again when the connection was lost (the server restarted,
    /// an administrator ended the session), so that a run can still record
    /// how it ended; whatever the lost session held open is gone with it.
    pub(in crate::store) fn reconnect_if_lost(&self) -> Result<(), StoreError> {
        if !self.client.borrow().is_closed() {
            return Ok(());
        }
        let (client, _) = tokio::task::block_in_place(|| connect::connect(&self.uri))?;
        *self.client.borrow_mut() = client;
        self.statements.borrow_mut().clear();
        self.in_tx.set(false);
        self.with_client(|c| c.batch_execute(&session()))
    }

    /// Finds and upgrades (or, if `create`, creates) our schema, and
    /// refuses one a newer version wrote or another application owns.
    fn prepare_schema(&self, create: bool) -> Result<(), StoreError> {
        let version_table = self
            .query_opt(
                "SELECT to_regclass($1)::text, (SELECT count(*) FROM pg_namespace WHERE nspname = $2), \
                 (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $2)",
                &[&format!("{SCHEMA}.schema_version"), &SCHEMA],
            )?
            .expect("a row");
        let (table, schema, objects): (Option<String>, i64, i64) =
            (version_table.get(0), version_table.get(1), version_table.get(2));
        let found: i64 = match (table, schema, objects) {
            (Some(_), _, _) => self
                .query_opt(&format!("SELECT max(version) FROM {SCHEMA}.schema_version"), &[])?
                .and_then(|r| r.get::<_, Option<i64>>(0))
                .unwrap_or(0),
            // None yet, or an empty one a DBA created for us.
            (None, 0, _) | (None, _, 0) => 0,
            (None, _, _) => {
                return Err(StoreError::Conflict {
                    path: self.path.clone(),
                    message: format!(
                    "has a schema {SCHEMA} that etcd-inspector did not create (no {SCHEMA}.schema_version): \
                         another application's; use another database"
                ),
                })
            }
        };
        let known = MIGRATION_FILES.len() as i64;
        if found > known {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                known,
            });
        }
        if found == 0 && !create {
            return Err(StoreError::Io {
                path: self.path.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "holds no etcd-inspector data (run `etcd-inspector snapshot` first)",
                ),
            });
        }
        // A reader upgrades too, as SQLite's does: its queries are the
        // new schema's (concurrent upgraders take turns under a lock).
        if found < known {
            self.migrate(schema > 0)?;
        }
        self.with_client(|c| c.batch_execute(&session()))
    }

    /// Applies the migrations this database lacks, in one transaction,
    /// under a lock so that two upgrading processes take turns; creates the
    /// schema unless it `exists` (which needs CREATE on the database).
    fn migrate(&self, exists: bool) -> Result<(), StoreError> {
        let migrate_err = |e: postgres::Error| StoreError::Migrate {
            path: self.path.clone(),
            source: Box::new(connect::Described(e)),
        };
        tokio::task::block_in_place(|| self.migrate_now(exists, migrate_err))
    }

    fn migrate_now(
        &self,
        exists: bool,
        migrate_err: impl Fn(postgres::Error) -> StoreError,
    ) -> Result<(), StoreError> {
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(&migrate_err)?;
        let create = if exists {
            String::new()
        } else {
            format!("CREATE SCHEMA IF NOT EXISTS {SCHEMA};")
        };
        tx.batch_execute(&format!(
            "SELECT pg_advisory_xact_lock(hashtext('{SCHEMA}.migrate'));
             {create}
             SET LOCAL search_path TO {SCHEMA};
             CREATE TABLE IF NOT EXISTS schema_version (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ))
        .map_err(&migrate_err)?;
        let found: i64 = tx
            .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
            .map_err(&migrate_err)?
            .get(0);
        for (at, (_, sql)) in MIGRATION_FILES.iter().enumerate().skip(found as usize) {
            tx.batch_execute(sql).map_err(&migrate_err)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES ($1)",
                &[&(at as i64 + 1)],
            )
            .map_err(&migrate_err)?;
        }
        tx.commit().map_err(&migrate_err)
    }

    /// Opens the database to write runs, creating the schema when needed.
    pub fn open_for_writing(uri: &str) -> Result<Store, StoreError> {
        Store::open_inner(uri, true)
    }

    /// Opens a database that holds our schema, to change it (upgrading an
    /// older schema in place, as a writer does).
    pub fn open_existing_for_writing(uri: &str) -> Result<Store, StoreError> {
        Store::open_inner(uri, false)
    }

    /// Opens a database that holds our schema, to read it (upgrading an
    /// older schema in place, as SQLite's reader does).
    pub fn open_for_reading(uri: &str) -> Result<Store, StoreError> {
        let store = Store::open_inner(uri, false)?;
        store.with_client(|c| c.batch_execute(READING))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
pub fn is_uri(db: &str) -> bool {
    db.starts_with("postgresql://") || db.starts_with("postgres://")
}

impl crate::store::reader::Located for Store {
    fn location(&self) -> &Path {
        self.path()
    }
}

//! One connection type for both backends, chosen from the database URL, and its r2d2 pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{self, ManageConnection};
use diesel::{Connection, PgConnection, SqliteConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

#[allow(missing_docs)]
mod multi {
    use diesel::{PgConnection, SqliteConnection};

    /// A connection to SQLite or PostgreSQL. Queries written against it run on either; the
    /// derive also generates the `MultiBackend` it speaks (undocumented, generated code).
    #[derive(diesel::MultiConnection)]
    pub enum DbConnection {
        /// PostgreSQL.
        Postgres(PgConnection),
        /// SQLite.
        Sqlite(SqliteConnection),
    }
}

pub use multi::DbConnection;

/// Which engine a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// `postgres://` or `postgresql://`.
    Postgres,
    /// `sqlite://PATH` or a bare file path.
    Sqlite,
}

/// A parsed database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// A PostgreSQL connection URL.
    Postgres(String),
    /// A SQLite database file.
    Sqlite(PathBuf),
}

/// Errors opening or using the database.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL names no supported backend, or a SQLite file in a folder that does not exist.
    #[error("invalid database URL: {0}")]
    InvalidUrl(String),
    /// Connecting failed.
    #[error("cannot connect: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// A query failed.
    #[error(transparent)]
    Query(#[from] diesel::result::Error),
    /// The pool could not be built or gave no connection in time.
    #[error("connection pool: {0}")]
    Pool(#[from] r2d2::PoolError),
    /// A migration failed.
    #[error("migration failed: {0}")]
    Migration(String),
}

impl DatabaseUrl {
    /// Parses `postgres://…`, `postgresql://…`, `sqlite://PATH` or a bare path (SQLite). A
    /// bare path or `sqlite://` path whose folder does not exist is refused, so that a typo does
    /// not silently create an empty database elsewhere.
    ///
    /// # Errors
    /// [`DbError::InvalidUrl`].
    pub fn parse(url: &str) -> Result<Self, DbError> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(DatabaseUrl::Postgres(url.to_owned()));
        }
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        if path.is_empty() || path.contains("://") {
            return Err(DbError::InvalidUrl(format!(
                "{url}: use postgres://… or sqlite://PATH"
            )));
        }
        let path = PathBuf::from(path);
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(DbError::InvalidUrl(format!(
                "{url}: folder {} does not exist",
                parent.display()
            )));
        }
        Ok(DatabaseUrl::Sqlite(path))
    }

    /// The backend.
    pub fn kind(&self) -> BackendKind {
        match self {
            DatabaseUrl::Postgres(_) => BackendKind::Postgres,
            DatabaseUrl::Sqlite(_) => BackendKind::Sqlite,
        }
    }

    /// Opens one connection (SQLite connections get their PRAGMAs).
    ///
    /// # Errors
    /// [`DbError::Connect`] or [`DbError::Query`] for a failed PRAGMA.
    pub fn connect(&self) -> Result<DbConnection, DbError> {
        self.connect_with(false)
    }

    /// As [`DatabaseUrl::connect`]; with `manual_checkpoints`, SQLite's automatic WAL
    /// checkpoint is turned off on this connection (the owner of the store calls
    /// `DieselStore::checkpoint` instead).
    ///
    /// # Errors
    /// As [`DatabaseUrl::connect`].
    pub fn connect_with(&self, manual_checkpoints: bool) -> Result<DbConnection, DbError> {
        match self {
            DatabaseUrl::Postgres(url) => Ok(DbConnection::Postgres(establish_postgres(url)?)),
            DatabaseUrl::Sqlite(path) => {
                let mut c = SqliteConnection::establish(&path.to_string_lossy())?;
                c.batch_execute(SQLITE_PRAGMAS)?;
                if manual_checkpoints {
                    c.batch_execute("PRAGMA wal_autocheckpoint = 0;")?;
                }
                Ok(DbConnection::Sqlite(c))
            }
        }
    }
}

/// Opens one PostgreSQL connection, OpenSSL initialized first without its exit-time cleanup.
///
/// libpq negotiates TLS through OpenSSL (`sslmode=prefer` by default), and OpenSSL left to
/// initialize itself registers an `atexit` handler that frees its global state. A process that
/// exits while another thread is inside libpq (an r2d2 worker filling the pool, a connection
/// closing) then crashes with SIGSEGV. [`openssl_sys::init`] initializes OpenSSL once with
/// `OPENSSL_INIT_NO_ATEXIT`, and OpenSSL registers the handler only on its first
/// initialization, so this must run before libpq's first connection in the process: every
/// PostgreSQL connection of the store is opened here.
///
/// # Errors
/// diesel's connection error.
pub fn establish_postgres(url: &str) -> diesel::ConnectionResult<PgConnection> {
    openssl_sys::init();
    PgConnection::establish(url)
}

/// Set on every SQLite connection (ARCHITECTURE.md, Storage): WAL so readers never wait for
/// the writer, a busy timeout so writers queue instead of failing, foreign keys on, and
/// `synchronous=FULL`: each commit syncs the write-ahead log before it returns, so a write the
/// server acknowledged survives a power loss or an operating-system crash, not only a crash of
/// the process (`NORMAL` in WAL mode syncs only at checkpoints: a power loss could undo the
/// last acknowledged transactions, though never corrupt the file). Chosen deliberately
/// (docs/API.md, Reliability and security): one log sync per transaction, which the event
/// store's group commit shares among concurrent webhook batches.
pub const SQLITE_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;";

/// The busy timeout [`SQLITE_PRAGMAS`] sets, in milliseconds.
pub const SQLITE_BUSY_TIMEOUT_MS: u32 = 5000;

/// Creates pool connections.
#[derive(Debug, Clone)]
pub struct ConnectionManager {
    url: DatabaseUrl,
    manual_checkpoints: bool,
}

impl ConnectionManager {
    /// A manager for `url`.
    pub fn new(url: DatabaseUrl) -> Self {
        ConnectionManager {
            url,
            manual_checkpoints: false,
        }
    }
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = DbError;

    fn connect(&self) -> Result<DbConnection, DbError> {
        self.url.connect_with(self.manual_checkpoints)
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), DbError> {
        conn.batch_execute("SELECT 1").map_err(DbError::Query)
    }

    /// A connection is dropped instead of returned to the pool when a query on it just failed
    /// because the connection was lost (`mark_broken`); the pool opens a new one when the
    /// database is back, with no probe on every checkout.
    fn has_broken(&self, _conn: &mut DbConnection) -> bool {
        BROKEN.with(|b| b.replace(false))
    }
}

thread_local! {
    /// Set by [`mark_broken`] on the thread that saw a lost connection; read and cleared by
    /// `has_broken` when that thread gives the connection back (a pooled connection is used
    /// and returned on one blocking thread).
    static BROKEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the connection in use on this thread as lost: the pool drops it when it comes back.
pub(crate) fn mark_broken() {
    BROKEN.with(|b| b.set(true));
}

/// The pool.
pub type DbPool = r2d2::Pool<ConnectionManager>;

/// Pool sizing and timeouts (explicit, configurable: ARCHITECTURE.md).
#[derive(Debug, Clone, Copy)]
pub struct PoolConfig {
    /// Most connections open at once.
    pub max_size: u32,
    /// Connections kept open when idle.
    pub min_idle: u32,
    /// How long a request waits for a connection before failing (503-worthy).
    pub connection_timeout: Duration,
    /// SQLite only: turn SQLite's automatic WAL checkpoints off, so the checkpoint's fsync is
    /// never inside the commit that crosses SQLite's threshold (on a request's path); the
    /// owner of the store then calls `DieselStore::checkpoint` periodically instead (the
    /// server's supervisor does, every second). `false`: SQLite's automatic checkpoints.
    pub manual_checkpoints: bool,
}

impl PoolConfig {
    /// Defaults per backend: SQLite 8 connections (one writer at a time anyway), PostgreSQL 16,
    /// all opened at start (opening PostgreSQL connections under load showed as latency
    /// outliers); 5 s to get a connection.
    pub fn default_for(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Sqlite => PoolConfig {
                max_size: 8,
                min_idle: 8,
                connection_timeout: Duration::from_secs(5),
                manual_checkpoints: false,
            },
            BackendKind::Postgres => PoolConfig {
                max_size: 16,
                min_idle: 16,
                connection_timeout: Duration::from_secs(5),
                manual_checkpoints: false,
            },
        }
    }
}

/// Builds a pool (opening `min_idle` connections now, so a bad URL fails at start).
///
/// # Errors
/// [`DbError::Pool`] when no connection can be opened.
pub fn build_pool(url: &DatabaseUrl, config: PoolConfig) -> Result<DbPool, DbError> {
    // Surface the real connection error rather than r2d2's timeout.
    drop(url.connect()?);
    let pool = r2d2::Pool::builder()
        .max_size(config.max_size)
        .min_idle(Some(config.min_idle.min(config.max_size)))
        .connection_timeout(config.connection_timeout)
        .test_on_check_out(false)
        .build(ConnectionManager {
            url: url.clone(),
            manual_checkpoints: url.kind() == BackendKind::Sqlite && config.manual_checkpoints,
        })?;
    Ok(pool)
}

/// SQLite migrations, embedded at build time.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
/// PostgreSQL migrations, embedded at build time.
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

fn migration_err(e: Box<dyn std::error::Error + Send + Sync>) -> DbError {
    DbError::Migration(e.to_string())
}

/// Applies pending migrations; returns the versions applied.
///
/// # Errors
/// [`DbError::Migration`].
pub fn run_migrations(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    let applied = match conn {
        DbConnection::Postgres(c) => c
            .run_pending_migrations(POSTGRES_MIGRATIONS)
            .map_err(migration_err)?,
        DbConnection::Sqlite(c) => c
            .run_pending_migrations(SQLITE_MIGRATIONS)
            .map_err(migration_err)?,
    };
    Ok(applied.into_iter().map(|v| v.to_string()).collect())
}

/// Reverts every applied migration (tests and operators only).
///
/// # Errors
/// [`DbError::Migration`].
pub fn revert_all_migrations(conn: &mut DbConnection) -> Result<Vec<String>, DbError> {
    let reverted = match conn {
        DbConnection::Postgres(c) => c
            .revert_all_migrations(POSTGRES_MIGRATIONS)
            .map_err(migration_err)?,
        DbConnection::Sqlite(c) => c
            .revert_all_migrations(SQLITE_MIGRATIONS)
            .map_err(migration_err)?,
    };
    Ok(reverted.into_iter().map(|v| v.to_string()).collect())
}

/// Whether migrations are pending.
///
/// # Errors
/// [`DbError::Migration`].
pub fn has_pending_migrations(conn: &mut DbConnection) -> Result<bool, DbError> {
    match conn {
        DbConnection::Postgres(c) => c
            .has_pending_migration(POSTGRES_MIGRATIONS)
            .map_err(migration_err),
        DbConnection::Sqlite(c) => c
            .has_pending_migration(SQLITE_MIGRATIONS)
            .map_err(migration_err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            DatabaseUrl::parse("postgres://u@h/db").unwrap().kind(),
            BackendKind::Postgres
        );
        assert_eq!(
            DatabaseUrl::parse("postgresql://u@h/db").unwrap().kind(),
            BackendKind::Postgres
        );
        let tmp = std::env::temp_dir().join("x.sqlite");
        let s = DatabaseUrl::parse(&format!("sqlite://{}", tmp.display())).unwrap();
        assert_eq!(s, DatabaseUrl::Sqlite(tmp.clone()));
        assert_eq!(DatabaseUrl::parse(&tmp.display().to_string()).unwrap(), s);
        assert!(DatabaseUrl::parse("sqlite:///no/such/dir/x.sqlite").is_err());
        assert!(DatabaseUrl::parse("mysql://x").is_err());
        assert!(DatabaseUrl::parse("").is_err());
    }

    #[test]
    fn the_busy_timeout_constant_is_the_one_the_pragmas_set() {
        assert!(SQLITE_PRAGMAS.contains(&format!("busy_timeout = {SQLITE_BUSY_TIMEOUT_MS};")));
    }
}

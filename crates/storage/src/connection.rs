//! One connection type for both backends, chosen from the database URL, and its r2d2 pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{self, ManageConnection};
use diesel::{Connection, PgConnection, SqliteConnection};

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
    /// The database has migrations this binary does not know: a newer release applied them.
    #[error(
        "the database's schema is at version {database}, newer than this switchboard {binary_release} knows (its latest: {binary}): a newer release migrated it; run that release (or newer), or restore a backup taken before the upgrade"
    )]
    SchemaNewer {
        /// The latest migration applied to the database.
        database: String,
        /// The latest migration this binary knows.
        binary: String,
        /// This binary's release (its package version).
        binary_release: String,
    },
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

/// Set on every SQLite connection (ARCHITECTURE.md, Storage): first a busy timeout, so that
/// no statement of the connection fails at once on a lock another connection holds (not even
/// the switch to WAL that follows: it needs the database to itself while it converts a new
/// file, and its first read of a WAL database can meet another connection rebuilding the
/// log's index, as a server's pool opening its connections together does right after other
/// processes closed theirs; without the timeout first that read was `database is locked`);
/// then WAL so readers never wait for the writer, foreign keys on, and
/// `synchronous=FULL`: each commit syncs the write-ahead log before it returns, so a write the
/// server acknowledged survives a power loss or an operating-system crash, not only a crash of
/// the process (`NORMAL` in WAL mode syncs only at checkpoints: a power loss could undo the
/// last acknowledged transactions, though never corrupt the file). Chosen deliberately
/// (docs/API.md, Reliability and security): one log sync per transaction, which the event
/// store's group commit shares among concurrent webhook batches.
pub const SQLITE_PRAGMAS: &str = "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;";

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
    fn a_connection_waits_for_a_lock_instead_of_failing_while_it_sets_up() {
        // A database another connection holds to itself (a rollback-journal file in an
        // exclusive transaction: what a first switch to WAL, or a WAL index being rebuilt,
        // looks like to an opening connection) for 300 ms.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.sqlite");
        let mut holder = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
        holder
            .batch_execute("PRAGMA journal_mode = DELETE; CREATE TABLE t (x INTEGER); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            holder.batch_execute("COMMIT").unwrap();
        });
        let started = std::time::Instant::now();
        let url = DatabaseUrl::Sqlite(path);
        let opened = url.connect();
        release.join().unwrap();
        assert!(
            opened.is_ok(),
            "the connection failed: {:?}",
            opened.as_ref().err()
        );
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "the connection waited for the lock"
        );
        let Ok(DbConnection::Sqlite(mut conn)) = opened else {
            panic!("not SQLite")
        };
        let mode: Vec<String> = diesel::RunQueryDsl::load::<JournalMode>(
            diesel::sql_query("PRAGMA journal_mode"),
            &mut conn,
        )
        .unwrap()
        .into_iter()
        .map(|m| m.journal_mode)
        .collect();
        assert_eq!(mode, ["wal"]);
    }

    #[derive(diesel::QueryableByName)]
    struct JournalMode {
        #[diesel(sql_type = diesel::sql_types::Text)]
        journal_mode: String,
    }

    #[test]
    fn the_busy_timeout_constant_is_the_one_the_pragmas_set() {
        assert!(SQLITE_PRAGMAS.contains(&format!("busy_timeout = {SQLITE_BUSY_TIMEOUT_MS};")));
    }
}

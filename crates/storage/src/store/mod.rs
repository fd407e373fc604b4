//! The diesel implementation of the domain ports, the same code on both backends: the store
//! core here (pool, connections, write transactions, checkpoints), row conversions in
//! [`rows`], one module per resource, and the group commit of event appends in
//! [`group_commit`].

/// Runs a query on the backend's own connection type rather than through the
/// `MultiConnection` wrapper: the same diesel expression, compiled for each backend, so hot
/// reads use the driver's prepared-statement cache and skip the wrapper's per-query SQL
/// rewriting (measured: SQLite spent its time re-parsing every query through the wrapper).
macro_rules! native {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Sqlite($c) => $body,
            DbConnection::Postgres($c) => $body,
        }
    };
}

mod conversations;
mod events;
mod group_commit;
mod identity;
mod org_settings;
mod rows;
mod sandboxes;

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use switchboard_domain::StorageError;
use switchboard_domain::ports::Store;

use crate::connection::{
    BackendKind, DatabaseUrl, DbConnection, DbError, DbPool, PoolConfig, build_pool,
};
use group_commit::AppendCombiner;
use rows::db_err;

/// The store: a pool over one database.
#[derive(Clone)]
pub struct DieselStore {
    pool: DbPool,
    kind: BackendKind,
    /// SQLite has one writer at a time: writes of this process queue here instead of spinning
    /// in SQLite's busy handler (ARCHITECTURE.md: one writer path, immediate transactions).
    sqlite_writer: std::sync::Arc<std::sync::Mutex<()>>,
    /// Appends waiting to be committed together.
    appends: std::sync::Arc<AppendCombiner>,
}

/// Pool usage, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUsage {
    /// Open connections.
    pub connections: u32,
    /// Of which idle.
    pub idle: u32,
    /// Configured maximum.
    pub max_size: u32,
}

impl DieselStore {
    /// Opens a pool on `url`, applies pending migrations and returns the store with the
    /// migrations applied (their versions).
    ///
    /// # Errors
    /// An invalid URL, a failed connection or a failed migration.
    pub fn open(
        url: &str,
        config: Option<PoolConfig>,
    ) -> Result<(DieselStore, Vec<String>), DbError> {
        let url = DatabaseUrl::parse(url)?;
        let kind = url.kind();
        let pool = build_pool(
            &url,
            config.unwrap_or_else(|| PoolConfig::default_for(kind)),
        )?;
        let applied = crate::connection::run_migrations(&mut *pool.get()?)?;
        Ok((
            DieselStore {
                pool,
                kind,
                sqlite_writer: Default::default(),
                appends: Default::default(),
            },
            applied,
        ))
    }

    /// The backend.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Pool usage now.
    pub fn pool_usage(&self) -> PoolUsage {
        let s = self.pool.state();
        PoolUsage {
            connections: s.connections,
            idle: s.idle_connections,
            max_size: self.pool.max_size(),
        }
    }

    /// Runs `f` in a write transaction: on SQLite behind this process's writer lock, in
    /// `BEGIN IMMEDIATE` (so the transaction holds the write lock from its first statement and
    /// cannot fail to upgrade); on PostgreSQL in an ordinary transaction.
    ///
    /// # Errors
    /// `f`'s error, or a failure to begin or commit.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        use diesel::connection::SimpleConnection;
        let mut conn = self.conn()?;
        match self.kind {
            BackendKind::Postgres => conn
                .transaction(|c| f(c).map_err(TxError::Storage))
                .map_err(TxError::into_storage),
            BackendKind::Sqlite => {
                let _guard = self
                    .sqlite_writer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                conn.batch_execute("BEGIN IMMEDIATE").map_err(db_err)?;
                match f(&mut conn) {
                    Ok(v) => match conn.batch_execute("COMMIT") {
                        Ok(()) => Ok(v),
                        Err(e) => {
                            let _ = conn.batch_execute("ROLLBACK");
                            Err(db_err(e))
                        }
                    },
                    Err(e) => {
                        let _ = conn.batch_execute("ROLLBACK");
                        Err(e)
                    }
                }
            }
        }
    }

    /// Checkpoints SQLite's write-ahead log (PASSIVE: copies what it can without waiting for
    /// readers or the writer, never blocks them); a no-op on PostgreSQL. Called periodically
    /// when the store was opened with [`PoolConfig::manual_checkpoints`].
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when no connection is free in time, or the checkpoint's
    /// failure.
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        if self.kind != BackendKind::Sqlite {
            return Ok(());
        }
        use diesel::connection::SimpleConnection;
        self.conn()?
            .batch_execute("PRAGMA wal_checkpoint(PASSIVE);")
            .map_err(db_err)
    }

    /// A pooled connection.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when none is free in time.
    pub fn conn(
        &self,
    ) -> Result<diesel::r2d2::PooledConnection<crate::connection::ConnectionManager>, StorageError>
    {
        self.pool
            .get()
            .map_err(|e| StorageError::Unavailable(e.to_string()))
    }
}

/// A storage error inside a diesel transaction (which needs `From<diesel::result::Error>`).
enum TxError {
    Storage(StorageError),
    Diesel(DieselError),
}

impl From<DieselError> for TxError {
    fn from(e: DieselError) -> Self {
        TxError::Diesel(e)
    }
}

impl TxError {
    fn into_storage(self) -> StorageError {
        match self {
            TxError::Storage(e) => e,
            TxError::Diesel(e) => db_err(e),
        }
    }
}

impl Store for DieselStore {
    fn ready(&self) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        match crate::connection::has_pending_migrations(&mut conn) {
            Ok(false) => Ok(()),
            Ok(true) => Err(StorageError::Unavailable("migrations are pending".into())),
            Err(e) => Err(StorageError::Other(Box::new(e))),
        }
    }
}

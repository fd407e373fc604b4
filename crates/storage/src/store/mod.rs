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

mod agent_profiles;
mod appends;
mod backup;
mod conversations;
mod event_usage;
mod events;
mod group_commit;
mod identity;
mod installation;
mod key_cache;
mod llm_relay;
mod members;
mod named_profiles;
mod org_defaults;
mod org_settings;
mod read_cache;
mod rows;
mod sandboxes;
mod sealed;
mod settings_cache;
mod sign_in;
mod upkeep;
mod url_ports;
mod user_secrets;
mod user_settings;

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use std::sync::Arc;
use std::time::Duration;

use switchboard_domain::StorageError;
use switchboard_domain::jobs::{Job, Schedule};
use switchboard_domain::ports::{AppendObserver, Store};

use crate::connection::{
    BackendKind, DatabaseUrl, DbConnection, DbError, DbPool, PoolConfig, SQLITE_BUSY_TIMEOUT_MS,
    build_pool,
};
pub use appends::NOTIFY_CHANNEL;
pub use event_usage::DiskReserve;
use group_commit::AppendCombiner;
pub use key_cache::{IDENTITY_CHANNEL, KEY_CACHE_TTL, KeyCache};
pub use read_cache::ReadCache;
use rows::db_err;
pub use settings_cache::{SETTINGS_CHANNEL, SettingsCache};
pub use upkeep::MOVES_KEPT;

/// How often SQLite's write-ahead log is checkpointed by [`DieselStore::jobs`].
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// How often the conversation lists are kept up ([`DieselStore::upkeep`]).
const LIST_UPKEEP_EVERY: Duration = Duration::from_secs(60);

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
    /// Told after each commit which conversations gained events (API.md, Live delivery).
    observer: std::sync::Arc<std::sync::OnceLock<std::sync::Arc<dyn AppendObserver>>>,
    /// Organization settings of this process ([`SettingsCache`]).
    settings: std::sync::Arc<SettingsCache>,
    /// API-key lookups of this process ([`KeyCache`]).
    keys: std::sync::Arc<KeyCache>,
    /// The event quotas every append is judged by ([`DieselStore::with_event_quota`]).
    quota: switchboard_domain::event_quota::EventQuota,
    /// The free-space reserve of the database's filesystem ([`DieselStore::with_disk_reserve`]).
    disk: Option<std::sync::Arc<DiskReserve>>,
}

/// Pool usage, for metrics (the domain's type).
pub use switchboard_domain::ports::PoolUsage;

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
        let applied = crate::migrations::run_migrations(&mut *pool.get()?)?;
        Ok((
            DieselStore {
                pool,
                kind,
                sqlite_writer: Default::default(),
                appends: Default::default(),
                observer: Default::default(),
                settings: std::sync::Arc::new(settings_cache::settings_cache(
                    kind == BackendKind::Sqlite,
                )),
                keys: std::sync::Arc::new(key_cache::key_cache(kind == BackendKind::Sqlite)),
                quota: Default::default(),
                disk: None,
            },
            applied,
        ))
    }

    /// The same store judging every event append by `quota` (issue 33; the default is
    /// [`switchboard_domain::event_quota::EventQuota::default`]): set before the store is
    /// cloned into the services.
    #[must_use]
    pub fn with_event_quota(mut self, quota: switchboard_domain::event_quota::EventQuota) -> Self {
        self.quota = quota;
        self
    }

    /// The same store refusing event appends while the filesystem at `reserve.path` has less
    /// than `reserve.reserve` bytes free (`--min-free-disk`, issue 33).
    #[must_use]
    pub fn with_disk_reserve(mut self, reserve: DiskReserve) -> Self {
        self.disk = Some(std::sync::Arc::new(reserve));
        self
    }

    /// The disk reserve and the bytes free for the database now, when a reserve is set (and
    /// the free space could be read). Quick check first: the filesystem's free space less the
    /// write-ahead log's size (which bounds what a checkpoint may add to the database file,
    /// [`DiskReserve::wal_bytes`]); at or above the reserve, that is the answer. Under it, the
    /// exact account from the database's pages (one connection, three pragmas): the free
    /// space less the pages a checkpoint will add past the file's end, plus the free pages
    /// (what deletes gave back, reused before the file grows). For `/ready`, the metrics and
    /// the append path's refusal of event appends.
    pub fn disk_free(&self) -> Option<(u64, u64)> {
        let d = self.disk.as_ref()?;
        let fs_free = d.free().ok()?;
        let quick = fs_free.saturating_sub(d.wal_bytes());
        if quick >= d.reserve {
            return Some((quick, d.reserve));
        }
        let exact = self
            .conn()
            .ok()
            .and_then(|mut c| event_usage::sqlite_pages(&mut c))
            .map_or(quick, |pages| {
                // Without the database's path its growth is not known (counted as none).
                let growth = d
                    .database
                    .as_ref()
                    .map_or(0, |_| pages.growth(d.database_bytes()));
                fs_free
                    .saturating_sub(growth)
                    .saturating_add(pages.reusable())
            });
        Some((exact, d.reserve))
    }

    /// The disk reserve's refusal of event appends, when less than it is free for the
    /// database ([`DieselStore::disk_free`]); `None` without a reserve or when the free space
    /// cannot be read (the append then goes on and the database says what it says).
    pub(crate) fn disk_refusal(&self) -> Option<switchboard_domain::event_quota::AppendRefusal> {
        let (free, reserve) = self.disk_free()?;
        (free < reserve).then_some(
            switchboard_domain::event_quota::AppendRefusal::DiskReserve { free, reserve },
        )
    }

    /// Sets the observer told after each append commits (once; later calls are ignored), so
    /// that live subscribers of this process wake up without a round trip through the
    /// database (API.md, Live delivery).
    pub fn observe_appends(&self, observer: std::sync::Arc<dyn AppendObserver>) {
        let _ = self.observer.set(observer);
    }

    /// The cache of organization settings; on PostgreSQL its listener
    /// ([`crate::listen::listen_for_caches`]) turns it on while connected.
    pub fn settings_cache(&self) -> std::sync::Arc<SettingsCache> {
        self.settings.clone()
    }

    /// The cache of API-key lookups; on PostgreSQL its listener
    /// ([`crate::listen::listen_for_caches`]) turns it on while connected.
    pub fn key_cache(&self) -> std::sync::Arc<KeyCache> {
        self.keys.clone()
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

    /// Checkpoints SQLite's write-ahead log; a no-op on PostgreSQL. Called each second when
    /// the store was opened with [`PoolConfig::manual_checkpoints`] (ARCHITECTURE.md, Storage).
    ///
    /// First PASSIVE: copies what it can without waiting for readers or the writer. That
    /// alone never shortens the log while readers keep coming: SQLite starts the log over
    /// only when a writer finds it wholly copied and no reader on it, which a server under
    /// steady reads and writes never offers (a 2-minute soak grew a 64 MB database's log to
    /// 1.9 GB, and its index, mapped in memory, with it). So when the log holds
    /// [`WAL_TRUNCATE_FRAMES`] or more, a TRUNCATE checkpoint follows: with this process's
    /// writers held back (the writer mutex), it waits up to 250 ms for the readers on the log to
    /// finish, copies the rest and empties the log file.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when no connection is free in time, or the checkpoint's
    /// failure. A TRUNCATE that could not finish (`busy`) is not an error: the next call
    /// tries again.
    pub fn checkpoint(&self) -> Result<Checkpoint, StorageError> {
        self.checkpoint_with(WAL_TRUNCATE_FRAMES)
    }

    /// The store's background jobs, for the supervisor: the conversation lists' upkeep
    /// ([`DieselStore::upkeep`]: moves older than a day deleted, PostgreSQL statistics refreshed
    /// after bulk changes) and sign-in's (what lapsed deleted) every minute, and on SQLite [`DieselStore::checkpoint`] every second
    /// (the server turns SQLite's automatic checkpoints off: ARCHITECTURE.md, Storage notes).
    pub fn jobs(self: &Arc<Self>) -> Vec<Job> {
        // Moves of conversations pruned, list statistics refreshed (issue 23).
        let store = self.clone();
        let mut jobs = vec![Job::new(
            "list-upkeep",
            Schedule::Every(LIST_UPKEEP_EVERY),
            move || store.upkeep().map(|_| ()),
        )];
        // Lapsed sign-ins in flight, sessions and device codes deleted (issue 34).
        let store = self.clone();
        jobs.push(Job::new(
            "sign-in-upkeep",
            Schedule::Every(LIST_UPKEEP_EVERY),
            move || {
                use switchboard_domain::ports::SignInStore;
                store
                    .purge_sign_in(time::OffsetDateTime::now_utc())
                    .map(|_| ())
            },
        ));
        if self.kind == BackendKind::Sqlite {
            let store = self.clone();
            jobs.push(Job::new(
                "sqlite-checkpoint",
                Schedule::Every(CHECKPOINT_EVERY),
                move || store.checkpoint().map(|_| ()),
            ));
        }
        jobs
    }

    /// [`DieselStore::checkpoint`] with another truncation threshold, in log frames.
    ///
    /// # Errors
    /// As [`DieselStore::checkpoint`].
    pub fn checkpoint_with(&self, truncate_from_frames: i64) -> Result<Checkpoint, StorageError> {
        if self.kind != BackendKind::Sqlite {
            return Ok(Checkpoint::default());
        }
        let mut conn = self.conn()?;
        let passive = wal_checkpoint(&mut conn, "PASSIVE")?;
        if passive.log_frames < truncate_from_frames {
            return Ok(passive);
        }
        // This process's writers queue behind the truncation instead of racing it: a TRUNCATE
        // first needs the write lock, and SQLite's busy handler only polls for it, so a writer
        // that commits back to back (the group commit under load) could keep it from ever
        // getting it. Held, the truncation waits only for the readers on the log, and for at
        // most TRUNCATE_WAIT_MS: writers are never held back longer than that.
        let truncated = {
            let _writers = self
                .sqlite_writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            with_busy_timeout(&mut conn, TRUNCATE_WAIT_MS, |c| {
                wal_checkpoint(c, "TRUNCATE")
            })?
        };
        if truncated.busy {
            tracing::debug!(
                log_frames = passive.log_frames,
                "the write-ahead log could not be truncated: readers or the writer stayed busy"
            );
        }
        Ok(Checkpoint {
            truncated: !truncated.busy,
            ..truncated
        })
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

/// Frames in SQLite's write-ahead log (4 KiB pages: 64 MiB) from which
/// [`DieselStore::checkpoint`] truncates it.
pub const WAL_TRUNCATE_FRAMES: i64 = 16_384;

/// What a checkpoint found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint could not finish (readers or the writer were busy).
    pub busy: bool,
    /// Frames in the log when it ran (`-1` on a database not in WAL mode).
    pub log_frames: i64,
    /// Frames copied to the database file.
    pub checkpointed_frames: i64,
    /// The log was emptied (a TRUNCATE checkpoint finished).
    pub truncated: bool,
}

#[derive(diesel::QueryableByName)]
struct CheckpointRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    busy: i32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    log: i32,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    checkpointed: i32,
}

/// How long a TRUNCATE checkpoint waits for the readers on the log, in milliseconds, with this
/// process's writers held back; past it the checkpoint reports `busy` and the next one retries.
const TRUNCATE_WAIT_MS: u32 = 250;

/// Runs `f` with the SQLite connection's busy timeout set to `ms`, then sets it back to the
/// pool's (5 s, [`crate::connection::SQLITE_PRAGMAS`]) whether `f` failed or not.
fn with_busy_timeout<T>(
    conn: &mut crate::connection::DbConnection,
    ms: u32,
    f: impl FnOnce(&mut crate::connection::DbConnection) -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    use diesel::connection::SimpleConnection;
    conn.batch_execute(&format!("PRAGMA busy_timeout = {ms}"))
        .map_err(db_err)?;
    let result = f(conn);
    let restored = conn
        .batch_execute(&format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"))
        .map_err(db_err);
    let value = result?;
    restored?;
    Ok(value)
}

/// `PRAGMA wal_checkpoint(mode)` on a SQLite connection.
fn wal_checkpoint(
    conn: &mut crate::connection::DbConnection,
    mode: &str,
) -> Result<Checkpoint, StorageError> {
    use diesel::RunQueryDsl;
    let row: CheckpointRow = diesel::sql_query(format!("PRAGMA wal_checkpoint({mode})"))
        .get_result(conn)
        .map_err(db_err)?;
    Ok(Checkpoint {
        busy: row.busy != 0,
        log_frames: row.log.into(),
        checkpointed_frames: row.checkpointed.into(),
        truncated: false,
    })
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
        match crate::migrations::has_pending_migrations(&mut conn) {
            Ok(false) => Ok(()),
            Ok(true) => Err(StorageError::Unavailable("migrations are pending".into())),
            // Not ready whatever the failure (a lost connection most of all): 503, and the
            // connection leaves the pool.
            Err(e) => {
                crate::connection::mark_broken();
                Err(StorageError::Unavailable(e.to_string()))
            }
        }
    }
}

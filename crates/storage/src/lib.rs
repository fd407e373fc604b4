//! # switchboard-storage
//!
//! Storage adapters for the domain ports ([`switchboard_domain::ports`]) with diesel, on
//! SQLite and PostgreSQL from one binary: [`DbConnection`] is a `diesel::MultiConnection` whose
//! variant is chosen from the URL ([`DatabaseUrl`]); [`DieselStore`] holds an r2d2 pool with
//! explicit size and timeouts; migrations live in `migrations/sqlite` and `migrations/postgres`,
//! are embedded at build time (a `build.rs` makes new ones trigger a rebuild) and are applied
//! when the store opens. The store is one module per resource (`store/`); it starts no thread:
//! the SQLite WAL checkpoint is [`DieselStore::checkpoint`], called by its owner.

pub mod connection;
pub mod listen;
pub mod migrations;
pub mod schema;
mod store;

pub use connection::{
    BackendKind, DatabaseUrl, DbConnection, DbError, DbPool, PoolConfig, SQLITE_BUSY_TIMEOUT_MS,
};
pub use migrations::{has_pending_migrations, revert_all_migrations, run_migrations};
pub use store::{
    Checkpoint, DieselStore, DiskReserve, IDENTITY_CHANNEL, KEY_CACHE_TTL, KeyCache, MOVES_KEPT,
    NOTIFY_CHANNEL, PoolUsage, ReadCache, SETTINGS_CHANNEL, SettingsCache, WAL_TRUNCATE_FRAMES,
};

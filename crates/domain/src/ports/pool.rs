//! The database pool's usage: what the storage reports of its connection pool, and the
//! metrics show (`switchboard_db_pool_*`).

/// The pool's connections now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolUsage {
    /// Open connections.
    pub connections: u32,
    /// Of which idle.
    pub idle: u32,
    /// The configured maximum.
    pub max_size: u32,
}

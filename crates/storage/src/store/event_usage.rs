//! What conversations and organizations hold in events, for the event quotas
//! ([`switchboard_domain::event_quota`]): read under the append lock before a group is
//! judged, and kept in the transactions that insert and delete events
//! (`conversations.event_count` and `event_bytes`, the `org_event_usage` table); and the disk
//! reserve of the database's filesystem ([`DiskReserve`]).

use std::collections::HashMap;
use std::path::PathBuf;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use switchboard_domain::StorageError;

use super::rows::{ID_CHUNK, db_err};
use crate::connection::DbConnection;
use crate::schema::{conversations, org_event_usage};

/// A stored conversation as the quota judges it: organization, owner, events and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ConversationUsage {
    pub org_id: String,
    pub owner_id: String,
    pub events: i64,
    pub bytes: i64,
}

/// The stored conversations among `ids` (one query per chunk of ids).
pub(super) fn conversation_usage(
    conn: &mut DbConnection,
    ids: &[&str],
) -> Result<HashMap<String, ConversationUsage>, StorageError> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(ID_CHUNK) {
        let rows: Vec<(String, String, String, i64, i64)> =
            native!(&mut *conn, |c| conversations::table
                .filter(conversations::id.eq_any(chunk))
                .select((
                    conversations::id,
                    conversations::org_id,
                    conversations::owner_id,
                    conversations::event_count,
                    conversations::event_bytes,
                ))
                .load(c))
            .map_err(db_err)?;
        for (id, org_id, owner_id, events, bytes) in rows {
            out.insert(
                id,
                ConversationUsage {
                    org_id,
                    owner_id,
                    events,
                    bytes,
                },
            );
        }
    }
    Ok(out)
}

/// The bytes of events each organization among `orgs` holds (absent: none).
pub(super) fn org_bytes(
    conn: &mut DbConnection,
    orgs: &[&str],
) -> Result<HashMap<String, i64>, StorageError> {
    let mut out = HashMap::new();
    for chunk in orgs.chunks(ID_CHUNK) {
        let rows: Vec<(String, i64)> = native!(&mut *conn, |c| org_event_usage::table
            .filter(org_event_usage::org_id.eq_any(chunk))
            .select((org_event_usage::org_id, org_event_usage::event_bytes))
            .load(c))
        .map_err(db_err)?;
        out.extend(rows);
    }
    Ok(out)
}

/// Adds `events` and `bytes` (negative when events are deleted) to the organization's usage.
pub(super) fn add_org_usage(
    conn: &mut DbConnection,
    org: &str,
    events: i64,
    bytes: i64,
) -> Result<(), StorageError> {
    const UPSERT: &str = "INSERT INTO org_event_usage (org_id, event_count, event_bytes) \
        VALUES (?1, ?2, ?3) ON CONFLICT (org_id) DO UPDATE SET \
        event_count = org_event_usage.event_count + excluded.event_count, \
        event_bytes = org_event_usage.event_bytes + excluded.event_bytes";
    let sql = match conn {
        DbConnection::Sqlite(_) => UPSERT.to_owned(),
        DbConnection::Postgres(_) => UPSERT.replace('?', "$"),
    };
    let q = diesel::sql_query(sql)
        .bind::<Text, _>(org)
        .bind::<BigInt, _>(events)
        .bind::<BigInt, _>(bytes);
    native!(conn, |c| q.execute(c)).map_err(db_err)?;
    Ok(())
}

/// The operator's reserve of free space on the database's filesystem (`--min-free-disk`):
/// below it, event appends are refused
/// ([`switchboard_domain::event_quota::AppendRefusal::DiskReserve`]) so that the
/// database keeps room for everything else, and deletes can free space. SQLite only: the
/// filesystem of its database file (PostgreSQL's disk is its server's).
#[derive(Debug, Clone)]
pub struct DiskReserve {
    /// A path on the database's filesystem (its directory).
    pub path: PathBuf,
    /// The reserve, bytes.
    pub reserve: u64,
    /// The SQLite database file, when known: its write-ahead log's size is held back from the
    /// free space ([`Self::wal_bytes`]).
    pub database: Option<PathBuf>,
}

impl DiskReserve {
    /// Free bytes an unprivileged writer may use on the filesystem of [`Self::path`]
    /// (`statvfs`: available blocks × fragment size).
    ///
    /// # Errors
    /// `statvfs`'s failure (the path gone).
    pub fn free(&self) -> std::io::Result<u64> {
        let s = rustix::fs::statvfs(&self.path)?;
        Ok(s.f_bavail.saturating_mul(s.f_frsize))
    }

    /// The size of the database's write-ahead log (`<database>-wal`), bytes; 0 when there is
    /// none or the database is not known. A checkpoint copies the log's pages into the
    /// database file, which grows by as much while the log keeps its size until it is
    /// truncated: that much of the free space is already spoken for. Measured: on an 8 MiB
    /// disk with a 3 MiB reserve, 200 kB events filled the disk (log 4.5 MB, database 3.8 MB)
    /// before the free space alone fell under the reserve (`disk_reserve_on_sqlite`).
    pub fn wal_bytes(&self) -> u64 {
        let Some(db) = &self.database else {
            return 0;
        };
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map_or(0, |m| m.len())
    }
}

/// The bytes of the SQLite database's free pages (`freelist_count × page_size`): what deleted
/// rows gave back, which the database reuses before it grows its file; 0 on PostgreSQL or when
/// it cannot be read.
pub(super) fn reusable_bytes(conn: &mut DbConnection) -> u64 {
    #[derive(QueryableByName)]
    struct Pages {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let DbConnection::Sqlite(c) = conn else {
        return 0;
    };
    let read = |c: &mut diesel::SqliteConnection, pragma: &str| {
        diesel::sql_query(format!("SELECT {pragma} AS n FROM pragma_{pragma}"))
            .get_result::<Pages>(c)
            .map(|p| u64::try_from(p.n).unwrap_or(0))
            .unwrap_or(0)
    };
    read(c, "freelist_count").saturating_mul(read(c, "page_size"))
}

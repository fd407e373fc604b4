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
use crate::connection::{DatabaseUrl, DbConnection};
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
    /// The SQLite database file, when known: what a checkpoint will add to it is held back
    /// from the free space ([`Self::wal_bytes`], then [`crate::DieselStore::disk_free`]'s
    /// exact account).
    pub database: Option<PathBuf>,
}

impl DiskReserve {
    /// The reserve of `reserve_mib` MiB (`--min-free-disk`) on the filesystem of the SQLite
    /// database of `url` (its file's directory, `.` for a bare file name); `None` for
    /// PostgreSQL, an unreadable URL, or a reserve of 0.
    pub fn for_url(url: &str, reserve_mib: u64) -> Option<DiskReserve> {
        let Ok(DatabaseUrl::Sqlite(path)) = DatabaseUrl::parse(url) else {
            return None;
        };
        if reserve_mib == 0 {
            return None;
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf);
        Some(DiskReserve {
            path: dir,
            reserve: reserve_mib.saturating_mul(1 << 20),
            database: Some(path),
        })
    }

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
    /// none or the database is not known. Every page a checkpoint may add to the database
    /// file is a frame of the log, so this bounds that growth from above: one `stat`, for the
    /// quick check of each append ([`crate::DieselStore::disk_free`]). Measured: on an 8 MiB
    /// disk with a 3 MiB reserve, 200 kB events filled the disk (log 4.5 MB, database
    /// 3.8 MB) before the free space alone fell under the reserve (`disk_reserve_on_sqlite`).
    pub fn wal_bytes(&self) -> u64 {
        self.sibling_len("-wal")
    }

    /// The size of the database file itself, bytes (0 when unknown).
    pub fn database_bytes(&self) -> u64 {
        self.sibling_len("")
    }

    fn sibling_len(&self, suffix: &str) -> u64 {
        let Some(db) = &self.database else {
            return 0;
        };
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}

/// The SQLite database's pages as its connection sees them (the log included): how many, how
/// many are free (what deletes gave back, reused before the file grows) and their size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SqlitePages {
    /// `page_count`.
    pub count: u64,
    /// `freelist_count`.
    pub free: u64,
    /// `page_size`, bytes.
    pub size: u64,
}

impl SqlitePages {
    /// Bytes a checkpoint adds to a database file of `file_bytes`: the pages past its end.
    pub fn growth(&self, file_bytes: u64) -> u64 {
        self.count
            .saturating_mul(self.size)
            .saturating_sub(file_bytes)
    }

    /// Bytes of the free pages.
    pub fn reusable(&self) -> u64 {
        self.free.saturating_mul(self.size)
    }
}

/// The database's [`SqlitePages`]; `None` on PostgreSQL or when they cannot be read.
pub(super) fn sqlite_pages(conn: &mut DbConnection) -> Option<SqlitePages> {
    #[derive(QueryableByName)]
    struct Pages {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let DbConnection::Sqlite(c) = conn else {
        return None;
    };
    let mut read = |pragma: &str| {
        diesel::sql_query(format!("SELECT {pragma} AS n FROM pragma_{pragma}"))
            .get_result::<Pages>(c)
            .ok()
            .and_then(|p| u64::try_from(p.n).ok())
    };
    Some(SqlitePages {
        count: read("page_count")?,
        free: read("freelist_count")?,
        size: read("page_size")?,
    })
}

#[cfg(test)]
mod tests {
    use super::SqlitePages;

    #[test]
    fn a_checkpoint_adds_only_the_pages_past_the_file_end() {
        let pages = SqlitePages {
            count: 1_000,
            free: 300,
            size: 4_096,
        };
        // The log holds 10 pages past a file of 990: those 40,960 bytes are still to come.
        assert_eq!(pages.growth(990 * 4_096), 40_960);
        // Overwrites of pages within the file (a delete's) add nothing.
        assert_eq!(pages.growth(1_000 * 4_096), 0);
        assert_eq!(pages.growth(2_000 * 4_096), 0);
        assert_eq!(pages.reusable(), 300 * 4_096);
    }
}

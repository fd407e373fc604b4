//! Periodic upkeep of the conversation lists (issue 23): `conversation_moves` kept for a day, the
//! tombstones of deleted conversations for 30 days, and on PostgreSQL statistics refreshed after bulk changes, as autovacuum would (it may be
//! off: the planner then knows nothing of rows inserted since the last `ANALYZE` and chose a
//! bitmap scan and a sort of the whole organization for a 20-row page).

use diesel::prelude::*;
use diesel::sql_types::Text;
use switchboard_domain::StorageError;
use time::{Duration, OffsetDateTime};

use super::DieselStore;
use super::rows::{db_err, to_db};
use crate::connection::{BackendKind, DbConnection};
use crate::schema::conversation_moves;

/// How long the moves of conversations are kept: a walk in an `UPDATED_AT` order older than
/// this may skip or repeat a conversation that changed (API.md, "Paging while conversations
/// change").
pub const MOVES_KEPT: Duration = Duration::days(1);

/// The tables whose statistics [`DieselStore::upkeep`] refreshes on PostgreSQL.
const ANALYZED: [&str; 3] = ["conversations", "start_tasks", "conversation_moves"];

#[derive(QueryableByName)]
struct Stale {
    #[diesel(sql_type = Text)]
    name: String,
}

impl DieselStore {
    /// Deletes the moves older than [`MOVES_KEPT`] and the tombstones of deleted conversations
    /// older than 30 days; on PostgreSQL, `ANALYZE`s
    /// each of the list tables changed by more than 50 rows plus 10% since its last analysis
    /// (autovacuum's default rule). Returns how many moves were deleted.
    ///
    /// # Errors
    /// A failed statement.
    pub fn upkeep(&self) -> Result<u64, StorageError> {
        let cutoff = to_db(OffsetDateTime::now_utc() - MOVES_KEPT);
        let pruned = self.write(|conn| {
            super::conversations::tombstones::prune(conn, OffsetDateTime::now_utc())?;
            native!(conn, |c| diesel::delete(
                conversation_moves::table.filter(conversation_moves::new_updated_at.lt(cutoff))
            )
            .execute(c))
            .map_err(db_err)
        })?;
        if self.kind == BackendKind::Postgres {
            let mut conn = self.conn()?;
            let names = ANALYZED.map(|t| format!("'{t}'")).join(", ");
            let stale: Vec<Stale> = diesel::sql_query(format!(
                "SELECT relname::text AS name FROM pg_stat_user_tables \
                 WHERE relname IN ({names}) AND n_mod_since_analyze > 50 + 0.1 * n_live_tup"
            ))
            .load(&mut *conn)
            .map_err(db_err)?;
            for t in stale {
                use diesel::connection::SimpleConnection;
                // A name from the fixed list above.
                let conn: &mut DbConnection = &mut conn;
                conn.batch_execute(&format!("ANALYZE {}", t.name))
                    .map_err(db_err)?;
            }
        }
        Ok(pruned as u64)
    }
}

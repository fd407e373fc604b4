//! Tombstones of deleted conversations (`conversation_tombstones`): written in the delete's
//! transaction, read where a write from an agent server could create the conversation again
//! (the `ConversationInfo` upsert; the event append's upsert reads the table in its own
//! statement), and pruned after [`TOMBSTONES_KEPT`] by the store's upkeep.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use time::{Duration, OffsetDateTime};

use crate::connection::DbConnection;
use crate::schema::conversation_tombstones;
use crate::store::rows::{db_err, to_db};

/// How long a deleted conversation's tombstone is kept: longer than any agent server retries
/// a webhook, and than most pauses of a sandbox another conversation keeps (a resumed agent
/// server's listing would bring a conversation it still holds back after that).
pub const TOMBSTONES_KEPT: Duration = Duration::days(30);

/// Records that conversation `id` was deleted at `now` (again, if it was before: a start may
/// reuse a deleted id).
///
/// # Errors
/// A failed statement.
pub(super) fn bury(
    conn: &mut DbConnection,
    id: &str,
    now: OffsetDateTime,
) -> Result<(), StorageError> {
    let at = to_db(now);
    native!(conn, |c| diesel::insert_into(
        conversation_tombstones::table
    )
    .values((
        conversation_tombstones::id.eq(id),
        conversation_tombstones::deleted_at.eq(at),
    ))
    .on_conflict(conversation_tombstones::id)
    .do_update()
    .set(conversation_tombstones::deleted_at.eq(at))
    .execute(c))
    .map_err(db_err)?;
    Ok(())
}

/// Whether conversation `id` was deleted (within [`TOMBSTONES_KEPT`]).
///
/// # Errors
/// A failed statement.
pub(super) fn buried(conn: &mut DbConnection, id: &str) -> Result<bool, StorageError> {
    let n: i64 = native!(conn, |c| conversation_tombstones::table
        .filter(conversation_tombstones::id.eq(id))
        .count()
        .get_result(c))
    .map_err(db_err)?;
    Ok(n > 0)
}

/// Deletes the tombstones older than [`TOMBSTONES_KEPT`]; returns how many.
///
/// # Errors
/// A failed statement.
pub(crate) fn prune(conn: &mut DbConnection, now: OffsetDateTime) -> Result<usize, StorageError> {
    let cutoff = to_db(now - TOMBSTONES_KEPT);
    native!(conn, |c| diesel::delete(
        conversation_tombstones::table.filter(conversation_tombstones::deleted_at.lt(cutoff))
    )
    .execute(c))
    .map_err(db_err)
}

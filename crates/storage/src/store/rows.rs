//! Conversions between stored values and domain values: errors, instants, ids.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use switchboard_domain::StorageError;

use crate::connection::{BackendKind, DbConnection};
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// Maps diesel errors to the domain's storage errors.
pub(crate) fn db_err(e: DieselError) -> StorageError {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            StorageError::UniqueViolation(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info) => {
            StorageError::ForeignKeyViolation(info.message().to_owned())
        }
        DieselError::DatabaseError(kind, info) if unavailable(&kind, info.message()) => {
            // A lost connection is useless; one that hit a full disk may be left inside a
            // transaction SQLite could not finish: both are replaced.
            crate::connection::mark_broken();
            StorageError::Unavailable(info.message().to_owned())
        }
        other => StorageError::Other(Box::new(other)),
    }
}

/// Whether an error says the database cannot be reached or cannot take writes now, rather
/// than that the query was wrong: the connection was closed or lost (PostgreSQL stopped or
/// restarted: SQLSTATE classes 08 and 57P0x, whose messages libpq gives), the server is
/// starting or shutting down, or SQLite's disk is full (`SQLITE_FULL`). These answer 503
/// (API.md, Reliability and security), and the connection leaves the pool.
fn unavailable(kind: &DatabaseErrorKind, message: &str) -> bool {
    const LOST: [&str; 9] = [
        "terminating connection",
        "server closed the connection",
        "no connection to the server",
        "connection to server",
        "could not receive data",
        "could not send data",
        "the database system is starting up",
        "the database system is shutting down",
        "the database system is in recovery mode",
    ];
    matches!(kind, DatabaseErrorKind::ClosedConnection)
        || LOST.iter().any(|m| message.contains(m))
        || is_disk_full(message)
}

/// SQLite's `SQLITE_FULL` message.
fn is_disk_full(message: &str) -> bool {
    message.contains("database or disk is full")
}

/// UTC instant → the naive UTC value stored.
pub(crate) fn to_db(t: OffsetDateTime) -> PrimitiveDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    PrimitiveDateTime::new(t.date(), t.time())
}

/// Stored naive UTC → instant.
pub(crate) fn from_db(t: PrimitiveDateTime) -> OffsetDateTime {
    t.assume_utc()
}

/// A stored id (`what` names it in the error); a stored value that is not a UUID is a storage
/// failure, never a client's error.
pub(crate) fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, StorageError> {
    s.parse()
        .map_err(|_| StorageError::Other(format!("stored {what} id is not a UUID: {s}").into()))
}

/// A stored nullable id.
pub(crate) fn parse_opt_id<T: std::str::FromStr>(
    s: Option<&str>,
    what: &str,
) -> Result<Option<T>, StorageError> {
    s.map(|s| parse_id(s, what)).transpose()
}

/// At most one row, turned into its domain value by `convert`: `Ok(None)` when the query
/// found none; a query or conversion failure is a storage failure.
pub(crate) fn optional_row<R, T>(
    found: diesel::QueryResult<R>,
    convert: impl FnOnce(R) -> Result<T, StorageError>,
) -> Result<Option<T>, StorageError> {
    use diesel::OptionalExtension;
    found.optional().map_err(db_err)?.map(convert).transpose()
}

/// Ids per `IN (…)` list.
pub(super) const ID_CHUNK: usize = 500;

/// Queues this transaction behind the other writers of one row, on PostgreSQL (`SELECT 1 FROM
/// {table} WHERE {condition} FOR UPDATE`); on SQLite its single writer already does. A
/// read-modify-write of the row then loses no update. `condition` holds only values
/// Switchboard formatted itself (UUIDs), never a caller's text.
pub(super) fn lock_row(
    conn: &mut DbConnection,
    kind: BackendKind,
    table: &str,
    condition: &str,
) -> Result<(), StorageError> {
    if kind == BackendKind::Postgres {
        use diesel::connection::SimpleConnection;
        conn.batch_execute(&format!(
            "SELECT 1 FROM {table} WHERE {condition} FOR UPDATE"
        ))
        .map_err(db_err)?;
    }
    Ok(())
}

diesel::define_sql_function! {
    /// SQL `lower` of a nullable text (ASCII on SQLite, Unicode on PostgreSQL).
    fn lower(a: diesel::sql_types::Nullable<diesel::sql_types::Text>) -> diesel::sql_types::Nullable<diesel::sql_types::Text>;
}

/// A case-insensitive substring filter (`title__contains`, a members list's `email`) as a
/// `LIKE` pattern on the lowercased column: ASCII-lowercased, with
/// `\`, `%` and `_` escaped so they match themselves.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for ch in text.to_ascii_lowercase().chars() {
        if matches!(ch, '\\' | '%' | '_') {
            p.push('\\');
        }
        p.push(ch);
    }
    p.push('%');
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("Ab"), "%ab%");
        assert_eq!(contains_pattern("5%_\\"), "%5\\%\\_\\\\%");
    }
}

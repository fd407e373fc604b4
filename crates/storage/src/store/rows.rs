//! Conversions between stored values and domain values: errors, instants, ids.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use switchboard_domain::StorageError;
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
        other => StorageError::Other(Box::new(other)),
    }
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

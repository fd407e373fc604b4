//! What `switchboard backup` needs of the database beyond the ports (docs/operations.md,
//! "Backup and restore"): an online copy of a SQLite database.

use std::path::Path;

use diesel::prelude::*;
use switchboard_domain::StorageError;

use super::DieselStore;
use super::rows::db_err;
use crate::connection::DbConnection;

impl DieselStore {
    /// Writes a consistent copy of this SQLite database to `dest` (which must not exist) with
    /// `VACUUM INTO`: one read transaction, so writers go on meanwhile (WAL) and the copy is
    /// the database as of its start, compacted, with no write-ahead log beside it.
    ///
    /// # Errors
    /// Not a SQLite database, `dest` exists or cannot be written, or a storage failure.
    pub fn backup_sqlite_into(&self, dest: &Path) -> Result<(), StorageError> {
        let mut pooled = self.conn()?;
        let DbConnection::Sqlite(conn) = &mut *pooled else {
            return Err(StorageError::Other(
                "an online copy is made of SQLite databases only (PostgreSQL: pg_dump)".into(),
            ));
        };
        diesel::sql_query("VACUUM INTO ?")
            .bind::<diesel::sql_types::Text, _>(dest.to_string_lossy().into_owned())
            .execute(conn)
            .map(|_| ())
            .map_err(db_err)
    }
}

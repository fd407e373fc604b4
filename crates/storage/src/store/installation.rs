//! The installation's record (table `installation`, one row; domain:
//! [`switchboard_domain::identity::installation`]): read, claimed once, its key fingerprint set
//! by the key rotation's transaction, and a restored copy detached from the original's
//! sandboxes.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::identity::installation::Installation;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, from_db, to_db};
use crate::connection::DbConnection;
use crate::schema::{installation, sandboxes};

/// The stored record.
#[derive(Queryable, Selectable)]
#[diesel(table_name = installation)]
struct InstallationRow {
    id: String,
    key_fingerprint: String,
    created_at: PrimitiveDateTime,
    restored_from: Option<String>,
    restored_at: Option<PrimitiveDateTime>,
}

impl From<InstallationRow> for Installation {
    fn from(r: InstallationRow) -> Self {
        Installation {
            id: r.id,
            key_fingerprint: r.key_fingerprint,
            created_at: from_db(r.created_at),
            restored_from: r.restored_from,
            restored_at: r.restored_at.map(from_db),
        }
    }
}

/// The record on `conn`, if any.
pub(super) fn read(conn: &mut DbConnection) -> Result<Option<Installation>, StorageError> {
    installation::table
        .select(InstallationRow::as_select())
        .first(conn)
        .optional()
        .map(|r| r.map(Installation::from))
        .map_err(db_err)
}

/// Sets the record's key fingerprint on `conn` (inside the rotation's transaction); nothing
/// when there is no record.
pub(super) fn set_fingerprint(
    conn: &mut DbConnection,
    fingerprint: &str,
) -> Result<(), StorageError> {
    diesel::update(installation::table)
        .set(installation::key_fingerprint.eq(fingerprint))
        .execute(conn)
        .map(|_| ())
        .map_err(db_err)
}

impl DieselStore {
    /// Writes `candidate` unless a record exists (in one write transaction: two replicas
    /// starting at once agree on the first), and returns the record that holds.
    pub(super) fn claim_installation_record(
        &self,
        candidate: &Installation,
    ) -> Result<Installation, StorageError> {
        self.write(|conn| {
            if let Some(found) = read(conn)? {
                return Ok(found);
            }
            diesel::insert_into(installation::table)
                .values((
                    installation::singleton.eq(1i64),
                    installation::id.eq(&candidate.id),
                    installation::key_fingerprint.eq(&candidate.key_fingerprint),
                    installation::created_at.eq(to_db(candidate.created_at)),
                    installation::restored_from.eq(&candidate.restored_from),
                    installation::restored_at.eq(candidate.restored_at.map(to_db)),
                ))
                .execute(conn)
                .map_err(db_err)?;
            Ok(candidate.clone())
        })
    }

    /// See [`switchboard_domain::ports::SealedStore::detach_restored`].
    pub(super) fn detach_restored_copy(
        &self,
        new_id: &str,
        at: OffsetDateTime,
    ) -> Result<(Installation, u64), StorageError> {
        self.write(|conn| {
            let Some(found) = read(conn)? else {
                return Err(StorageError::Other(
                    "the database has no installation record: it was never opened by a server or command of this version"
                        .into(),
                ));
            };
            diesel::update(installation::table)
                .set((
                    installation::id.eq(new_id),
                    installation::restored_from.eq(&found.id),
                    installation::restored_at.eq(to_db(at)),
                ))
                .execute(conn)
                .map_err(db_err)?;
            // The warm pool's unclaimed sandboxes are the original's to use or stop.
            diesel::delete(
                sandboxes::table
                    .filter(sandboxes::org_id.is_null())
                    .filter(sandboxes::runtime.ne("external")),
            )
            .execute(conn)
            .map_err(db_err)?;
            let detached = diesel::update(
                sandboxes::table
                    .filter(sandboxes::runtime.ne("external"))
                    .filter(sandboxes::deleted_at.is_null())
                    .filter(
                        sandboxes::handle
                            .is_not_null()
                            .or(sandboxes::status.ne("MISSING")),
                    ),
            )
            .set((
                sandboxes::status.eq("MISSING"),
                sandboxes::status_message.eq(format!(
                    "restored from a backup of installation {}: it ran under that installation, not this one: delete it and start a new sandbox (its conversations and events are kept)",
                    found.id
                )),
                sandboxes::handle.eq(None::<String>),
                sandboxes::agent_server_url.eq(None::<String>),
                sandboxes::url_port.eq(None::<i64>),
                sandboxes::updated_at.eq(to_db(at)),
            ))
            .execute(conn)
            .map_err(db_err)?;
            let record = Installation {
                id: new_id.to_owned(),
                restored_from: Some(found.id.clone()),
                restored_at: Some(at),
                ..found
            };
            Ok((record, u64::try_from(detached).unwrap_or(u64::MAX)))
        })
    }
}

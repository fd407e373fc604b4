//! Sandboxes and their hashed session keys ([`SandboxStore`]).

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::identity::session_keys::SessionKeyHash;
use switchboard_domain::ports::SandboxStore;
use switchboard_domain::sandboxes::Sandbox;
use time::PrimitiveDateTime;

use super::DieselStore;
use super::rows::{db_err, from_db, optional_row, parse_id, to_db};
use crate::connection::DbConnection;
use crate::schema::sandboxes;

#[derive(Queryable, Selectable)]
#[diesel(table_name = sandboxes)]
struct SandboxRow {
    id: String,
    org_id: String,
    owner_id: String,
    created_at: PrimitiveDateTime,
}

impl SandboxRow {
    fn sandbox(self) -> Result<Sandbox, StorageError> {
        Ok(Sandbox {
            id: parse_id(&self.id, "sandbox")?,
            org_id: parse_id(&self.org_id, "org")?,
            owner_id: parse_id(&self.owner_id, "user")?,
            created_at: from_db(self.created_at),
        })
    }
}

impl SandboxStore for DieselStore {
    fn create_sandbox(
        &self,
        sandbox: &Sandbox,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(sandboxes::table)
            .values((
                sandboxes::id.eq(sandbox.id.to_string()),
                sandboxes::org_id.eq(sandbox.org_id.to_string()),
                sandboxes::owner_id.eq(sandbox.owner_id.to_string()),
                sandboxes::session_key_hash.eq(&key_hash.0),
                sandboxes::created_at.eq(to_db(sandbox.created_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn sandbox_by_key_hash(&self, hash: &SessionKeyHash) -> Result<Option<Sandbox>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::session_key_hash.eq(&hash.0))
                .select(SandboxRow::as_select())
                .get_result(c)),
            SandboxRow::sandbox,
        )
    }
}

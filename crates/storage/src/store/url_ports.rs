//! The sandboxes' listener ports ([`UrlPortStore`]; issue 31): the `url_port` column of
//! `sandboxes`, with a unique index. Assignment reads first and writes only when a port is to
//! be given or released, so replicas polling it cost one read a pass.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::ports::UrlPortStore;
use switchboard_domain::sandboxes::records::EXTERNAL_RUNTIME;
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::sandboxes::url_ports::{UrlPort, UrlPortRange};

use super::DieselStore;
use super::rows::{db_err, parse_id};
use crate::connection::DbConnection;
use crate::schema::sandboxes;

/// The PostgreSQL advisory lock (one key) that serializes port assignment across replicas.
const URL_PORT_LOCK_KEY: i64 = 0x5342_5550; // "SBUP"

/// The statuses of sandboxes that get a port (a listener is kept for them).
const LISTENING: [SandboxStatus; 3] = [
    SandboxStatus::Starting,
    SandboxStatus::Running,
    SandboxStatus::Paused,
];

/// One row as this file reads it: id, status, port, deleted or not.
type PortRow = (String, String, Option<i64>, bool);

/// Every managed sandbox that holds a port or should get one: live ones in a listening
/// status, and deleted ones still holding a port.
fn rows(conn: &mut DbConnection) -> Result<Vec<PortRow>, StorageError> {
    let statuses = LISTENING.map(SandboxStatus::as_str);
    native!(conn, |c| sandboxes::table
        .filter(sandboxes::runtime.ne(EXTERNAL_RUNTIME))
        .filter(
            sandboxes::url_port.is_not_null().or(sandboxes::deleted_at
                .is_null()
                .and(sandboxes::status.eq_any(statuses)))
        )
        .select((
            sandboxes::id,
            sandboxes::status,
            sandboxes::url_port,
            sandboxes::deleted_at.is_not_null(),
        ))
        .order(sandboxes::created_at.asc())
        .load::<PortRow>(c))
    .map_err(db_err)
}

/// Whether the rows call for a write: a deleted sandbox holding a port, or a listening one
/// without.
fn needs_write(rows: &[PortRow]) -> bool {
    rows.iter()
        .any(|(_, _, port, deleted)| port.is_some() == *deleted)
}

/// Releases the deleted sandboxes' ports and assigns the missing ones, lowest free first.
fn assign(conn: &mut DbConnection, range: UrlPortRange) -> Result<(), StorageError> {
    if let DbConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
            .bind::<diesel::sql_types::BigInt, _>(URL_PORT_LOCK_KEY)
            .execute(c)
            .map_err(db_err)?;
    }
    native!(&mut *conn, |c| diesel::update(
        sandboxes::table
            .filter(sandboxes::deleted_at.is_not_null())
            .filter(sandboxes::url_port.is_not_null())
    )
    .set(sandboxes::url_port.eq(None::<i64>))
    .execute(c))
    .map_err(db_err)?;
    let rows = rows(conn)?;
    let mut taken: Vec<u16> = rows
        .iter()
        .filter_map(|r| r.2.and_then(|p| u16::try_from(p).ok()))
        .collect();
    for (id, _, _, _) in rows.iter().filter(|r| r.2.is_none() && !r.3) {
        let Some(port) = range.first_free(&taken) else {
            break;
        };
        taken.push(port);
        native!(&mut *conn, |c| diesel::update(
            sandboxes::table
                .filter(sandboxes::id.eq(id))
                .filter(sandboxes::url_port.is_null())
        )
        .set(sandboxes::url_port.eq(Some(i64::from(port))))
        .execute(c))
        .map_err(db_err)?;
    }
    Ok(())
}

impl UrlPortStore for DieselStore {
    fn sync_url_ports(&self, range: UrlPortRange) -> Result<Vec<UrlPort>, StorageError> {
        let mut found = {
            let mut conn = self.conn()?;
            rows(&mut conn)?
        };
        if needs_write(&found) {
            found = self.write(|c| {
                assign(c, range)?;
                rows(c)
            })?;
        }
        let mut ports = Vec::new();
        for (id, status, port, deleted) in found {
            let (Some(port), false) = (port, deleted) else {
                continue;
            };
            let status = LISTENING
                .into_iter()
                .find(|s| s.as_str() == status)
                .unwrap_or(SandboxStatus::Error);
            ports.push(UrlPort {
                sandbox: parse_id(&id, "sandbox")?,
                port: u16::try_from(port)
                    .map_err(|_| StorageError::Other(format!("stored port {port}").into()))?,
                status,
            });
        }
        Ok(ports)
    }
}

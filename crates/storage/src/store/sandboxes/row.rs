//! A row of the `sandboxes` table as read, and the record it is.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::sandboxes::Sandbox;
use switchboard_domain::sandboxes::records::SandboxRecord;
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use time::PrimitiveDateTime;

use crate::schema::sandboxes;
use crate::store::rows::{from_db, parse_id, parse_opt_id};

/// Every status, for reading the stored name back.
const STATUSES: [SandboxStatus; 5] = [
    SandboxStatus::Starting,
    SandboxStatus::Running,
    SandboxStatus::Paused,
    SandboxStatus::Error,
    SandboxStatus::Missing,
];

#[derive(Queryable, Selectable)]
#[diesel(table_name = sandboxes)]
pub(super) struct SandboxRow {
    id: String,
    org_id: Option<String>,
    owner_id: Option<String>,
    spec_id: String,
    runtime: String,
    status: String,
    status_message: Option<String>,
    session_key_sealed: Option<String>,
    handle: Option<String>,
    agent_server_url: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    started_at: Option<PrimitiveDateTime>,
    last_used_at: Option<PrimitiveDateTime>,
    deleted_at: Option<PrimitiveDateTime>,
}

impl SandboxRow {
    pub(super) fn record(self) -> Result<SandboxRecord, StorageError> {
        let status = STATUSES
            .into_iter()
            .find(|s| s.as_str() == self.status)
            .ok_or_else(|| {
                StorageError::Other(format!("stored sandbox status {:?}", self.status).into())
            })?;
        Ok(SandboxRecord {
            id: parse_id(&self.id, "sandbox")?,
            org_id: parse_opt_id(self.org_id.as_deref(), "org")?,
            owner_id: parse_opt_id(self.owner_id.as_deref(), "user")?,
            spec_id: self.spec_id,
            runtime: self.runtime,
            status,
            status_message: self.status_message,
            session_key_sealed: self.session_key_sealed,
            handle: self.handle,
            agent_server_url: self.agent_server_url,
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
            started_at: self.started_at.map(from_db),
            last_used_at: self.last_used_at.map(from_db),
            deleted_at: self.deleted_at.map(from_db),
        })
    }

    pub(super) fn sandbox(self) -> Result<Option<Sandbox>, StorageError> {
        Ok(self.record()?.owned())
    }
}

pub(super) fn records(rows: Vec<SandboxRow>) -> Result<Vec<SandboxRecord>, StorageError> {
    rows.into_iter().map(SandboxRow::record).collect()
}

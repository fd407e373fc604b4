//! Sandboxes: agent servers and who they act for (API.md, Event ingestion). A sandbox
//! authenticates with its session key ([`crate::identity::session_keys`]); its conversations
//! belong to its organization and owner.

pub mod agent_events;
pub mod agent_requests;
pub mod agent_server_error;
pub mod agent_workspace;
pub mod changes;
pub mod egress;
pub mod event_streams;
pub mod failures;
pub mod grouping;
pub mod handles;
pub mod limits;
pub mod listeners;
pub mod quotas;
pub mod records;
pub mod runtime;
pub mod services;
pub mod settings;
pub mod specs;
pub mod url_ports;
pub mod workspace_dirs;

use serde::Serialize;
use time::OffsetDateTime;

use crate::ids::{OrgId, SandboxId, UserId};

/// A registered sandbox (an agent server) and who it acts for.
#[derive(Debug, Clone, PartialEq)]
pub struct Sandbox {
    /// Id.
    pub id: SandboxId,
    /// Owning organization: its conversations belong here.
    pub org_id: OrgId,
    /// Owning user: its conversations are theirs.
    pub owner_id: UserId,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// A newly registered sandbox and its session key (shown once).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegisteredSandbox {
    /// Sandbox id.
    pub sandbox_id: SandboxId,
    /// The `X-Session-API-Key` of its agent server: `sbs_` + 43 base62 characters.
    pub session_api_key: String,
}

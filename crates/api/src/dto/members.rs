//! Response bodies of the members routes (issue 34), in OpenHands' shapes where its routes
//! exist (`OrgMemberResponse`, `OrgMemberPage`), and of the audit log; the request bodies are
//! the domain's (`OrgMemberCreate`, `OrgMemberUpdate`).

use serde::Serialize;
use serde_json::Value;
use switchboard_domain::Role;
use switchboard_domain::identity::audit::{Actor, AuditRecord};
use switchboard_domain::services::OrgMember;
use switchboard_domain::time_input::format_rfc3339_micros;
use utoipa::ToSchema;

/// One member of an organization (OpenHands' `OrgMemberResponse`).
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgMemberResponse {
    /// The member.
    #[schema(value_type = String, format = Uuid)]
    pub user_id: uuid::Uuid,
    /// Their e-mail.
    pub email: String,
    /// Their role's id in OpenHands' `role` table: 1 owner, 2 admin, 3 member.
    pub role_id: i64,
    /// Their role: `owner`, `admin` or `member`.
    pub role: String,
    /// The role's rank (OpenHands: owner 10, admin 20, member 1000; lower is more).
    pub role_rank: i64,
    /// `active`, or `disabled` for a user the operator disabled.
    pub status: String,
}

impl From<OrgMember> for OrgMemberResponse {
    fn from(m: OrgMember) -> Self {
        // OpenHands' seeded `role` rows (reference/openhands-org-settings.md §2.1).
        let (role_id, role_rank) = match m.role {
            Role::Owner => (1, 10),
            Role::Admin => (2, 20),
            Role::Member => (3, 1000),
        };
        OrgMemberResponse {
            user_id: m.user_id.0,
            email: m.email,
            role_id,
            role: m.role.as_str().to_owned(),
            role_rank,
            status: if m.disabled { "disabled" } else { "active" }.to_owned(),
        }
    }
}

/// A page of an organization's members (OpenHands' `OrgMemberPage`, with `next_page_id`
/// added: the cursor of the next page, `null` on the last).
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgMemberPage {
    /// The members, in the order they joined.
    pub items: Vec<OrgMemberResponse>,
    /// This page's number, from 1.
    pub current_page: u32,
    /// The page size asked for.
    pub per_page: u32,
    /// Pass as `page_id` for the next page; `null` when this is the last.
    pub next_page_id: Option<String>,
}

/// One audit log entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntryResponse {
    /// Position in the log (increasing).
    pub id: i64,
    /// The organization.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub org_id: Option<uuid::Uuid>,
    /// Who made the change; `null` for the operator's commands.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub actor_user_id: Option<uuid::Uuid>,
    /// Their e-mail then; `null` for the operator.
    pub actor_email: Option<String>,
    /// What was done: `member.added`, `member.role_changed`, `member.removed`,
    /// `user.disabled`, `user.enabled`, `user.removed`, `api_key.revoked`.
    pub action: String,
    /// Whom it was done to.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub target_user_id: Option<uuid::Uuid>,
    /// Their e-mail then.
    pub target_email: Option<String>,
    /// Details (`from`/`to` of a role change, the `role` of a removed member, …).
    #[schema(value_type = Object)]
    pub detail: Value,
    /// The client's address; `null` for the operator.
    pub remote_addr: Option<String>,
    /// When (RFC 3339, UTC).
    pub created_at: String,
}

impl From<AuditRecord> for AuditEntryResponse {
    fn from(r: AuditRecord) -> Self {
        let e = r.entry;
        let (actor_user_id, actor_email) = match e.actor {
            Actor::User { id, email } => (Some(id.0), Some(email)),
            Actor::Operator => (None, None),
        };
        AuditEntryResponse {
            id: r.id,
            org_id: e.org.map(|o| o.0),
            actor_user_id,
            actor_email,
            action: e.action.as_str().to_owned(),
            target_user_id: e.target.as_ref().map(|(u, _)| u.0),
            target_email: e.target.map(|(_, m)| m),
            detail: e.detail,
            remote_addr: e.remote_addr,
            created_at: format_rfc3339_micros(e.at),
        }
    }
}

/// A page of the audit log, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLogPage {
    /// The entries.
    pub items: Vec<AuditEntryResponse>,
    /// Pass as `page_id` for older entries; `null` when there are none.
    pub next_page_id: Option<String>,
}

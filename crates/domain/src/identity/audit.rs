//! The audit log (issue 34): every change to members, users and keys made by an owner, an
//! admin or the operator, with who made it, to whom, when and from which address. Owners read
//! their organization's entries (`GET /api/organizations/{org_id}/audit-log`); the operator's
//! changes to a user as a whole (disable, enable, remove) carry no organization and are read
//! with `switchboard audit list`.

use serde_json::Value;
use time::OffsetDateTime;

use crate::ids::{OrgId, UserId};

/// What was done: the entry's `action` (a dotted name, stable: clients filter on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditAction {
    /// A member was added to an organization (`detail.role`).
    MemberAdded,
    /// A member's role changed (`detail.from`, `detail.to`).
    MemberRoleChanged,
    /// A member was removed from an organization (`detail.role`: the role they had).
    MemberRemoved,
    /// A user was disabled: their keys and sessions stop working.
    UserDisabled,
    /// A disabled user was enabled again.
    UserEnabled,
    /// A user was removed with everything they owned.
    UserRemoved,
    /// An API key was revoked (`detail.key_id`, `detail.name`).
    ApiKeyRevoked,
}

impl AuditAction {
    /// Every action.
    pub const ALL: [AuditAction; 7] = [
        AuditAction::MemberAdded,
        AuditAction::MemberRoleChanged,
        AuditAction::MemberRemoved,
        AuditAction::UserDisabled,
        AuditAction::UserEnabled,
        AuditAction::UserRemoved,
        AuditAction::ApiKeyRevoked,
    ];

    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::MemberAdded => "member.added",
            AuditAction::MemberRoleChanged => "member.role_changed",
            AuditAction::MemberRemoved => "member.removed",
            AuditAction::UserDisabled => "user.disabled",
            AuditAction::UserEnabled => "user.enabled",
            AuditAction::UserRemoved => "user.removed",
            AuditAction::ApiKeyRevoked => "api_key.revoked",
        }
    }

    /// Reads a stored name.
    pub fn parse(s: &str) -> Option<AuditAction> {
        AuditAction::ALL.into_iter().find(|a| a.as_str() == s)
    }
}

/// Who made a change: a signed-in user (through the API) or the operator (a command on the
/// server, with access to the database).
#[derive(Debug, Clone, PartialEq)]
pub enum Actor {
    /// A user, by id and the e-mail they had then.
    User {
        /// The user.
        id: UserId,
        /// Their e-mail.
        email: String,
    },
    /// The operator's command line.
    Operator,
}

/// One change, to be written in the same transaction as the change itself.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The organization it was in; `None` for a change to a user as a whole.
    pub org: Option<OrgId>,
    /// Who made it.
    pub actor: Actor,
    /// What was done.
    pub action: AuditAction,
    /// To whom (id, and e-mail then).
    pub target: Option<(UserId, String)>,
    /// Details: a JSON object (see [`AuditAction`]).
    pub detail: Value,
    /// The client's address (the connection's peer; `None` for the operator).
    pub remote_addr: Option<String>,
    /// When (UTC, microseconds).
    pub at: OffsetDateTime,
}

/// A stored entry: [`AuditEntry`] with its position in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Position in the log (increasing in the order of writing).
    pub id: i64,
    /// The entry.
    pub entry: AuditEntry,
}

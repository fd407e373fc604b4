//! A sandbox as stored ([`SandboxRecord`]) and as the API shows it ([`SandboxView`],
//! reference app-server §3.1 `SandboxInfo`), with the keyset cursor of the sandbox search.

use time::OffsetDateTime;

use crate::cursor::{Keyset, instant_field, parse_instant_field};
use crate::identity::OrgContext;
use crate::identity::session_keys::SessionKey;
use crate::ids::{OrgId, SandboxId, UserId};
use crate::permissions::Permission;
use crate::sandboxes::Sandbox;
use crate::sandboxes::runtime::SandboxStatus;

/// The runtime name of a sandbox registered with `switchboard sandboxes register`: an agent
/// server Switchboard does not run (design: Sandboxes).
pub const EXTERNAL_RUNTIME: &str = "external";
/// The spec id shown for registered sandboxes (they run no spec of Switchboard's).
pub const EXTERNAL_SPEC_ID: &str = "external";
/// The most ids of one batch get of sandboxes or sandbox specs (reference app-server §3.2).
pub const MAX_SANDBOX_BATCH: usize = 100;
/// The largest page of a sandbox or sandbox-spec search, also the default (reference
/// app-server §3.2: `limit` default 100, `gt=0`, `le=100`).
pub const MAX_SANDBOX_PAGE: u32 = 100;
/// The name of the agent server's exposed URL (reference app-server §3.1).
pub const AGENT_SERVER_URL_NAME: &str = "AGENT_SERVER";

/// A sandbox as stored: one row of the `sandboxes` table (design: Sandboxes).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxRecord {
    /// Id.
    pub id: SandboxId,
    /// Owning organization; `None` while the sandbox waits in the warm pool.
    pub org_id: Option<OrgId>,
    /// Its creator; `None` while the sandbox waits in the warm pool.
    pub owner_id: Option<UserId>,
    /// The spec it runs ([`EXTERNAL_SPEC_ID`] for registered ones).
    pub spec_id: String,
    /// The runtime that runs it (`process`, `docker`, or [`EXTERNAL_RUNTIME`]).
    pub runtime: String,
    /// The last reconciled status.
    pub status: SandboxStatus,
    /// Why it is `ERROR` or `MISSING`, in words its user can act on (bounded:
    /// [`crate::sandboxes::failures`]); `None` for any other status, and for a failure
    /// recorded before the reason was kept.
    pub status_message: Option<String>,
    /// The session key sealed by [`crate::identity::sealing::Sealer`] for this id; `None` for
    /// registered sandboxes and after delete.
    pub session_key_sealed: Option<String>,
    /// The runtime handle (JSON of [`crate::sandboxes::runtime::RuntimeHandle`]); `None`
    /// until launched, and once the runtime has cleaned up after a delete.
    pub handle: Option<String>,
    /// The agent server's base URL as Switchboard reaches it.
    pub agent_server_url: Option<String>,
    /// Creation time (for a claimed warm-pool sandbox: the claim).
    pub created_at: OffsetDateTime,
    /// Last change: the version conditional updates compare.
    pub updated_at: OffsetDateTime,
    /// When the current run began: the launch, or the latest resume.
    pub started_at: Option<OffsetDateTime>,
    /// The last start, claim, resume or webhook use.
    pub last_used_at: Option<OffsetDateTime>,
    /// Delete time: a tombstone, invisible to every read.
    pub deleted_at: Option<OffsetDateTime>,
}

impl SandboxRecord {
    /// A new sandbox about to launch (`STARTING`) at `now`: owned by `owner` (organization and
    /// user; last used now), or unowned for the warm pool (`None`), of spec `spec_id` on
    /// `runtime`, its session key sealed as `session_key_sealed`.
    pub fn starting(
        id: SandboxId,
        owner: Option<(OrgId, UserId)>,
        spec_id: String,
        runtime: String,
        session_key_sealed: String,
        now: OffsetDateTime,
    ) -> Self {
        SandboxRecord {
            id,
            org_id: owner.map(|(org, _)| org),
            owner_id: owner.map(|(_, user)| user),
            spec_id,
            runtime,
            status: SandboxStatus::Starting,
            status_message: None,
            session_key_sealed: Some(session_key_sealed),
            handle: None,
            agent_server_url: None,
            created_at: now,
            updated_at: now,
            started_at: None,
            last_used_at: owner.map(|_| now),
            deleted_at: None,
        }
    }

    /// Whether Switchboard runs it (not a registered agent server).
    pub fn is_managed(&self) -> bool {
        self.runtime != EXTERNAL_RUNTIME
    }

    /// The sandbox as its agent server's webhooks act: `None` while it sits in the warm pool.
    pub fn owned(&self) -> Option<Sandbox> {
        Some(Sandbox {
            id: self.id,
            org_id: self.org_id?,
            owner_id: self.owner_id?,
            created_at: self.created_at,
        })
    }

    /// Whether the caller sees the sandbox (design: Sandboxes): the effective organization's,
    /// and their own unless they hold `view_org_conversations`.
    pub fn visible_to(&self, ctx: &OrgContext) -> bool {
        self.org_id == Some(ctx.org.id)
            && (self.owner_id == Some(ctx.principal.user_id)
                || ctx.role.grants(Permission::ViewOrgConversations))
    }
}

/// The position of a sandbox in the search order (newest first: `created_at` descending,
/// then id descending), written as an opaque `page_id` by [`Keyset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxCursor {
    /// The last item's creation time.
    pub created_at: OffsetDateTime,
    /// The last item's id.
    pub id: SandboxId,
}

impl Keyset for SandboxCursor {
    const VERSION: &'static str = "sb1";

    fn to_fields(&self) -> Vec<String> {
        vec![
            instant_field(self.created_at),
            self.id.0.simple().to_string(),
        ]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let [t, id] = fields else { return None };
        Some(SandboxCursor {
            created_at: parse_instant_field(t)?,
            id: id.parse().ok()?,
        })
    }
}

/// A URL a sandbox exposes (reference app-server §3.1 `ExposedUrl`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedUrl {
    /// `AGENT_SERVER`, `VSCODE`, `WORKER_1` or `WORKER_2`
    /// ([`crate::sandboxes::services::ExposedService::name`]).
    pub name: String,
    /// Where Switchboard reaches it.
    pub url: String,
    /// The port inside the sandbox.
    pub port: u16,
}

/// A sandbox as the API shows it to one caller (reference app-server §3.1 `SandboxInfo`).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxView {
    /// Id.
    pub id: SandboxId,
    /// Its creator.
    pub created_by_user_id: Option<UserId>,
    /// The spec it runs.
    pub sandbox_spec_id: String,
    /// The last reconciled status.
    pub status: SandboxStatus,
    /// Why it is `ERROR` or `MISSING`; `None` for any other status (an addition to
    /// OpenHands' shape).
    pub status_message: Option<String>,
    /// Only when `RUNNING`, and only for its creator and the organization's admins and
    /// owners (issue 9).
    pub session_api_key: Option<SessionKey>,
    /// Only when `RUNNING` and managed: the agent server's URL, then those of the other
    /// services its spec exposes.
    pub exposed_urls: Option<Vec<ExposedUrl>>,
    /// Creation time.
    pub created_at: OffsetDateTime,
}

/// One page of a search: the items and the cursor of the next page, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The `page_id` of the next page; `None` on the last.
    pub next_page_id: Option<String>,
}

/// The keyset of the sandbox-spec search: the index in the configured list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecCursor {
    /// The index of the next spec to list.
    pub next: usize,
}

impl Keyset for SpecCursor {
    const VERSION: &'static str = "sp1";

    fn to_fields(&self) -> Vec<String> {
        vec![self.next.to_string()]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let [n] = fields else { return None };
        Some(SpecCursor {
            next: n.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        let c = SandboxCursor {
            created_at: time::macros::datetime!(2026-11-23 10:00:00.123456 UTC),
            id: SandboxId::new_random(),
        };
        assert_eq!(SandboxCursor::decode(&c.encode()), Some(c));
        assert_eq!(SandboxCursor::decode("x"), None);
        let s = SpecCursor { next: 3 };
        assert_eq!(SpecCursor::decode(&s.encode()), Some(s));
        assert_eq!(SpecCursor::decode(&c.encode()), None);
    }
}

//! Who may reach a sandbox's services through Switchboard, and where they are (issue 22,
//! "Sandbox traffic through Switchboard"; API.md, Sandbox proxy): [`Switchboard::proxy_target`]
//! checks a credential against one sandbox and answers its upstream URLs and session key, so
//! the API crate's proxy forwards only what is allowed and adds the session key itself.

use crate::error::DomainError;
use crate::identity::session_keys::SessionKey;
use crate::ids::{OrgId, SandboxId, UserId};
use crate::sandboxes::records::{ExposedUrl, SandboxRecord};
use crate::sandboxes::runtime::{RuntimeHandle, SandboxStatus};
use crate::sandboxes::services::ExposedService;
use crate::sandboxes::workspace_dirs::working_dir_refusal;

use super::Switchboard;

/// The credential of a proxied request, as presented (not yet checked).
#[derive(Debug, Clone, Copy)]
pub enum ProxyCredential<'a> {
    /// The sandbox's own session key (`X-Session-API-Key`, the query `session_api_key`, or a
    /// websocket's first `{"type": "auth"}` frame).
    Session(&'a str),
    /// An API key (`X-Access-Token` or `Authorization: Bearer`) of a user who sees the sandbox.
    ApiKey(&'a str),
}

/// Where a proxied request goes: the sandbox's services as Switchboard reaches them, and the
/// session key Switchboard presents to them.
#[derive(Clone)]
pub struct ProxyTarget {
    /// The sandbox.
    pub sandbox_id: SandboxId,
    /// Its services (`AGENT_SERVER`, …) with their upstream URLs (never shown to clients).
    pub services: Vec<ExposedUrl>,
    /// The agent server's session key, added upstream as `X-Session-API-Key`.
    pub session_key: SessionKey,
    /// The sandbox's project directory as its processes name it
    /// ([`RuntimeHandle::project_dir`]), which says whether it has a `/workspace` of its own
    /// ([`working_dir_refusal`]).
    pub project_dir: Option<String>,
    /// Whom a proxied socket counts for (issue 33, per-member socket caps): the API key's
    /// user, or, for the sandbox's own session key, the sandbox's owner.
    pub member: Option<UserId>,
    /// The sandbox's organization, whose members' proxied sockets count together (issue 33,
    /// per-organization socket caps).
    pub org: Option<OrgId>,
    /// The sandbox as read for this request: [`Switchboard::verify_upstream`] asks its
    /// runtime who listens at a service's URL.
    record: SandboxRecord,
}

impl std::fmt::Debug for ProxyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyTarget")
            .field("sandbox_id", &self.sandbox_id)
            .field("services", &self.services)
            .field("session_key", &"***")
            .finish()
    }
}

impl ProxyTarget {
    /// Why this sandbox refuses a conversation in `working_dir` ([`working_dir_refusal`]), or
    /// `None`.
    pub fn working_dir_refusal(&self, working_dir: &str) -> Option<String> {
        working_dir_refusal(self.project_dir.as_deref(), working_dir)
    }

    /// The upstream base URL of `service` (OpenHands' name, case-insensitive, `-` read as
    /// `_`: `agent-server` is `AGENT_SERVER`, `worker-1` is `WORKER_1`); `None` when the
    /// sandbox does not expose it.
    pub fn service_url(&self, service: &str) -> Option<&str> {
        let wanted = ExposedService::parse(service)?;
        self.services
            .iter()
            .find(|s| s.name == wanted.name())
            .map(|s| s.url.as_str())
    }
}

impl Switchboard {
    /// The target of a request to sandbox `id` with `credential`.
    ///
    /// Rules (API.md, Sandbox proxy): a session key must be this sandbox's (another
    /// sandbox's is 404, an unknown one 401); an API key must be valid (401) and its user must
    /// see the sandbox in the sandbox's own organization (its creator, or a member holding
    /// `view_org_conversations`); anyone else gets 404, so ids do not leak. A sandbox that is
    /// not `RUNNING` is 409 ([`DomainError::SandboxNotReachable`]); a registered agent server
    /// (which Switchboard has no URL or key for) exposes nothing: 404.
    ///
    /// # Errors
    /// Those above, and storage failures.
    pub fn proxy_target(
        &self,
        id: SandboxId,
        credential: ProxyCredential<'_>,
    ) -> Result<ProxyTarget, DomainError> {
        let sandboxes = &self.sandboxes;
        let mut member = None;
        let record = match credential {
            ProxyCredential::Session(key) => {
                let sandbox = sandboxes.authenticate_sandbox(Some(key))?;
                if sandbox.id != id {
                    return Err(DomainError::SandboxNotFound);
                }
                sandboxes
                    .sandboxes
                    .sandbox(id)?
                    .ok_or(DomainError::SandboxNotFound)?
            }
            ProxyCredential::ApiKey(key) => {
                // The key is checked before anything is said about the sandbox.
                self.auth.authenticate(key)?;
                let record = sandboxes
                    .sandboxes
                    .sandbox(id)?
                    .ok_or(DomainError::SandboxNotFound)?;
                let org = record.org_id.ok_or(DomainError::SandboxNotFound)?;
                let ctx = self
                    .auth
                    .authenticate_in(key, Some(org))
                    .map_err(|e| match e {
                        DomainError::Storage(_) => e,
                        _ => DomainError::SandboxNotFound,
                    })?;
                if !record.visible_to(&ctx) {
                    return Err(DomainError::SandboxNotFound);
                }
                member = Some(ctx.principal.user_id);
                record
            }
        };
        if !record.is_managed() {
            return Err(DomainError::SandboxNotFound);
        }
        if record.status != SandboxStatus::Running {
            return Err(DomainError::SandboxNotReachable(record.status));
        }
        let services = sandboxes
            .exposed_urls(&record)
            .ok_or(DomainError::SandboxNotReachable(record.status))?;
        let session_key = sandboxes
            .session_key(&record)
            .ok_or_else(|| DomainError::ConversationSandboxUnavailable("RUNNING".into()))?;
        let project_dir = record
            .handle
            .as_deref()
            .and_then(|h| RuntimeHandle::from_json(h).ok())
            .and_then(|h| h.project_dir);
        Ok(ProxyTarget {
            sandbox_id: record.id,
            services,
            session_key,
            project_dir,
            member: member.or(record.owner_id),
            org: record.org_id,
            record,
        })
    }

    /// Confirms that the listener of `service` ([`ProxyTarget::service_url`]) is the
    /// sandbox's before the proxy sends the request and the session key there (issue 33: a
    /// process sandbox could bind the port of another's `WORKER_1` first, and be sent the
    /// other's requests and key). Asked for every proxied request and socket.
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`] (404) when the sandbox does not expose `service`;
    /// [`DomainError::ListenerNotSandbox`] (502) when another user's listener holds its
    /// address, nothing listens there, or the runtime could not look.
    pub fn verify_upstream(&self, target: &ProxyTarget, service: &str) -> Result<(), DomainError> {
        let url = target
            .service_url(service)
            .ok_or(DomainError::SandboxNotFound)?;
        self.sandboxes.verify_listener(&target.record, url)
    }

    /// The last reconciled status of sandbox `id`, for the liveness probes Switchboard answers
    /// itself without a credential (`/alive`, `/health`, `/ready` of its agent server: the
    /// SDK probes them without a key, and nothing unauthenticated reaches a sandbox).
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`] for an unknown, deleted or registered sandbox; storage.
    pub fn proxy_probe(&self, id: SandboxId) -> Result<SandboxStatus, DomainError> {
        match self.sandboxes.sandboxes.sandbox(id)? {
            Some(r) if r.is_managed() && r.org_id.is_some() => Ok(r.status),
            _ => Err(DomainError::SandboxNotFound),
        }
    }
}

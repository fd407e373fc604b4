//! How Switchboard reaches the agent server of a sandbox it runs: the base URL and the
//! session key, unsealed (send-message, the workspace routes, the proxy, the pull and stream
//! paths), and the new URL stored when a resume moved it.

use crate::error::DomainError;
use crate::identity::session_keys::SessionKey;
use crate::ids::SandboxId;
use crate::ports::sandboxes::{SandboxUpdate, later};
use crate::sandboxes::records::{AGENT_SERVER_URL_NAME, ExposedUrl, SandboxRecord};
use crate::sandboxes::runtime::RuntimeHandle;
use crate::services::SandboxService;
use crate::time_input::now_micros;

impl SandboxService {
    /// The agent server's base URL of a launched managed sandbox (its recorded URL, else its
    /// handle's); `None` for a registered one or one not launched.
    pub(super) fn agent_url(&self, record: &SandboxRecord) -> Option<String> {
        if !record.is_managed() {
            return None;
        }
        record.agent_server_url.clone().or_else(|| {
            RuntimeHandle::from_json(record.handle.as_deref()?)
                .ok()
                .map(|h| h.agent_server_url)
        })
    }

    /// Every service a launched managed sandbox exposes, where Switchboard reaches it:
    /// `AGENT_SERVER` first (its recorded URL, else its handle's), then those of its spec's
    /// `exposed_services` the runtime gave a port (the handle's, issue 22); `None` for a
    /// registered sandbox or one not launched (or whose handle does not read).
    pub(super) fn exposed_urls(&self, record: &SandboxRecord) -> Option<Vec<ExposedUrl>> {
        if !record.is_managed() {
            return None;
        }
        let handle = RuntimeHandle::from_json(record.handle.as_deref()?).ok()?;
        let agent = ExposedUrl {
            name: AGENT_SERVER_URL_NAME.to_owned(),
            url: record
                .agent_server_url
                .clone()
                .unwrap_or_else(|| handle.agent_server_url.clone()),
            port: handle.sandbox_port,
        };
        let others = handle.services.iter().map(|s| ExposedUrl {
            name: s.service.name().to_owned(),
            url: s.url.clone(),
            port: s.sandbox_port,
        });
        Some(std::iter::once(agent).chain(others).collect())
    }

    /// The session key of a managed sandbox, unsealed; `None` for a registered one (only its
    /// hash is stored) or when it does not open (logged).
    pub(super) fn session_key(&self, record: &SandboxRecord) -> Option<SessionKey> {
        let m = self.managed.as_ref()?;
        let sealed = record.session_key_sealed.as_ref()?;
        match m.m.sealer.open(sealed, &record.id.to_string()) {
            Ok(k) => Some(SessionKey::new(k)),
            Err(e) => {
                tracing::error!(sandbox = %record.id, error = %e, "a session key does not open with the secret key (was --secret-key-file changed?)");
                None
            }
        }
    }

    /// Stores `handle` and its URL as sandbox `id`'s, after its runtime moved the agent
    /// server on resume ([`SandboxRuntime::handle_after_resume`](crate::sandboxes::runtime::SandboxRuntime::handle_after_resume)),
    /// re-reading on a concurrent change a few times (then the next resume or the health
    /// probe tells).
    ///
    /// # Errors
    /// [`DomainError::SandboxNotFound`] when it is gone; storage failures.
    pub(super) fn record_moved(
        &self,
        id: SandboxId,
        handle: &RuntimeHandle,
    ) -> Result<(), DomainError> {
        for _ in 0..5 {
            let Some(record) = self.sandboxes.sandbox(id)? else {
                return Err(DomainError::SandboxNotFound);
            };
            let update = SandboxUpdate {
                id,
                expected_updated_at: record.updated_at,
                updated_at: later(record.updated_at, now_micros()),
                status: None,
                handle: Some(handle.to_json()),
                agent_server_url: Some(handle.agent_server_url.clone()),
                started_at: None,
            };
            if self.sandboxes.update_sandbox(&update)? {
                tracing::info!(sandbox = %id, url = %handle.agent_server_url, "the sandbox's agent server moved when it was resumed");
                return Ok(());
            }
        }
        Ok(())
    }
}

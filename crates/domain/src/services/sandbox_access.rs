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

    /// The LLM pass-through's URL as sandbox `record` reaches it (issue 38): under the
    /// webhook base URL its runtime gives its sandboxes when it has its own (Docker,
    /// Kubernetes), else under `--llm-proxy-url`, else under the launch's webhook base URL.
    ///
    /// # Errors
    /// [`DomainError::SandboxesDisabled`] on a server that runs no sandboxes.
    pub(crate) fn llm_proxy_url_of(&self, record: &SandboxRecord) -> Result<String, DomainError> {
        use crate::services::llm_relay::{RELAY_PATH, relay_url};
        let m = &self.managed()?.m;
        if let Some(own) = m
            .runtimes
            .get(&record.runtime)
            .and_then(|r| r.webhook_base_url())
        {
            return Ok(relay_url(own));
        }
        Ok(match &m.settings.llm_proxy_url {
            Some(root) => format!("{root}{RELAY_PATH}"),
            None => relay_url(&m.settings.webhook_base_url),
        })
    }

    /// The agent server's base URL and the session key of a launched managed sandbox, once
    /// its runtime confirmed that what listens there is the sandbox ([`Self::verify_listener`]):
    /// what every call to its agent server needs. `Ok(None)` for a registered sandbox, one not
    /// launched, or a key that does not open (as [`Self::agent_url`], [`Self::session_key`]).
    ///
    /// # Errors
    /// Those of [`Self::verify_listener`]: nothing is sent then.
    pub(super) fn agent_target(
        &self,
        record: &SandboxRecord,
    ) -> Result<Option<(String, SessionKey)>, DomainError> {
        let (Some(url), Some(key)) = (self.agent_url(record), self.session_key(record)) else {
            return Ok(None);
        };
        self.verify_listener(record, &url)?;
        Ok(Some((url, key)))
    }

    /// Confirms that what listens at `url`, one of sandbox `record`'s own, is the sandbox
    /// ([`SandboxRuntime::listener`](crate::sandboxes::runtime::SandboxRuntime::listener),
    /// issue 33) before Switchboard sends a request or a credential there. A refusal is
    /// logged with the sandbox and the reason.
    ///
    /// # Errors
    /// [`DomainError::ListenerNotSandbox`] (502) when another user's listener holds the
    /// address, nothing listens there, the runtime could not look, or the sandbox's runtime
    /// or handle is unusable.
    pub(super) fn verify_listener(
        &self,
        record: &SandboxRecord,
        url: &str,
    ) -> Result<(), DomainError> {
        let refused = |why: String| {
            tracing::warn!(sandbox = %record.id, url = %url, reason = %why, "nothing sent to the sandbox: its listener is not verified");
            Err(DomainError::ListenerNotSandbox(why))
        };
        let m = self.managed()?;
        let Some((runtime, handle)) = super::sandboxes::runtime_and_handle(m, record) else {
            return refused(format!(
                "sandbox {} has no usable runtime handle",
                record.id
            ));
        };
        match runtime.listener(&handle, url) {
            Ok(check) => match check.refusal(url) {
                None => Ok(()),
                Some(why) => refused(why),
            },
            Err(e) => refused(format!("its listener could not be looked up: {e}")),
        }
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
                status_message: None,
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

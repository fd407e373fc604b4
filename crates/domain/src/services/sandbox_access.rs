//! How Switchboard reaches the agent server of a sandbox it runs: the base URL and the
//! session key, unsealed (send-message, the workspace routes, the proxy, the pull and stream
//! paths).

use crate::identity::session_keys::SessionKey;
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::RuntimeHandle;
use crate::services::SandboxService;

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
}

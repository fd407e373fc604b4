//! The blocking HTTP client for agent servers ([`AgentServerClient`]), on `ureq`: plain HTTP
//! to Switchboard's own sandboxes, no proxy taken from the environment, no redirects followed,
//! short per-call timeouts, small answers only.

use std::time::Duration;

use serde_json::Value;
use switchboard_domain::ConversationId;
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::sandboxes::agent_requests::{StartConversationRequest, SwitchLlmRequest};
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, AgentServerError, BashCommand, BashOutcome,
};

/// The most bytes read from an answer of the health probe.
const PROBE_BODY_LIMIT: u64 = 4096;
/// The most bytes read from an answer of a conversation or bash call.
const CALL_BODY_LIMIT: u64 = 4 << 20;
/// The most characters of an unexpected answer's body kept in its error (redacted, then
/// shortened, by whoever shows it).
const ERROR_BODY_CHARS: usize = 16 * 1024;
/// The header carrying a sandbox's session key (brief: cross-cutting decisions).
pub(crate) const SESSION_HEADER: &str = "X-Session-API-Key";
/// How long a send-message, conversation pause or delete may take (a pause waits for the
/// run's current step).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Time allowed on top of a bash command's own timeout for the HTTP round trip.
const BASH_MARGIN: Duration = Duration::from_secs(10);

/// An [`AgentServerClient`] over HTTP/1.1 with a connection pool; cheap to share (`Sync`).
#[derive(Debug, Clone)]
pub struct HttpAgentServerClient {
    pub(crate) agent: ureq::Agent,
}

impl Default for HttpAgentServerClient {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpAgentServerClient {
    /// A client that ignores `HTTP_PROXY` and the like (a proxy must never see a session key
    /// or stand between Switchboard and a loopback sandbox) and follows no redirects.
    pub fn new() -> Self {
        let config = ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build();
        HttpAgentServerClient {
            agent: ureq::Agent::new_with_config(config),
        }
    }
}

impl AgentServerClient for HttpAgentServerClient {
    fn alive(&self, base_url: &str, timeout: Duration) -> Result<(), AgentServerError> {
        let url = format!("{}/alive", base_url.trim_end_matches('/'));
        let answer = self
            .agent
            .get(&url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .call();
        let mut response = answer.map_err(|e| transport_error(&url, timeout, e))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(PROBE_BODY_LIMIT)
            .read_to_string()
            .map_err(|e| transport_error(&url, timeout, e))?;
        let ok = status == 200
            && serde_json::from_str::<Value>(&body)
                .is_ok_and(|v| v.get("status").and_then(Value::as_str) == Some("ok"));
        if ok {
            Ok(())
        } else {
            Err(AgentServerError::BadAnswer {
                url,
                detail: format!(
                    "HTTP {status}: {}",
                    body.chars().take(200).collect::<String>()
                ),
            })
        }
    }

    fn create_conversation(
        &self,
        base_url: &str,
        session_key: &SessionKey,
        body: &StartConversationRequest,
        timeout: Duration,
    ) -> Result<Value, AgentServerError> {
        let url = format!("{}/api/conversations", base_url.trim_end_matches('/'));
        let (status, text) = self.post_json(&url, session_key, body, timeout)?;
        if status != 200 && status != 201 {
            return Err(bad_answer(&url, status, &text));
        }
        serde_json::from_str::<Value>(&text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| bad_answer(&url, status, &text))
    }

    fn execute_bash(
        &self,
        base_url: &str,
        session_key: &SessionKey,
        command: &BashCommand,
    ) -> Result<BashOutcome, AgentServerError> {
        let url = format!(
            "{}/api/bash/execute_bash_command",
            base_url.trim_end_matches('/')
        );
        let timeout = Duration::from_secs(command.timeout_secs) + BASH_MARGIN;
        let (status, text) = self.post_json(&url, session_key, command, timeout)?;
        if status != 200 {
            return Err(bad_answer(&url, status, &text));
        }
        let v: Value = serde_json::from_str(&text).map_err(|_| bad_answer(&url, status, &text))?;
        let text_of = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        Ok(BashOutcome {
            exit_code: v.get("exit_code").and_then(Value::as_i64),
            stdout: text_of("stdout"),
            stderr: text_of("stderr"),
        })
    }

    fn send_message(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        message: &Value,
    ) -> Result<(), AgentServerError> {
        let url = format!("{}/events", conversation_url(base_url, conversation));
        let (status, text) = self.post_json(&url, key, message, CALL_TIMEOUT)?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(bad_answer(&url, status, &text))
        }
    }

    fn switch_llm(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        request: &SwitchLlmRequest,
    ) -> Result<(), AgentServerError> {
        let url = format!("{}/switch_llm", conversation_url(base_url, conversation));
        let (status, text) = self.post_json(&url, key, request, CALL_TIMEOUT)?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(bad_answer(&url, status, &text))
        }
    }

    fn delete_conversation(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
    ) -> Result<(), AgentServerError> {
        let url = conversation_url(base_url, conversation);
        let answer = self
            .agent
            .delete(&url)
            .config()
            .timeout_global(Some(CALL_TIMEOUT))
            .build()
            .header(SESSION_HEADER, key.expose())
            .call();
        let mut response = answer.map_err(|e| transport_error(&url, CALL_TIMEOUT, e))?;
        let status = response.status().as_u16();
        // 404: the agent server does not know it (nothing to delete there).
        if (200..300).contains(&status) || status == 404 {
            return Ok(());
        }
        let text = response
            .body_mut()
            .with_config()
            .limit(CALL_BODY_LIMIT)
            .read_to_string()
            .unwrap_or_default();
        Err(bad_answer(&url, status, &text))
    }

    fn pause_conversation(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
    ) -> Result<(), AgentServerError> {
        let url = format!("{}/pause", conversation_url(base_url, conversation));
        let (status, text) = self.post_json(&url, key, &serde_json::json!({}), CALL_TIMEOUT)?;
        // 404: the agent server does not know it (nothing runs there to pause).
        if (200..300).contains(&status) || status == 404 {
            Ok(())
        } else {
            Err(bad_answer(&url, status, &text))
        }
    }
}

/// `{base_url}/api/conversations/{id as 32 hex}` (the form OpenHands' app server uses).
pub(crate) fn conversation_url(base_url: &str, conversation: ConversationId) -> String {
    format!(
        "{}/api/conversations/{}",
        base_url.trim_end_matches('/'),
        conversation.0.simple()
    )
}

impl HttpAgentServerClient {
    /// POSTs `body` (serialized as JSON) to `url` with the session key; answers the status
    /// and the body text.
    fn post_json<B: serde::Serialize + ?Sized>(
        &self,
        url: &str,
        session_key: &SessionKey,
        body: &B,
        timeout: Duration,
    ) -> Result<(u16, String), AgentServerError> {
        let body = serde_json::to_vec(body).map_err(|e| AgentServerError::Local {
            url: url.to_owned(),
            detail: format!("the request could not be written: {e}"),
        })?;
        let answer = self
            .agent
            .post(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header(SESSION_HEADER, session_key.expose())
            .header("Content-Type", "application/json")
            .send(&body[..]);
        let mut response = answer.map_err(|e| transport_error(url, timeout, e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(CALL_BODY_LIMIT)
            .read_to_string()
            .map_err(|e| transport_error(url, timeout, e))?;
        Ok((status, text))
    }
}

/// An unexpected answer: its status and body, up to [`ERROR_BODY_CHARS`] characters. The body
/// is not cut to a display length here: whoever shows it redacts it first, then shortens it
/// (an answer may echo a secret of the request; issue 24 item 1).
pub(crate) fn bad_answer(url: &str, status: u16, body: &str) -> AgentServerError {
    AgentServerError::BadAnswer {
        url: url.to_owned(),
        detail: format!(
            "HTTP {status}: {}",
            body.chars().take(ERROR_BODY_CHARS).collect::<String>()
        ),
    }
}

/// Whether a transport failure is Switchboard's own lack of resources (no descriptor or
/// memory for a socket) rather than anything about the agent server.
fn is_local_shortage(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

pub(crate) fn transport_error(
    url: &str,
    timeout: Duration,
    error: ureq::Error,
) -> AgentServerError {
    match error {
        ureq::Error::Timeout(_) => AgentServerError::Timeout {
            url: url.to_owned(),
            timeout,
        },
        ureq::Error::Io(e) if is_local_shortage(&e) => AgentServerError::Local {
            url: url.to_owned(),
            detail: e.to_string(),
        },
        other => AgentServerError::Unreachable {
            url: url.to_owned(),
            detail: other.to_string(),
        },
    }
}

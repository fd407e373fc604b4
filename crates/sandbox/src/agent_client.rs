//! The blocking HTTP client for agent servers ([`AgentServerClient`]), on `ureq`: plain HTTP
//! to Switchboard's own sandboxes, no proxy taken from the environment, no redirects followed,
//! short per-call timeouts, small answers only.

use std::time::Duration;

use serde_json::Value;
use switchboard_domain::sandboxes::runtime::{AgentServerClient, AgentServerError};

/// The most bytes read from an answer of the health probe.
const PROBE_BODY_LIMIT: u64 = 4096;

/// An [`AgentServerClient`] over HTTP/1.1 with a connection pool; cheap to share (`Sync`).
#[derive(Debug, Clone)]
pub struct HttpAgentServerClient {
    agent: ureq::Agent,
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
}

fn transport_error(url: &str, timeout: Duration, error: ureq::Error) -> AgentServerError {
    match error {
        ureq::Error::Timeout(_) => AgentServerError::Timeout {
            url: url.to_owned(),
            timeout,
        },
        other => AgentServerError::Unreachable {
            url: url.to_owned(),
            detail: other.to_string(),
        },
    }
}

//! The pull path's reads of [`HttpAgentServerClient`] ([`AgentServerEvents`], issue 19): an
//! agent server's conversations and their persisted events, page by page, with the sandbox's
//! session key.

use std::time::Duration;

use serde_json::Value;
use switchboard_domain::ConversationId;
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::sandboxes::agent_events::{AGENT_PAGE_LIMIT, AgentPage, AgentServerEvents};
use switchboard_domain::sandboxes::runtime::AgentServerError;

use crate::agent_client::{
    HttpAgentServerClient, SESSION_HEADER, bad_answer, conversation_url, transport_error,
};

/// The most bytes read from one page (100 events or conversations): 64 MiB, far above what
/// real pages hold (a run's events are a few KiB each), and a bound on what a sandbox can make
/// Switchboard hold. A larger page fails the read (logged; the catch-up of that conversation
/// stops there).
const PAGE_BODY_LIMIT: u64 = 64 << 20;

impl AgentServerEvents for HttpAgentServerClient {
    fn count_conversations(
        &self,
        base_url: &str,
        key: &SessionKey,
        timeout: Duration,
    ) -> Result<u64, AgentServerError> {
        let url = format!("{}/api/conversations/count", base_url.trim_end_matches('/'));
        count(self.get(&url, key, timeout)?, &url)
    }

    fn search_conversations(
        &self,
        base_url: &str,
        key: &SessionKey,
        page_id: Option<&str>,
        timeout: Duration,
    ) -> Result<AgentPage, AgentServerError> {
        let mut url = format!(
            "{}/api/conversations/search?limit={AGENT_PAGE_LIMIT}",
            base_url.trim_end_matches('/')
        );
        if let Some(p) = page_id {
            url.push_str(&format!("&page_id={}", encode(p)));
        }
        page(self.get(&url, key, timeout)?, &url)
    }

    fn count_events(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        timeout: Duration,
    ) -> Result<u64, AgentServerError> {
        let url = format!("{}/events/count", conversation_url(base_url, conversation));
        match self.get(&url, key, timeout)? {
            (404, _) => Ok(0),
            answer => count(answer, &url),
        }
    }

    fn search_events(
        &self,
        base_url: &str,
        key: &SessionKey,
        conversation: ConversationId,
        page_id: Option<&str>,
        limit: u32,
        timeout: Duration,
    ) -> Result<AgentPage, AgentServerError> {
        let mut url = format!(
            "{}/events/search?sort_order=TIMESTAMP&limit={}",
            conversation_url(base_url, conversation),
            limit.clamp(1, AGENT_PAGE_LIMIT)
        );
        if let Some(p) = page_id {
            url.push_str(&format!("&page_id={}", encode(p)));
        }
        match self.get(&url, key, timeout)? {
            (404, _) => Ok(AgentPage::default()),
            answer => page(answer, &url),
        }
    }
}

impl HttpAgentServerClient {
    /// GETs `url` with the session key; answers the status and the body text.
    fn get(
        &self,
        url: &str,
        key: &SessionKey,
        timeout: Duration,
    ) -> Result<(u16, String), AgentServerError> {
        let answer = self
            .agent
            .get(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header(SESSION_HEADER, key.expose())
            .call();
        let mut response = answer.map_err(|e| transport_error(url, timeout, e))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(PAGE_BODY_LIMIT)
            .read_to_string()
            .map_err(|e| transport_error(url, timeout, e))?;
        Ok((status, text))
    }
}

/// A 200 answer holding a non-negative integer.
fn count((status, text): (u16, String), url: &str) -> Result<u64, AgentServerError> {
    match (status, text.trim().parse::<u64>()) {
        (200, Ok(n)) => Ok(n),
        _ => Err(bad_answer(url, status, &text)),
    }
}

/// A 200 answer holding `{"items": [...], "next_page_id": string | null}`.
fn page((status, text): (u16, String), url: &str) -> Result<AgentPage, AgentServerError> {
    if status != 200 {
        return Err(bad_answer(url, status, &text));
    }
    let Ok(Value::Object(mut body)) = serde_json::from_str::<Value>(&text) else {
        return Err(bad_answer(url, status, &text));
    };
    let Some(Value::Array(items)) = body.remove("items") else {
        return Err(bad_answer(url, status, &text));
    };
    let next_page_id = match body.remove("next_page_id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    Ok(AgentPage {
        items,
        next_page_id,
    })
}

/// `s` percent-encoded for a query string (ids are UUIDs or hex, but an agent server chooses
/// them).
pub(crate) fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_counts_are_read_strictly() {
        let p = page(
            (200, r#"{"items":[{"id":"a"}],"next_page_id":"b"}"#.into()),
            "u",
        )
        .unwrap();
        assert_eq!(p.items.len(), 1);
        assert_eq!(p.next_page_id.as_deref(), Some("b"));
        let last = page((200, r#"{"items":[],"next_page_id":null}"#.into()), "u").unwrap();
        assert_eq!(last, AgentPage::default());
        assert!(page((200, r#"{"items":{}}"#.into()), "u").is_err());
        assert!(page((500, r#"{"items":[]}"#.into()), "u").is_err());
        assert_eq!(count((200, "12".into()), "u").unwrap(), 12);
        assert!(count((200, "-1".into()), "u").is_err());
        assert!(count((401, "3".into()), "u").is_err());
        assert_eq!(encode("a b&c=d-1"), "a%20b%26c%3Dd-1");
    }
}

//! The events' helpers: the webhook and events routes, the model crate's conformance corpus,
//! a sandbox registered to post events, a batch ingested, a stored conversation read, and a
//! search read page by page.

use reqwest::Method;
use serde_json::Value;
use switchboard_domain::{OrgId, UserId};

use super::{TestApp, status_json};

/// A stored conversation as tests compare it: the run state by its wire name.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredConversation {
    pub org_id: OrgId,
    pub owner_id: UserId,
    pub title: Option<String>,
    pub execution_status: Option<String>,
}

/// The webhook route receiving a batch of events for `conversation`.
pub fn webhook_events_path(conversation: &str) -> String {
    format!("/api/v1/webhooks/events/{conversation}")
}

/// The events routes of `conversation`: `…/events` plus `suffix` (`""`, `"/search"`, `"/count"`).
pub fn events_path(conversation: &str, suffix: &str) -> String {
    format!("/api/v1/conversation/{conversation}/events{suffix}")
}

/// The conformance corpus of the model crate.
pub fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/fixtures/conformance")
}

/// The non-empty lines of a file.
pub fn read_lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The `*.jsonl` files directly in `dir`, sorted by name.
pub fn jsonl_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The canonical JSON value of an event as the API must return it: the model's persisted form.
#[track_caller]
pub fn canonical(event_json: &str) -> Value {
    let event = switchboard_model::Event::from_json_str(event_json)
        .unwrap_or_else(|e| panic!("not a valid event ({e:?}): {event_json}"));
    serde_json::from_str(&event.to_json_string()).unwrap()
}

/// The instant (microseconds, naive = UTC) an event is ordered and filtered by.
#[track_caller]
pub fn event_instant(event: &Value) -> time::OffsetDateTime {
    let ts = event["timestamp"]
        .as_str()
        .unwrap_or_else(|| panic!("{event}"));
    switchboard_domain::time_input::truncate_micros(
        switchboard_model::parse_instant(ts).unwrap_or_else(|| panic!("timestamp {ts}")),
    )
}

impl TestApp {
    /// Registers a sandbox of `org` owned by `user` and returns its session key.
    pub async fn register_sandbox(&self, org: OrgId, user: UserId) -> String {
        let s = self.services.clone();
        tokio::task::spawn_blocking(move || s.sandboxes().register_sandbox(org, user).unwrap())
            .await
            .unwrap()
            .session_api_key
    }

    /// `POST` of raw JSON `body` to a webhook `path` with the session key `session` (if any).
    pub async fn post_webhook(
        &self,
        path: &str,
        session: Option<&str>,
        body: impl Into<Vec<u8>>,
    ) -> (u16, Value) {
        let mut r = self
            .client
            .post(format!("{}{}", self.base, path))
            .header("content-type", "application/json")
            .body(body.into());
        if let Some(k) = session {
            r = r.header("X-Session-API-Key", k);
        }
        status_json(r.send().await.unwrap()).await
    }

    /// Posts a batch of events (JSON texts) to `conversation`; must be 200 `{"success": true}`.
    pub async fn ingest(&self, session: &str, conversation: &str, events: &[&str]) {
        let body = format!("[{}]", events.join(","));
        let (status, body) = self
            .post_webhook(&webhook_events_path(conversation), Some(session), body)
            .await;
        assert_eq!(
            (status, &body),
            (200, &serde_json::json!({"success": true})),
            "{}: ingest",
            self.backend
        );
    }

    /// `GET` of `path` with `key` and the query `params`: status and JSON body.
    pub async fn get_query(
        &self,
        path: &str,
        key: &str,
        params: &[(&str, String)],
    ) -> (u16, Value) {
        let query = serde_urlencoded::to_string(params).unwrap();
        let path = if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        };
        let r = self.req(Method::GET, &path, Some(key));
        status_json(r.send().await.unwrap()).await
    }

    /// A conversation as stored (run state, title, owner…).
    pub async fn conversation(&self, id: &str) -> Option<StoredConversation> {
        let id = switchboard_domain::ConversationId(switchboard_domain::parse_uuid(id).unwrap());
        let s = self.services.clone();
        tokio::task::spawn_blocking(move || s.store().conversation(id).unwrap())
            .await
            .unwrap()
            .map(|c| StoredConversation {
                org_id: c.org_id,
                owner_id: c.owner_id,
                title: c.title,
                execution_status: c.execution_status.map(|s| s.as_str().to_owned()),
            })
    }

    /// Every page of a search with `params` and `limit`, checking that each page is at most
    /// `limit` long and that `next_page_id` is present exactly when `expected_total` items
    /// have not all been returned yet. Returns the items in order.
    pub async fn search_all(
        &self,
        key: &str,
        conversation: &str,
        params: &[(&str, String)],
        limit: u32,
        expected_total: usize,
    ) -> Vec<Value> {
        let path = events_path(conversation, "/search");
        let mut out: Vec<Value> = Vec::new();
        let mut page_id: Option<String> = None;
        for _ in 0..=expected_total + 1 {
            let mut q: Vec<(&str, String)> = params.to_vec();
            q.push(("limit", limit.to_string()));
            if let Some(p) = &page_id {
                q.push(("page_id", p.clone()));
            }
            let (status, body) = self.get_query(&path, key, &q).await;
            assert_eq!(status, 200, "{}: search {q:?}: {body}", self.backend);
            let items = body["items"].as_array().unwrap_or_else(|| panic!("{body}"));
            assert!(items.len() <= limit as usize, "{}: {q:?}", self.backend);
            out.extend(items.iter().cloned());
            let next = &body["next_page_id"];
            assert_eq!(
                !next.is_null(),
                out.len() < expected_total,
                "{}: next_page_id after {} of {expected_total} items ({q:?}): {next}",
                self.backend,
                out.len()
            );
            match next.as_str() {
                Some(p) => {
                    assert_eq!(
                        items.len(),
                        limit as usize,
                        "{}: a short page with more to come",
                        self.backend
                    );
                    page_id = Some(p.to_owned());
                }
                None => return out,
            }
        }
        panic!(
            "{}: search did not end ({params:?}, limit {limit})",
            self.backend
        )
    }
}

/// Asserts two lists of events are equal, reporting the ids (not whole payloads) when the
/// order or membership differs, and the first differing item otherwise.
#[track_caller]
pub fn assert_same_events(got: &[Value], want: &[Value], context: &str) {
    let ids = |v: &[Value]| -> Vec<String> { v.iter().map(|e| e["id"].to_string()).collect() };
    assert_eq!(ids(got), ids(want), "{context}: ids");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{context}: item {i}");
    }
}

//! A start whose LLM key is not the starting member's own (an organization's LLM profile, a
//! provider connection; issue 38): the agent server is sent the LLM pass-through's address and
//! a token of the conversation's, never the key nor its base URL; the token opens a route to
//! that base URL with that key.

use serde_json::Value;

use crate::common::sandboxes::SandboxApp;

/// What a relayed start must have chosen: the model sent, and the route's upstream, key owner
/// (`organization`, `operator`) and key.
pub struct Chosen<'a> {
    pub model: &'a str,
    pub upstream: &'a str,
    pub owner: &'a str,
    pub key: &'a str,
}

/// Asserts that create body `c` sends `want.model` through the pass-through (under the app's
/// address, where its process sandboxes post their webhooks) with a token (`sbl_` and 43
/// characters) and holds neither the key nor `want.upstream` anywhere; and that the token
/// opens this conversation's route to `want.upstream` with `want.owner`'s key `want.key`.
#[track_caller]
pub fn assert_relayed(app: &SandboxApp, c: &Value, want: &Chosen<'_>) {
    let backend = app.backend;
    let llm = &c["agent"]["llm"];
    let relay = format!("{}/api/v1/llm-proxy", app.base);
    assert_eq!(
        (llm["model"].as_str(), llm["base_url"].as_str()),
        (Some(want.model), Some(relay.as_str())),
        "{backend}: {c}"
    );
    let token = llm["api_key"].as_str().unwrap_or_default();
    assert!(
        token.starts_with("sbl_")
            && token.len() == 47
            && token[4..].chars().all(|ch| ch.is_ascii_alphanumeric()),
        "{backend}: not a pass-through token: {c}"
    );
    let text = c.to_string();
    assert!(!text.contains(want.key), "{backend}: the key was sent: {c}");
    assert!(
        !text.contains(want.upstream),
        "{backend}: the key's base URL was sent: {c}"
    );
    let today = time::OffsetDateTime::now_utc().date();
    let target = app
        .services
        .llm_relay()
        .authorize(token, today)
        .unwrap()
        .unwrap_or_else(|refused| panic!("{backend}: the token opens nothing: {refused:?}"));
    let route = &target.route;
    assert_eq!(
        route.conversation_id.to_string().replace('-', ""),
        c["conversation_id"].as_str().unwrap().replace('-', ""),
        "{backend}: the route is another conversation's"
    );
    assert_eq!(
        (
            route.upstream.as_str(),
            route.key_owner.as_str(),
            route.model.as_str()
        ),
        (want.upstream, want.owner, want.model),
        "{backend}: {c}"
    );
    assert!(
        target.api_key == want.key,
        "{backend}: the route holds another key than {}'s",
        want.owner
    );
}

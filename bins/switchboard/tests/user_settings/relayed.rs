//! A start whose LLM key is not the starting member's own (the organization's, the
//! operator's; issue 38): the agent server is sent the LLM pass-through's address and a token
//! of the conversation's, never the key nor its base URL; the route the start stored under the
//! token's hash names where requests go and whose key it is, and holds that key sealed.

use std::process::Command;

use serde_json::Value;
use switchboard_domain::llm_relay::token_hash;
use switchboard_domain::ports::SealedRef;
use switchboard_domain::services::binding_of;
use switchboard_testkit::Backend;

use crate::user_settings::rig::Rig;
use crate::user_settings::rotation::sealer_of;

/// What a relayed start must have chosen: the model sent, and the route's upstream, key owner
/// (`organization`, `operator`) and key.
pub struct Chosen<'a> {
    pub model: &'a str,
    pub upstream: &'a str,
    pub owner: &'a str,
    pub key: &'a str,
}

/// The pass-through's address as this rig's process sandboxes reach it: under the server's
/// own address (its webhook root).
pub fn relay_url(r: &Rig) -> String {
    format!("http://{}/api/v1/llm-proxy", r.server.socket_addr())
}

/// Asserts that create body `c` sends `want.model` through the pass-through with a token
/// (`sbl_` and 43 characters) and holds neither the key nor `want.upstream` anywhere; that the
/// token's route is this conversation's, goes to `want.upstream` with `want.owner`'s key, and
/// that its sealed key, opened with the installation key, is `want.key`.
#[track_caller]
pub fn assert_relayed(r: &Rig, backend: Backend, c: &Value, want: &Chosen<'_>) {
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (llm["model"].as_str(), llm["base_url"].as_str()),
        (Some(want.model), Some(relay_url(r).as_str())),
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
    let row = route_of(r, backend, &token_hash(token));
    let [conversation, upstream, owner, sealed, model] = row.as_slice() else {
        panic!("{backend}: no single route for the token: {row:?}");
    };
    let sent = c["conversation_id"].as_str().unwrap_or_default();
    assert_eq!(
        conversation.replace('-', ""),
        sent.replace('-', ""),
        "{backend}: the route is another conversation's"
    );
    assert_eq!(
        (upstream.as_str(), owner.as_str(), model.as_str()),
        (want.upstream, want.owner, want.model),
        "{backend}: {c}"
    );
    let key_file = r._data.path().join("secret.key");
    let sealer = sealer_of(&std::fs::read_to_string(key_file).unwrap());
    let route = SealedRef::LlmRoute(conversation.parse().unwrap());
    let opened = sealer.open(sealed, &binding_of(route));
    assert!(
        opened.as_deref() == Ok(want.key),
        "{backend}: the route holds another key than {}'s",
        want.owner
    );
}

/// The route stored under `token_hash`: its conversation, upstream, key owner, sealed key and
/// model (empty when there is none), read with the backend's own client.
fn route_of(r: &Rig, backend: Backend, token_hash: &str) -> Vec<String> {
    let query = format!(
        "SELECT conversation_id, upstream, key_owner, api_key_sealed, model FROM llm_routes \
         WHERE token_hash = '{token_hash}'"
    );
    let out = match backend {
        Backend::Sqlite => Command::new("sqlite3")
            .args(["-separator", "|"])
            .arg(r.db.url().trim_start_matches("sqlite://"))
            .arg(&query)
            .output(),
        Backend::Postgres => Command::new("psql")
            .args([r.db.url(), "-At", "-F", "|", "-c", &query])
            .output(),
    }
    .unwrap();
    assert!(out.status.success(), "{query}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    match rows.as_slice() {
        [row] => row.split('|').map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

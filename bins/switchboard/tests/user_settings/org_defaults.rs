//! The organization's defaults: an admin sets them, a member reads them without any key and
//! cannot change them, and a start takes them between the member's own settings and the
//! operator's flags (the LLM's model and endpoint chosen level by level, the MCP servers).

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::user_settings::relayed::{Chosen, assert_relayed};
use crate::user_settings::rig::{
    CONNECTION_KEY, LLM_KEY, OPERATOR_KEY, ORG_KEY, ORG_MCP_KEY, ORG_PROFILE_KEY, ORG_SEARCH_KEY,
    Rig, detail,
};
use crate::user_settings::starts::start;

pub const ORG_URL: &str = "http://127.0.0.1:7/v1";

fn patch(r: &Rig, key: &str, org: &str, body: Value) -> (u16, Value) {
    r.call(
        "PATCH",
        &format!("/api/organizations/{org}/settings"),
        Some(key),
        Some(body),
    )
}

/// The organization's key and endpoint with `model`, as a start chose them: sent through the
/// LLM pass-through (issue 38).
fn org_llm(model: &str) -> Chosen<'_> {
    Chosen {
        model,
        upstream: ORG_URL,
        owner: "organization",
        key: ORG_KEY,
    }
}

fn llm(c: &Value) -> (Value, Value, Value) {
    let l = &c["agent"]["llm"];
    (
        l["model"].clone(),
        l["base_url"].clone(),
        l["api_key"].clone(),
    )
}

pub fn org_defaults_reach_members(r: &Rig, backend: Backend) {
    let path = format!("/api/organizations/{}/settings", r.org);
    let (code, d) = r.get(&path, &r.member);
    assert_eq!(code, 200, "{backend}: {d}");
    assert_eq!(
        (&d["llm_api_key_set"], &d["search_api_key"]),
        (&json!(false), &Value::Null)
    );
    assert_eq!(d["conversation_settings"]["max_iterations"], 500);
    // Only owners and admins change them; nobody outside the organization reads them.
    let full = json!({
        "agent_settings_diff": {
            "llm": {"model": "openai/org-model", "base_url": ORG_URL, "api_key": ORG_KEY},
            "mcp_config": {"sse_servers": [{"url": "http://127.0.0.1:6/sse", "api_key": ORG_MCP_KEY}]},
        },
        "conversation_settings_diff": {"confirmation_mode": true, "security_analyzer": "none",
            "max_iterations": 42},
        "search_api_key": ORG_SEARCH_KEY,
    });
    let (code, e) = patch(r, &r.member, &r.org, full.clone());
    assert_eq!(code, 403, "{backend}: {e}");
    let (code, e) = patch(r, &r.member, &r.org, json!({"nonsense": 1}));
    assert_eq!(code, 403, "{backend}: permission before body: {e}");
    assert_eq!(patch(r, &r.owner, &r.other_org, full.clone()).0, 404);
    assert_eq!(r.get(&path, &r.outsider).0, 404);
    let (code, e) = patch(r, &r.owner, &r.org, json!({"language": "en"}));
    assert_eq!(
        (code, &e["detail"][0]["loc"]),
        (422, &json!(["body", "language"])),
        "{e}"
    );
    let (code, e) = patch(r, &r.owner, &r.org, json!({"llm_api_key": 5}));
    assert_eq!(code, 422, "{e}");
    let (code, d) = patch(r, &r.owner, &r.org, full);
    assert_eq!(code, 200, "{backend}: {d}");
    assert_eq!(
        (
            &d["agent_settings"]["llm"]["model"],
            &d["agent_settings"]["llm"]["api_key"],
            &d["llm_api_key_set"],
            &d["search_api_key"],
        ),
        (
            &json!("openai/org-model"),
            &Value::Null,
            &json!(true),
            &json!("**********")
        ),
        "{d}"
    );
    assert_eq!(
        d["agent_settings"]["mcp_config"]["sse_servers"][0]["api_key"],
        Value::Null,
        "masked: {d}"
    );
    let (_, seen) = r.get(&path, &r.member);
    assert_eq!(seen, d, "a member reads what the owner wrote");
    let (code, me) = r.get(&format!("/api/organizations/{}/me", r.org), &r.member);
    assert_eq!(
        (code, &me["llm_api_key"]),
        (200, &Value::Null),
        "the member stored no key: {me}"
    );

    starts_take_the_org_defaults(r, backend);
}

/// The precedence at a start, as the agent server received it, the organization's full
/// defaults set.
fn starts_take_the_org_defaults(r: &Rig, backend: Backend) {
    // A member with nothing of their own: the organization's LLM (its key and endpoint behind
    // the LLM pass-through, issue 38) and MCP servers.
    let (sandbox, session, url) = r.sandbox(&r.member);
    let c = start(r, &r.member, &sandbox, &url, json!({}));
    assert_relayed(r, backend, &c, &org_llm("openai/org-model"));
    assert_eq!(
        c["agent"]["mcp_config"]["sse_servers"][0]["api_key"],
        ORG_MCP_KEY
    );
    // The organization's conversation settings (issue 36): confirmation without the analyzer
    // asks for every action; its max_iterations.
    assert_eq!(
        (
            &c["confirmation_policy"],
            c.get("security_analyzer"),
            &c["max_iterations"]
        ),
        (&json!({"kind": "AlwaysConfirm"}), None, &json!(42)),
        "{backend}: {c}"
    );
    let c = start(
        r,
        &r.member,
        &sandbox,
        &url,
        json!({"llm_model": "openai/req"}),
    );
    assert_relayed(r, backend, &c, &org_llm("openai/req"));
    // The SDK's read of the member's own LLM never holds the organization's.
    let (code, text) = r.with_session(
        "/api/v1/users/me?expose_secrets=true",
        Some(&session),
        Some(&r.member),
    );
    assert_eq!(code, 200, "{backend}: {text}");
    let me: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (&me["llm_model"], &me["llm_api_key"], &me["llm_base_url"]),
        (&Value::Null, &Value::Null, &Value::Null),
        "{text}"
    );
    for v in [ORG_KEY, ORG_MCP_KEY, ORG_SEARCH_KEY] {
        assert!(!text.contains(v), "{backend}: {text}");
    }

    // The member names a model only: theirs, with the organization's endpoint and key.
    let own = |diff: Value| {
        let (code, e) = r.post(
            "/api/v1/settings",
            &r.member,
            json!({"agent_settings_diff": diff}),
        );
        assert_eq!(code, 200, "{e}");
    };
    own(json!({"llm": {"model": "openai/member-model"}}));
    let c = start(r, &r.member, &sandbox, &url, json!({}));
    assert_relayed(r, backend, &c, &org_llm("openai/member-model"));
    // Their own base URL without a key: no key goes there, the organization's model.
    own(json!({"llm": {"model": null, "base_url": "http://127.0.0.1:5/v1"}}));
    let c = start(r, &r.member, &sandbox, &url, json!({}));
    assert_eq!(
        llm(&c),
        (
            json!("openai/org-model"),
            json!("http://127.0.0.1:5/v1"),
            Value::Null
        ),
        "{backend}"
    );
    // Their own MCP servers win over the organization's.
    own(json!({"mcp_config": {"stdio_servers": []}}));
    let c = start(r, &r.member, &sandbox, &url, json!({}));
    assert_eq!(
        c["agent"]["mcp_config"],
        json!({"stdio_servers": []}),
        "{c}"
    );
    // Their own conversation settings win, key by key, over the organization's.
    let (code, e) = r.post(
        "/api/v1/settings",
        &r.member,
        json!({"conversation_settings_diff": {"security_analyzer": "llm"}}),
    );
    assert_eq!(code, 200, "{e}");
    let c = start(r, &r.member, &sandbox, &url, json!({}));
    assert_eq!(
        (
            &c["confirmation_policy"],
            &c["security_analyzer"],
            &c["max_iterations"]
        ),
        (
            &json!({"kind": "ConfirmRisky"}),
            &json!({"kind": "LLMSecurityAnalyzer"}),
            &json!(42)
        ),
        "{backend}: {c}"
    );
    own_key_then_org_model_only(r, backend, (&sandbox, &url));
}

/// The member's own key and endpoint; then nothing of theirs and an organization naming only a
/// model; then the organization's key again.
fn own_key_then_org_model_only(r: &Rig, backend: Backend, (sandbox, url): (&str, &str)) {
    let own = |diff: Value| {
        let (code, e) = r.post(
            "/api/v1/settings",
            &r.member,
            json!({"agent_settings_diff": diff}),
        );
        assert_eq!(code, 200, "{e}");
    };
    // Their own key and endpoint: theirs entirely.
    own(
        json!({"llm": {"model": "openai/member-model", "base_url": "http://127.0.0.1:4/v1", "api_key": LLM_KEY}}),
    );
    let c = start(r, &r.member, sandbox, url, json!({}));
    assert_eq!(
        llm(&c),
        (
            json!("openai/member-model"),
            json!("http://127.0.0.1:4/v1"),
            json!(LLM_KEY)
        )
    );
    // Nothing of their own again, and an organization naming only a model: the operator's
    // endpoint and key with the organization's model.
    own(json!({"llm": null, "mcp_config": null}));
    let (code, d) = patch(
        r,
        &r.owner,
        &r.org,
        json!({"agent_settings_diff": {"llm": {"base_url": null}}, "llm_api_key": ""}),
    );
    assert_eq!((code, &d["llm_api_key_set"]), (200, &json!(false)), "{d}");
    let c = start(r, &r.member, sandbox, url, json!({}));
    let operator = Chosen {
        model: "openai/org-model",
        upstream: "http://127.0.0.1:9/v1",
        owner: "operator",
        key: OPERATOR_KEY,
    };
    assert_relayed(r, backend, &c, &operator);
    // The organization's key again, for the checks that follow (sealed at rest, rotation).
    let (code, e) = patch(
        r,
        &r.owner,
        &r.org,
        json!({"agent_settings_diff": {"llm": {"base_url": ORG_URL}}, "llm_api_key": ORG_KEY}),
    );
    assert_eq!(code, 200, "{e}: {}", detail(&e));
    // An organization LLM profile and an LLM provider connection with keys (issue 25), for
    // the same checks; neither answer holds its key.
    let (code, p) = r.post(
        &format!("/api/organizations/{}/profiles/team", r.org),
        &r.owner,
        json!({"llm": {"model": "openai/team-model", "api_key": ORG_PROFILE_KEY}}),
    );
    assert_eq!(code, 201, "{backend}: {p}");
    let (code, c) = r.post(
        &format!("/api/organizations/{}/provider-connections", r.org),
        &r.owner,
        json!({"display_name": "Team", "provider": "openai", "api_key": CONNECTION_KEY}),
    );
    assert_eq!(
        (code, &c["api_key_set"]),
        (201, &json!(true)),
        "{backend}: {c}"
    );
}

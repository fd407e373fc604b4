//! The settings and profiles routes and every rule of their bodies.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::user_settings::rig::{LLM_KEY, MCP_KEY, PROFILE_KEY, Rig, SEARCH_KEY};

pub fn settings_profiles_and_validation(r: &Rig, backend: Backend) {
    // Defaults before anything is stored; the LLM a start would use is the operator's (issue
    // 31), its key never shown.
    let (code, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(code, 200, "{backend}: {s}");
    assert_eq!(
        (
            &s["llm_api_key_set"],
            &s["llm_source"],
            &s["agent_settings"]["llm"]["model"]
        ),
        (
            &json!(true),
            &json!("operator"),
            &json!("openai/operator-model")
        ),
        "{backend}"
    );
    assert_eq!(s["conversation_settings"]["max_iterations"], 500);
    assert_eq!(s["sandbox_grouping_strategy"], "NO_GROUPING");
    let (code, body) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({
            "agent_settings_diff": {"llm": {"model": "openai/user-model", "api_key": LLM_KEY,
                                             "base_url": "http://127.0.0.1:8/v1"},
                                    "mcp_config": {"sse_servers": [{"url": "http://127.0.0.1:7/sse", "api_key": MCP_KEY}]}},
            "conversation_settings_diff": {"confirmation_mode": true},
            "language": "fr", "search_api_key": SEARCH_KEY, "llm_api_key_set": false,
        }),
    );
    assert_eq!(
        (code, &body),
        (200, &json!({"message": "Settings stored"})),
        "{backend}"
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        s["agent_settings"]["llm"]["model"], "openai/user-model",
        "{s}"
    );
    assert_eq!(s["agent_settings"]["llm"]["api_key"], Value::Null);
    assert_eq!(
        s["agent_settings"]["mcp_config"]["sse_servers"][0]["api_key"],
        Value::Null
    );
    assert_eq!(
        s["agent_settings"]["mcp_config"]["sse_servers"][0]["url"],
        "http://127.0.0.1:7/sse"
    );
    assert_eq!(
        (&s["llm_api_key_set"], &s["search_api_key_set"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(s["conversation_settings"]["confirmation_mode"], true);
    assert_eq!(s["language"], "fr");
    // A diff: null unsets one key, the rest stays.
    r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"agent_settings_diff": {"llm": {"base_url": null}}, "language": null}),
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(s["agent_settings"]["llm"]["base_url"], Value::Null, "{s}");
    assert_eq!(s["agent_settings"]["llm"]["model"], "openai/user-model");
    assert_eq!(
        (&s["llm_api_key_set"], &s["language"]),
        (&json!(true), &Value::Null)
    );
    r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"agent_settings_diff": {"llm": {"base_url": "http://127.0.0.1:8/v1"}}}),
    );
    // Validation: nothing stored.
    for (body, at) in [
        (
            json!({"agent_settings": {}}),
            json!(["body", "agent_settings"]),
        ),
        (
            json!({"agent_settings_diff": {"llm": {"base_url": "file:///x"}}}),
            json!(["body", "agent_settings_diff", "llm", "base_url"]),
        ),
        (
            json!({"conversation_settings_diff": {"max_iterations": 0}}),
            json!(["body", "conversation_settings_diff", "max_iterations"]),
        ),
        (
            json!({"sandbox_grouping_strategy": "SOMETIMES"}),
            json!(["body", "sandbox_grouping_strategy"]),
        ),
        (json!([1]), json!(["body"])),
    ] {
        let (code, e) = r.post("/api/v1/settings", &r.owner, body.clone());
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &at),
            "{backend}: {body}: {e}"
        );
    }
    let (_, after) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        after["agent_settings"],
        s["agent_settings"].clone().tap_base_url(),
        "{backend}"
    );
    for path in [
        "/api/v1/settings/agent-schema",
        "/api/v1/settings/conversation-schema",
    ] {
        let (code, schema) = r.get(path, &r.member);
        assert_eq!(
            (code, schema["type"].as_str()),
            (200, Some("object")),
            "{path}"
        );
    }
    // Another member sees their own (none: the operator's LLM, issue 31), not the owner's.
    let (_, theirs) = r.get("/api/v1/settings", &r.member);
    assert_eq!(
        (
            &theirs["llm_source"],
            &theirs["agent_settings"]["llm"]["model"]
        ),
        (&json!("operator"), &json!("openai/operator-model")),
        "{backend}"
    );

    // Profiles.
    let (code, p) = r.post(
        "/api/v1/settings/profiles/fast",
        &r.owner,
        json!({"llm": {"model": "openai/profile-model", "api_key": PROFILE_KEY}}),
    );
    assert_eq!((code, &p["name"]), (201, &json!("fast")), "{backend}: {p}");
    let (code, _) = r.call(
        "POST",
        "/api/v1/settings/profiles/snapshot",
        Some(&r.owner),
        None,
    );
    assert_eq!(
        code, 201,
        "{backend}: a save without a body snapshots the settings"
    );
    let (_, list) = r.get("/api/v1/settings/profiles", &r.owner);
    assert_eq!(list["profiles"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(
        list["profiles"][0],
        json!({"name": "fast", "model": "openai/profile-model", "base_url": null,
               "provider_connection_id": null, "provider_connection_broken": false, "api_key_set": true})
    );
    assert_eq!(list["profiles"][1]["model"], "openai/user-model");
    let (code, one) = r.get("/api/v1/settings/profiles/fast", &r.owner);
    assert_eq!(
        (code, &one["config"]["api_key"], &one["api_key_set"]),
        (200, &Value::Null, &json!(true))
    );
    let (code, a) = r.post(
        "/api/v1/settings/profiles/fast/activate",
        &r.owner,
        json!({}),
    );
    assert_eq!(
        (code, &a["model"]),
        (200, &json!("openai/profile-model")),
        "{a}"
    );
    let (_, s) = r.get("/api/v1/settings", &r.owner);
    assert_eq!(
        (
            &s["llm_profiles"]["active"],
            &s["agent_settings"]["llm"]["model"]
        ),
        (&json!("fast"), &json!("openai/profile-model"))
    );
    let (code, e) = r.post(
        "/api/v1/settings/profiles/fast/rename",
        &r.owner,
        json!({"new_name": "snapshot"}),
    );
    assert_eq!(code, 409, "{backend}: {e}");
    let (code, _) = r.post(
        "/api/v1/settings/profiles/fast/rename",
        &r.owner,
        json!({"new_name": "quick"}),
    );
    assert_eq!(code, 200);
    let (_, list) = r.get("/api/v1/settings/profiles", &r.owner);
    assert_eq!(list["active_profile"], "quick", "{list}");
    for (method, path, status) in [
        ("GET", "/api/v1/settings/profiles/fast", 404),
        ("POST", "/api/v1/settings/profiles/fast/activate", 404),
        ("GET", "/api/v1/settings/profiles/bad%20name", 422),
        ("DELETE", "/api/v1/settings/profiles/nothing", 200),
    ] {
        let (code, e) = r.call(method, path, Some(&r.owner), None);
        assert_eq!(code, status, "{backend}: {method} {path}: {e}");
    }
    let (code, e) = r.post(
        "/api/v1/settings/profiles/quick/rename",
        &r.owner,
        json!({"new_name": "a/b"}),
    );
    assert_eq!(
        (code, &e["detail"][0]["loc"]),
        (422, &json!(["body", "new_name"]))
    );
    // Another member's profiles are not the owner's.
    let (code, _) = r.get("/api/v1/settings/profiles/quick", &r.member);
    assert_eq!(code, 404);
}

/// Sorts of `Value` helpers for the assertions above.
pub trait Tap {
    fn tap_base_url(self) -> Value;
}

impl Tap for Value {
    /// The value with `llm.base_url` as the last accepted change set it.
    fn tap_base_url(mut self) -> Value {
        self["llm"]["base_url"] = json!("http://127.0.0.1:8/v1");
        self
    }
}

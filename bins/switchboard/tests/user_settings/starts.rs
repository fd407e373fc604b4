//! What a conversation start takes from its user (the LLM by precedence, MCP, confirmation,
//! the secrets), as the agent server received it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{client, direct_agent_url};
use crate::user_settings::relayed::{Chosen, assert_relayed};
use crate::user_settings::rig::{
    GITHUB_TOKEN, LLM_KEY, MCP_KEY, OPERATOR_KEY, PROFILE_KEY, Rig, SECRET_VALUE,
};

/// Starts a conversation in `sandbox` and waits for READY; the create body the stand-in got.
pub fn start(r: &Rig, key: &str, sandbox: &str, url: &str, extra: Value) -> Value {
    let mut body = json!({"sandbox_id": sandbox,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "run": false}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (code, task) = r.post("/api/v1/app-conversations", key, body);
    assert_eq!(code, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, t) = r.get(
            &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
            key,
        );
        match t[0]["status"].as_str() {
            Some("READY") => break,
            Some("ERROR") => panic!("the start failed: {t}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "stuck: {t}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let creates: Value = client()
        .get(format!("{}/standin/creates", direct_agent_url(url)))
        .send()
        .unwrap()
        .json()
        .unwrap();
    creates.as_array().unwrap().last().unwrap().clone()
}

pub fn starts_take_the_users_settings(r: &Rig, backend: Backend, (mine, url): (&str, &str)) {
    // The active profile: its model and key; the user's secrets; MCP; confirmation.
    let c = start(
        r,
        &r.owner,
        mine,
        url,
        json!({"secrets": {"REQUEST_ONLY": "from-request"}}),
    );
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (&llm["model"], &llm["api_key"]),
        (&json!("openai/profile-model"), &json!(PROFILE_KEY)),
        "{backend}: {c}"
    );
    assert_eq!(
        c["secrets"]["API_TOKEN"],
        json!({"kind": "StaticSecret", "value": SECRET_VALUE}),
        "{c}"
    );
    assert_eq!(c["secrets"]["github_token"]["value"], GITHUB_TOKEN);
    assert_eq!(c["secrets"]["REQUEST_ONLY"]["value"], "from-request");
    assert_eq!(
        c["agent"]["mcp_config"]["sse_servers"][0]["api_key"],
        MCP_KEY
    );
    // Confirmation on with OpenHands' default analyzer (`llm`): the risky actions only, rated
    // by the LLM analyzer (issue 36).
    assert_eq!(c["confirmation_policy"], json!({"kind": "ConfirmRisky"}));
    assert_eq!(
        c["security_analyzer"],
        json!({"kind": "LLMSecurityAnalyzer"})
    );
    // The request's model replaces the model, not the key.
    let c = start(
        r,
        &r.owner,
        mine,
        url,
        json!({"llm_model": "openai/request-model"}),
    );
    assert_eq!(
        (&c["agent"]["llm"]["model"], &c["agent"]["llm"]["api_key"]),
        (&json!("openai/request-model"), &json!(PROFILE_KEY))
    );
    // The member's disabled skills and marketplaces, then the organization's marketplaces under
    // names the member's do not take, reach the agent's context (issue 36).
    let (code, e) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"disabled_skills": ["noisy"], "registered_marketplaces": [
            {"name": "mine", "source": "github:me/plugins", "auto_load": true},
            {"name": "shared", "source": "github:me/shared", "auto_load": false}]}),
    );
    assert_eq!(code, 200, "{e}");
    let (code, e) = r.post(
        "/api/organizations/app",
        &r.owner,
        json!({"registered_marketplaces": [
            {"name": "shared", "source": "github:team/shared", "auto_load": true},
            {"name": "team", "source": "github:team/plugins", "ref": "v2", "auto_load": true}]}),
    );
    assert_eq!(code, 200, "{e}");
    let c = start(r, &r.owner, mine, url, json!({}));
    let context = &c["agent"]["agent_context"];
    assert_eq!(
        context["disabled_skills"],
        json!(["noisy"]),
        "{backend}: {c}"
    );
    assert_eq!(
        context["registered_marketplaces"],
        json!([
            {"name": "mine", "source": "github:me/plugins", "ref": null, "repo_path": null, "auto_load": true},
            {"name": "shared", "source": "github:me/shared", "ref": null, "repo_path": null, "auto_load": false},
            {"name": "team", "source": "github:team/plugins", "ref": "v2", "repo_path": null, "auto_load": true},
        ]),
        "{backend}: {c}"
    );
    let (code, e) = r.post(
        "/api/v1/settings",
        &r.owner,
        json!({"disabled_skills": null, "registered_marketplaces": null}),
    );
    assert_eq!(code, 200, "{e}");
    let (code, e) = r.post(
        "/api/organizations/app",
        &r.owner,
        json!({"registered_marketplaces": []}),
    );
    assert_eq!(code, 200, "{e}");
    // No active profile: the settings' LLM.
    r.post("/api/v1/settings", &r.owner, json!({"agent_settings_diff": {"llm": {"model": "openai/user-model", "api_key": LLM_KEY, "base_url": "http://127.0.0.1:8/v1"}}}));
    let c = start(r, &r.owner, mine, url, json!({}));
    let llm = &c["agent"]["llm"];
    assert_eq!(
        (&llm["model"], &llm["api_key"], &llm["base_url"]),
        (
            &json!("openai/user-model"),
            &json!(LLM_KEY),
            &json!("http://127.0.0.1:8/v1")
        ),
        "{backend}: {c}"
    );
    // A member with nothing set: the operator's LLM, its key through the pass-through (issue
    // 38); none of the owner's secrets.
    let (theirs, _, their_url) = r.sandbox(&r.member);
    let c = start(r, &r.member, &theirs, &their_url, json!({}));
    let operator = Chosen {
        model: "openai/operator-model",
        upstream: "http://127.0.0.1:9/v1",
        owner: "operator",
        key: OPERATOR_KEY,
    };
    assert_relayed(r, backend, &c, &operator);
    assert!(
        c.get("secrets").is_none() && c.get("confirmation_policy").is_none(),
        "{backend}: {c}"
    );
    assert_eq!(
        c["security_analyzer"],
        json!({"kind": "LLMSecurityAnalyzer"}),
        "OpenHands' default analyzer: {c}"
    );
    assert!(c["agent"].get("mcp_config").is_none());
}

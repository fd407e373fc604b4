//! `GET /api/v1/settings` (OpenHands' `GETSettingsModel`) and the profile views: no key ever,
//! only whether one is set (`llm_api_key_set`, `search_api_key_set`, `api_key_set`,
//! `provider_tokens_set`).

use serde_json::{Map, Value, json};

use super::UserSettingsRecord;

/// OpenHands' `ConversationSettings` defaults.
pub fn conversation_defaults() -> Map<String, Value> {
    json!({"schema_version": 1, "max_iterations": 500, "confirmation_mode": false,
           "security_analyzer": "llm"})
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// The app preferences' defaults (OpenHands' `Settings`).
pub fn preference_defaults() -> Map<String, Value> {
    json!({
        "language": null, "user_version": null, "remote_runtime_resource_factor": null,
        "enable_sound_notifications": false, "enable_proactive_conversation_starters": true,
        "user_consents_to_analytics": null, "sandbox_base_container_image": null,
        "sandbox_runtime_container_image": null, "disabled_skills": null,
        "max_budget_per_task": null, "git_user_name": null, "git_user_email": null,
        "git_full_clone": false, "v1_enabled": true, "sandbox_grouping_strategy": "NO_GROUPING",
        "default_sandbox_spec_id": null, "registered_marketplaces": [],
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// What the view needs besides the record.
pub struct ViewParts<'a> {
    /// The user's e-mail.
    pub email: &'a str,
    /// The MCP configuration opened, with its credentials masked
    /// ([`crate::identity::mcp_redaction::mask_mcp`]).
    pub mcp_config: Option<Value>,
    /// Provider → host (or `null`) of each stored git provider token.
    pub provider_tokens_set: Map<String, Value>,
    /// The organization's marketplaces (each with `scope: "org"`).
    pub inherited_marketplaces: Vec<Value>,
}

/// The effective app preferences: the defaults overlaid with the stored ones.
pub fn preferences(rec: &UserSettingsRecord) -> Map<String, Value> {
    let mut p = preference_defaults();
    for (k, v) in &rec.preferences {
        p.insert(k.clone(), v.clone());
    }
    p
}

/// The effective conversation settings: the defaults overlaid with the stored ones.
pub fn conversation_settings(rec: &UserSettingsRecord) -> Map<String, Value> {
    let mut c = conversation_defaults();
    for (k, v) in &rec.conversation_settings {
        c.insert(k.clone(), v.clone());
    }
    c
}

/// `GETSettingsModel`: preferences (defaults overlaid), `agent_settings` with
/// `llm.api_key: null` and the masked MCP configuration, `conversation_settings`, the profiles
/// without keys, and the `*_set` flags.
pub fn settings_view(rec: &UserSettingsRecord, parts: ViewParts<'_>) -> Value {
    let mut out = preference_defaults();
    for (k, v) in &rec.preferences {
        out.insert(k.clone(), v.clone());
    }
    let mut agent = rec.agent_settings.clone();
    let mut llm = agent
        .remove("llm")
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    llm.entry("model").or_insert(Value::Null);
    llm.entry("base_url").or_insert(Value::Null);
    llm.insert("api_key".into(), Value::Null);
    agent.insert("llm".into(), Value::Object(llm));
    if let Some(mcp) = parts.mcp_config {
        agent.insert("mcp_config".into(), mcp);
    }
    out.insert("agent_settings".into(), Value::Object(agent));
    out.insert(
        "conversation_settings".into(),
        Value::Object(conversation_settings(rec)),
    );
    out.insert("llm_profiles".into(), profiles_object(rec));
    out.insert("active_agent_profile_id".into(), Value::Null);
    out.insert("active_agent_profile_revision".into(), Value::Null);
    out.insert(
        "inherited_marketplaces".into(),
        Value::Array(parts.inherited_marketplaces),
    );
    out.insert("email".into(), json!(parts.email));
    out.insert("email_verified".into(), Value::Null);
    out.insert("search_api_key".into(), Value::Null);
    out.insert("sandbox_api_key".into(), Value::Null);
    out.insert(
        "provider_tokens_set".into(),
        Value::Object(parts.provider_tokens_set),
    );
    out.insert(
        "llm_api_key_set".into(),
        json!(rec.llm_api_key_sealed.is_some()),
    );
    out.insert(
        "search_api_key_set".into(),
        json!(rec.search_api_key_sealed.is_some()),
    );
    Value::Object(out)
}

/// OpenHands' `LLMProfiles`: `{"profiles": {name: config with api_key null}, "active"}`.
pub fn profiles_object(rec: &UserSettingsRecord) -> Value {
    let mut profiles = Map::new();
    for p in &rec.profiles {
        let mut c = p.config.clone();
        c.insert("api_key".into(), Value::Null);
        profiles.insert(p.name.clone(), Value::Object(c));
    }
    json!({"profiles": profiles, "active": rec.active_profile})
}

/// `GET /api/v1/settings/profiles/{name}`'s answer (OpenHands' `ProfileDetailResponse`): the
/// profile's name, its LLM configuration (`api_key` null, never the key), and whether a key
/// is stored (its own, or its provider connection's).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct ProfileDetailResponse {
    /// The profile's name.
    pub name: String,
    /// Its LLM configuration (`model`, `base_url`, …; `api_key` null).
    #[schema(value_type = Object)]
    pub config: Map<String, Value>,
    /// Whether a key is stored.
    pub api_key_set: bool,
}

/// Profile `p`'s detail, its key judged with the organization's provider `connections`
/// ([`crate::org_profiles::profile_item`]).
pub fn profile_detail(
    p: &super::StoredProfile,
    connections: &[crate::org_profiles::StoredConnection],
) -> ProfileDetailResponse {
    ProfileDetailResponse {
        name: p.name.clone(),
        config: crate::org_profiles::answered_llm(&p.config),
        api_key_set: crate::org_profiles::profile_item(p, connections).api_key_set,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::mcp_redaction::mask_mcp;

    #[test]
    fn the_view_shows_no_key() {
        let rec = UserSettingsRecord {
            agent_settings: json!({"llm": {"model": "m"}}).as_object().cloned().unwrap(),
            llm_api_key_sealed: Some("sealed".into()),
            ..UserSettingsRecord::default()
        };
        let v = settings_view(
            &rec,
            ViewParts {
                email: "a@b",
                mcp_config: Some(mask_mcp(
                    &json!({"sse_servers": [{"url": "u", "api_key": "k"}],
                    "stdio_servers": [{"name": "n", "env": {"TOKEN": "t"}}]}),
                )),
                provider_tokens_set: Map::new(),
                inherited_marketplaces: vec![],
            },
        );
        assert_eq!(v["llm_api_key_set"], true);
        assert_eq!(v["agent_settings"]["llm"]["api_key"], Value::Null);
        assert_eq!(v["agent_settings"]["llm"]["model"], "m");
        assert_eq!(v["conversation_settings"]["max_iterations"], 500);
        let text = v.to_string();
        assert!(!text.contains("sealed") && !text.contains("\"k\"") && !text.contains("\"t\""));
        assert_eq!(
            v["agent_settings"]["mcp_config"]["stdio_servers"][0]["env"]["TOKEN"],
            Value::Null
        );
    }
}

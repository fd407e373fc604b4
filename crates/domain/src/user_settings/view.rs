//! `GET /api/v1/settings` (OpenHands' `GETSettingsModel`) and the profile views: no key ever,
//! only whether one is set (`llm_api_key_set`, `search_api_key_set`, `api_key_set`,
//! `provider_tokens_set`).

use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::UserSettingsRecord;

/// OpenHands' `ConversationSettings` defaults.
pub fn conversation_defaults() -> Map<String, Value> {
    json!({"schema_version": 1, "max_iterations": 500, "confirmation_mode": false,
           "security_analyzer": "llm"})
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// The app preferences as answered (OpenHands' `Settings`' own fields): the defaults below,
/// overlaid with what the member stored (`null` where they unset one).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize, ToSchema)]
pub struct AppPreferences {
    /// The UI language, or `null`.
    pub language: Option<String>,
    /// The user's version of the terms, or `null`.
    pub user_version: Option<i64>,
    /// A remote runtime's resource factor, or `null`.
    pub remote_runtime_resource_factor: Option<i64>,
    /// Sound on notifications (default false).
    pub enable_sound_notifications: Option<bool>,
    /// Proactive conversation starters (default true).
    pub enable_proactive_conversation_starters: Option<bool>,
    /// Consent to analytics, or `null` (not asked).
    pub user_consents_to_analytics: Option<bool>,
    /// The sandbox base image, or `null`.
    pub sandbox_base_container_image: Option<String>,
    /// The sandbox runtime image, or `null`.
    pub sandbox_runtime_container_image: Option<String>,
    /// Skills turned off, or `null`.
    pub disabled_skills: Option<Vec<String>>,
    /// The budget of a conversation in USD, or `null` (none).
    #[schema(value_type = Option<f64>)]
    pub max_budget_per_task: Option<serde_json::Number>,
    /// The git author name, or `null`.
    pub git_user_name: Option<String>,
    /// The git author e-mail, or `null`.
    pub git_user_email: Option<String>,
    /// Whether a start clones the whole history (default false).
    pub git_full_clone: Option<bool>,
    /// Always true: the V1 app server.
    pub v1_enabled: Option<bool>,
    /// How conversations share sandboxes (default `NO_GROUPING`).
    pub sandbox_grouping_strategy: Option<String>,
    /// The sandbox spec a start uses when it names none, or `null`.
    pub default_sandbox_spec_id: Option<String>,
    /// The member's skill marketplaces (default none).
    #[schema(value_type = Option<Vec<Object>>)]
    pub registered_marketplaces: Option<Vec<Value>>,
}

impl Default for AppPreferences {
    /// OpenHands' defaults.
    fn default() -> Self {
        AppPreferences {
            language: None,
            user_version: None,
            remote_runtime_resource_factor: None,
            enable_sound_notifications: Some(false),
            enable_proactive_conversation_starters: Some(true),
            user_consents_to_analytics: None,
            sandbox_base_container_image: None,
            sandbox_runtime_container_image: None,
            disabled_skills: None,
            max_budget_per_task: None,
            git_user_name: None,
            git_user_email: None,
            git_full_clone: Some(false),
            v1_enabled: Some(true),
            sandbox_grouping_strategy: Some("NO_GROUPING".into()),
            default_sandbox_spec_id: None,
            registered_marketplaces: Some(Vec::new()),
        }
    }
}

/// The app preferences' defaults (OpenHands' `Settings`; [`AppPreferences::default`]).
pub fn preference_defaults() -> Map<String, Value> {
    match serde_json::to_value(AppPreferences::default()) {
        Ok(Value::Object(m)) => m,
        _ => unreachable!("a struct of JSON values serializes as an object"),
    }
}

/// `GET /api/v1/settings`' answer (OpenHands' `GETSettingsModel`): the app preferences, the
/// agent and conversation settings, the LLM profiles, and whether each key is set; never a key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, ToSchema)]
#[schema(as = GETSettingsModel)]
pub struct SettingsResponse {
    /// The app preferences.
    #[serde(flatten)]
    pub preferences: AppPreferences,
    /// The agent settings: `llm` with `api_key` always `null`, the MCP configuration masked.
    #[schema(schema_with = super::diffs::agent_settings_answer_schema)]
    pub agent_settings: Map<String, Value>,
    /// The conversation settings (the defaults overlaid).
    #[schema(schema_with = conversation_settings_schema)]
    pub conversation_settings: Map<String, Value>,
    /// OpenHands' `LLMProfiles`: `{"profiles": {name: config with api_key null}, "active"}`.
    #[schema(schema_with = llm_profiles_schema)]
    pub llm_profiles: Value,
    /// Always `null` here (agent profiles are listed by `/api/agent-profiles`).
    pub active_agent_profile_id: Option<String>,
    /// Always `null` here.
    pub active_agent_profile_revision: Option<i64>,
    /// The organization's marketplaces (each with `scope: "org"`).
    #[schema(value_type = Vec<Object>)]
    pub inherited_marketplaces: Vec<Value>,
    /// The member's e-mail.
    pub email: String,
    /// Always `null`.
    pub email_verified: Option<bool>,
    /// Always `null` (never the key; `search_api_key_set` says whether one is stored).
    pub search_api_key: Option<String>,
    /// Always `null`.
    pub sandbox_api_key: Option<String>,
    /// Provider → host (or `null`) of each stored git provider token.
    #[schema(value_type = std::collections::HashMap<String, Option<String>>)]
    pub provider_tokens_set: Map<String, Value>,
    /// Whether the LLM a start would use has a key.
    pub llm_api_key_set: bool,
    /// Whether a search key is stored.
    pub search_api_key_set: bool,
    /// Whose LLM is shown: `user`, `organization`, `operator`, or `null` (none set).
    pub llm_source: Option<String>,
}

fn conversation_settings_schema() -> utoipa::openapi::schema::Object {
    crate::typed_body::fields::free_form(
        "OpenHands' `ConversationSettings`: `max_iterations`, `confirmation_mode`, `security_analyzer`, … (the defaults overlaid with what is stored).",
    )
    .title(Some("AnsweredConversationSettings"))
    .build()
}

fn llm_profiles_schema() -> utoipa::openapi::schema::Object {
    use crate::typed_body::fields;
    fields::free_form("OpenHands' `LLMProfiles`: each profile's LLM by name (`api_key` null) and the active one's name.")
        .title(Some("LLMProfiles"))
        .required("profiles")
        .required("active")
        .property("profiles", fields::free_form("Name → the profile's LLM configuration (`api_key` null)."))
        .property("active", fields::nullable_text())
        .build()
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

/// [`preferences`] as answered: read whole; when a stored value no longer reads as its field,
/// each stored value is overlaid alone and the one that does not read is answered as the
/// field's default (logged), so a GET never fails on it.
fn answered_preferences(rec: &UserSettingsRecord) -> AppPreferences {
    if let Ok(p) = serde_json::from_value(Value::Object(preferences(rec))) {
        return p;
    }
    let mut answered = AppPreferences::default();
    for (k, v) in &rec.preferences {
        let mut one = match serde_json::to_value(&answered) {
            Ok(Value::Object(m)) => m,
            _ => unreachable!("a struct of JSON values serializes as an object"),
        };
        one.insert(k.clone(), v.clone());
        match serde_json::from_value(Value::Object(one)) {
            Ok(p) => answered = p,
            Err(e) => {
                tracing::warn!(preference = %k, error = %e, "a stored preference does not read; its default is answered")
            }
        }
    }
    answered
}

/// The effective conversation settings: the defaults overlaid with the stored ones.
pub fn conversation_settings(rec: &UserSettingsRecord) -> Map<String, Value> {
    let mut c = conversation_defaults();
    for (k, v) in &rec.conversation_settings {
        c.insert(k.clone(), v.clone());
    }
    c
}

/// `GETSettingsModel` ([`SettingsResponse`]): the preferences (defaults overlaid),
/// `agent_settings` with `llm.api_key: null` and the masked MCP configuration,
/// `conversation_settings`, the profiles without keys, and the `*_set` flags; `llm_source`
/// `null` until [`crate::services::EffectiveLlm::show_in`] says whose LLM is shown.
pub fn settings_view(rec: &UserSettingsRecord, parts: ViewParts<'_>) -> SettingsResponse {
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
    SettingsResponse {
        preferences: answered_preferences(rec),
        agent_settings: agent,
        conversation_settings: conversation_settings(rec),
        llm_profiles: profiles_object(rec),
        active_agent_profile_id: None,
        active_agent_profile_revision: None,
        inherited_marketplaces: parts.inherited_marketplaces,
        email: parts.email.to_owned(),
        email_verified: None,
        search_api_key: None,
        sandbox_api_key: None,
        provider_tokens_set: parts.provider_tokens_set,
        llm_api_key_set: rec.llm_api_key_sealed.is_some(),
        search_api_key_set: rec.search_api_key_sealed.is_some(),
        llm_source: None,
    }
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
        let v = serde_json::to_value(settings_view(
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
        ))
        .unwrap();
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

    /// The preferences answered are the defaults overlaid with what is stored; a stored
    /// value that no longer reads as its field is answered as the default, the others kept.
    #[test]
    fn preferences_are_the_defaults_overlaid() {
        let parts = || ViewParts {
            email: "a@b",
            mcp_config: None,
            provider_tokens_set: Map::new(),
            inherited_marketplaces: vec![],
        };
        let v =
            serde_json::to_value(settings_view(&UserSettingsRecord::default(), parts())).unwrap();
        for (k, want) in preference_defaults() {
            assert_eq!(v[&k], want, "{k}");
        }
        assert_eq!(v["sandbox_grouping_strategy"], "NO_GROUPING");
        let rec = UserSettingsRecord {
            preferences: json!({"language": "fr", "git_full_clone": "not a flag",
                "max_budget_per_task": 5, "enable_sound_notifications": null})
            .as_object()
            .cloned()
            .unwrap(),
            ..UserSettingsRecord::default()
        };
        let v = serde_json::to_value(settings_view(&rec, parts())).unwrap();
        assert_eq!(
            (
                &v["language"],
                &v["git_full_clone"],
                &v["max_budget_per_task"]
            ),
            (&json!("fr"), &json!(false), &json!(5))
        );
        assert_eq!(v["enable_sound_notifications"], Value::Null);
        assert_eq!(v["llm_source"], Value::Null);
    }
}

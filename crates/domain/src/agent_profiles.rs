//! Agent profiles (issue 25; the agent server's `/api/agent-profiles`, which OpenHands' cloud
//! serves with the same contract and which Agent Canvas uses to start conversations): named
//! agent launch specifications of a user in an organization, at most [`MAX_AGENT_PROFILES`],
//! one of them active. A profile names an LLM profile (`llm_profile_ref`) instead of holding
//! an LLM, so it holds no secret and is stored as it is (the SDK's `AgentProfile`, #4017).
//!
//! Two kinds, told apart by `agent_kind` (default `openhands`), each with its own fields and
//! no other (the SDK's `extra="forbid"`): the save body is read by
//! [`crate::agent_profile_body`]. A profile keeps a stable `id` (a UUID, minted on its first save,
//! kept by saves and renames) and a `revision` that each save of an existing name bumps.
//! `condenser`, `verification`, `agent` and `acp_server` are judged by
//! [`crate::agent_profile_fields`] (with the values refused there and why); what each field
//! does at a start is `services::agent_launch`'s table.

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::named_profiles::{Collection, Named};

/// The most agent profiles a user keeps in one organization; one more is a 409 (the agent
/// server's `MAX_AGENT_PROFILES`).
pub const MAX_AGENT_PROFILES: usize = 50;

/// Agent profiles as a collection: `Agent profile` in the messages, at most
/// [`MAX_AGENT_PROFILES`] (the agent server's words at the limit).
pub const AGENT_PROFILES: Collection = Collection {
    noun: "Agent profile",
    limit: MAX_AGENT_PROFILES,
    full: || {
        format!(
            "Agent profile limit reached ({MAX_AGENT_PROFILES}). Delete a profile before saving a new one."
        )
    },
};

/// A profile as a list answers it (the agent server's `AgentProfileInfo`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileInfo {
    /// Its id (a UUID), kept across saves and renames.
    pub id: String,
    /// Its name.
    pub name: String,
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// Its revision: 0 when created, one more at each save.
    pub revision: i64,
    /// The LLM profile it names (`openhands`), or `null`.
    #[schema(value_type = Option<String>)]
    pub llm_profile_ref: Value,
    /// The MCP servers it names, or `null`.
    #[schema(value_type = Option<Vec<String>>)]
    pub mcp_server_refs: Value,
}

/// `GET /api/agent-profiles`' answer (`AgentProfileListResponse`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileListResponse {
    /// The profiles, by name.
    pub profiles: Vec<AgentProfileInfo>,
    /// The active profile's id, or `null` (none is seeded).
    pub active_agent_profile_id: Option<String>,
}

/// `GET /api/agent-profiles/{name}`'s answer (`AgentProfileDetailResponse`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct AgentProfileDetailResponse {
    /// The profile's name.
    pub name: String,
    /// The whole profile (the SDK's `AgentProfile`: its kind's fields, `id`, `name`,
    /// `revision`, `agent_kind`, `schema_version`).
    #[schema(value_type = Object)]
    pub profile: Value,
}

/// The schema version profiles are stored at (the SDK's `AGENT_PROFILE_SCHEMA_VERSION`).
pub const SCHEMA_VERSION: i64 = 3;

/// A stored agent profile.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAgentProfile {
    /// Stable id (a UUID), kept across saves and renames; conversations record it.
    pub id: Uuid,
    /// Name, a profile name (`^[A-Za-z0-9._-]{1,64}$`), unique in its set.
    pub name: String,
    /// Bumped by each save of an existing name; 0 at creation.
    pub revision: i64,
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// The profile's other fields (defaults filled in), without `id`, `name`, `revision`.
    pub body: Map<String, Value>,
}

impl StoredAgentProfile {
    /// The whole profile as the SDK dumps it: the body with `id`, `name` and `revision`.
    pub fn document(&self) -> Value {
        let mut out = self.body.clone();
        out.insert("id".into(), json!(self.id.to_string()));
        out.insert("name".into(), json!(self.name));
        out.insert("revision".into(), json!(self.revision));
        out.insert("agent_kind".into(), json!(self.agent_kind));
        Value::Object(out)
    }

    /// The list entry (the agent server's `AgentProfileInfo`).
    pub fn summary(&self) -> AgentProfileInfo {
        let field = |key: &str| self.body.get(key).cloned().unwrap_or(Value::Null);
        AgentProfileInfo {
            id: self.id.to_string(),
            name: self.name.clone(),
            agent_kind: self.agent_kind.clone(),
            revision: self.revision,
            llm_profile_ref: field("llm_profile_ref"),
            mcp_server_refs: field("mcp_server_refs"),
        }
    }

    /// `body.<key>` as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.body.get(key)?.as_str()
    }

    /// `body.<key>` as a list of names, `None` when null or absent.
    pub fn names(&self, key: &str) -> Option<Vec<String>> {
        Some(
            self.body
                .get(key)?
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        )
    }
}

/// One user's profiles in one organization, by name, and the active one's id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentProfileSet {
    /// The profiles, sorted by name.
    pub profiles: Vec<StoredAgentProfile>,
    /// The active profile's id (a pointer: activating changes nothing else).
    pub active_id: Option<Uuid>,
}

impl Named for StoredAgentProfile {
    fn name(&self) -> &str {
        &self.name
    }

    fn set_name(&mut self, name: &str) {
        name.clone_into(&mut self.name);
    }
}

impl AgentProfileSet {
    /// The profile named `name`.
    pub fn by_name(&self, name: &str) -> Option<&StoredAgentProfile> {
        Collection::find(&self.profiles, name)
    }

    /// The profile whose id is `id` (any text; not a UUID matches none).
    pub fn by_id(&self, id: &str) -> Option<&StoredAgentProfile> {
        let id = Uuid::parse_str(id).ok()?;
        self.profiles.iter().find(|p| p.id == id)
    }

    /// `AgentProfileListResponse`: `{profiles: [AgentProfileInfo…], active_agent_profile_id}`.
    pub fn list(&self) -> AgentProfileListResponse {
        AgentProfileListResponse {
            profiles: self
                .profiles
                .iter()
                .map(StoredAgentProfile::summary)
                .collect(),
            active_agent_profile_id: self.active_id.map(|i| i.to_string()),
        }
    }
}

/// A save body, read: the kind and the body to store (defaults filled in, `id`, `name` and
/// `revision` left out).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfileInput {
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// What is stored besides the identity.
    pub body: Map<String, Value>,
}

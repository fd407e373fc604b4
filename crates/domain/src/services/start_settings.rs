//! What a conversation start takes from the user who starts it (issue 21, "Use"): the LLM by
//! precedence, the MCP configuration, the confirmation setting and `max_iterations`, and the
//! user's secrets as the agent server's conversation secrets. The start pipeline makes one
//! call here ([`PersonalSettings::for_start`]) and one to apply the result to the create body.
//!
//! LLM precedence: the request's `llm_model` → the user's active profile → the user's
//! settings → the organization's default → the operator's `--llm-*` flags. Three levels (the
//! user's own LLM, the organization's, the operator's), and two choices made over them
//! separately: the model is the first level's that names one; the endpoint, a base URL and
//! key together, is the first level's that sets either. So a key is only ever sent to the
//! base URL of the party that set it (a level with a base URL and no key sends none), a user
//! who named only a model gets the organization's endpoint (else the operator's), and one who
//! set a key but no model gets the organization's model (else the operator's). The request's
//! `llm_model` replaces the model whatever its level. The MCP configuration is the user's,
//! else the organization's.
//!
//! A start naming `agent_profile_id` (issue 25) launches from that agent profile of the user's:
//! its `llm_profile_ref` (an LLM profile of the user's, else of the organization's) is the
//! user's level instead of the active profile or settings, its `system_message_suffix` comes
//! before the request's, its
//! `tools` (when not null) replace the standard ones, its `mcp_server_refs` (when not null)
//! keep only the named MCP servers, its `secret_refs` (when not null) only the named
//! secrets, and the conversation is tagged with the profile's id and revision (read back as
//! `launched_agent_profile`). The profile's condenser, verification, skills and sub-agent
//! fields are stored and answered but not acted on.

use serde_json::{Map, Value, json};

use crate::agent_profiles::StoredAgentProfile;
use crate::error::DomainError;
use crate::identity::redaction::MASK;
use crate::ids::{OrgId, UserId};
use crate::sandboxes::agent_requests::{AgentContext, StartConversationRequest, ToolSpec};
use crate::services::conversations::start::LlmConfig;
use crate::services::user_secrets::UserSecretService;
use crate::services::user_settings::{OwnLlm, UserSettingsService};
use crate::services::{AgentProfileService, OrgDefaultsService};
use crate::user_settings::view::conversation_settings;

use super::llm_choice::{EffectiveLlm, choose_llm};

/// The user's settings and secrets, as a start reads them.
#[derive(Clone)]
pub struct PersonalSettings {
    settings: UserSettingsService,
    secrets: UserSecretService,
    org: OrgDefaultsService,
    agent_profiles: AgentProfileService,
}

/// What a start takes from the agent profile it names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchProfile {
    /// The profile's id (tag `agentprofileid`).
    pub id: String,
    /// Its revision at launch (tag `agentprofilerevision`).
    pub revision: i64,
    /// Its `system_message_suffix`.
    pub system_message_suffix: Option<String>,
    /// Its `tools` (`{name, params}` objects); `None`: the standard tools.
    pub tools: Option<Vec<Value>>,
}

impl LaunchProfile {
    fn of(p: &StoredAgentProfile) -> Self {
        LaunchProfile {
            id: p.id.to_string(),
            revision: p.revision,
            system_message_suffix: p
                .text("system_message_suffix")
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            tools: p.body.get("tools").and_then(Value::as_array).cloned(),
        }
    }

    /// The conversation's tags naming the profile.
    pub fn tags(&self) -> [(&'static str, String); 2] {
        [
            ("agentprofileid", self.id.clone()),
            ("agentprofilerevision", self.revision.to_string()),
        ]
    }
}

/// What one start takes from its user. Holds keys and secrets: `Debug` shows none.
#[derive(Clone, Default)]
pub struct StartSettings {
    /// The LLM to use (its `model` already chosen by precedence).
    pub llm: LlmConfig,
    /// Where the LLM came from: `request`, `profile`, `settings`, `org` or `server` (logged).
    pub llm_source: &'static str,
    /// The user's MCP configuration, else the organization's, if any.
    pub mcp_config: Option<Value>,
    /// `conversation_settings.confirmation_mode`.
    pub confirmation_mode: bool,
    /// `conversation_settings.max_iterations`, when the user set one.
    pub max_iterations: Option<u64>,
    /// The user's secrets, name → value (provider tokens as `<provider>_token`).
    pub secrets: Map<String, Value>,
    /// The agent profile launched from, when the request named one.
    pub launch: Option<LaunchProfile>,
}

impl std::fmt::Debug for StartSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartSettings")
            .field("llm", &self.llm)
            .field("llm_source", &self.llm_source)
            .field("mcp_config", &self.mcp_config.as_ref().map(|_| MASK))
            .field("confirmation_mode", &self.confirmation_mode)
            .field("max_iterations", &self.max_iterations)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("launch", &self.launch)
            .finish()
    }
}

impl PersonalSettings {
    /// Over the four services.
    pub fn new(
        settings: UserSettingsService,
        secrets: UserSecretService,
        org: OrgDefaultsService,
        agent_profiles: AgentProfileService,
    ) -> Self {
        PersonalSettings {
            settings,
            secrets,
            org,
            agent_profiles,
        }
    }

    /// The user's agent profile with id `id`, and the user's level of the LLM it launches
    /// with (its `llm_profile_ref`).
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile or LLM profile;
    /// [`DomainError::BadRequest`] for an `acp` profile (this server starts OpenHands agents
    /// only); a key that does not open; storage.
    fn launch_profile(
        &self,
        org: OrgId,
        user: UserId,
        id: &str,
        rec: &crate::user_settings::UserSettingsRecord,
    ) -> Result<(StoredAgentProfile, OwnLlm), DomainError> {
        let set = self.agent_profiles.set_of(org, user)?;
        let p = set.by_id(id).ok_or_else(|| {
            DomainError::NotFound(format!("Agent profile with id '{id}' not found"))
        })?;
        if p.agent_kind != "openhands" {
            return Err(DomainError::BadRequest(format!(
                "Agent profile '{}' is an {} profile; this server starts OpenHands agents only",
                p.name, p.agent_kind
            )));
        }
        let reference = p.text("llm_profile_ref").unwrap_or_default();
        let llm = match rec.profile(reference) {
            Some(mine) if self.settings.sealer.is_some() || mine.api_key_sealed.is_none() => {
                self.settings.profile_own_llm(mine, org, user)?
            }
            Some(mine) => OwnLlm {
                model: mine.config_str("model").map(str::to_owned),
                base_url: mine.config_str("base_url").map(str::to_owned),
                api_key: None,
            },
            // Agent Canvas lists the organization's LLM profiles when an organization is
            // picked, so a reference may name one of those.
            None => self.org.profile_llm(org, reference)?.ok_or_else(|| {
                DomainError::NotFound(format!("LLM profile '{reference}' not found"))
            })?,
        };
        Ok((p.clone(), llm))
    }

    /// What a start of `user` in `org` takes (the precedence in the module's text).
    ///
    /// # Errors
    /// A sealed value that does not open (another installation key), storage.
    pub fn for_start(
        &self,
        org: OrgId,
        user: UserId,
        request_model: Option<&str>,
        server: &LlmConfig,
        agent_profile_id: Option<&str>,
    ) -> Result<StartSettings, DomainError> {
        let rec = self
            .settings
            .settings
            .user_settings(org, user)?
            .unwrap_or_default();
        let has_sealer = self.settings.sealer.is_some();
        let launched = agent_profile_id
            .map(|id| self.launch_profile(org, user, id, &rec))
            .transpose()?;
        let org_defaults = self.org.for_start(org)?;
        let levels = self.levels(
            org,
            user,
            &rec,
            launched.as_ref().map(|(_, l)| l),
            &org_defaults,
            server,
        )?;
        let (mut llm, mut source) = choose_llm(&levels, server.stream);
        if let Some(m) = request_model.filter(|m| !m.is_empty()) {
            llm.model = Some(m.to_owned());
            source = "request";
        }
        let conv = conversation_settings(&rec);
        let mut secrets = if has_sealer {
            self.secrets.start_secrets(org, user)?
        } else {
            Map::new()
        };
        let mut mcp_config = if has_sealer {
            self.settings.mcp_config(org, user)?
        } else {
            None
        }
        .or(org_defaults.mcp_config);
        if let Some((p, _)) = &launched {
            if let Some(keep) = p.names("secret_refs") {
                secrets.retain(|name, _| keep.contains(name));
            }
            if let Some(keep) = p.names("mcp_server_refs") {
                mcp_config = mcp_config.and_then(|m| only_servers(m, &keep));
            }
        }
        tracing::debug!(%org, %user, llm_source = source, secrets = secrets.len(), "the user's settings for a start");
        Ok(StartSettings {
            llm,
            llm_source: source,
            mcp_config,
            confirmation_mode: conv.get("confirmation_mode") == Some(&Value::Bool(true)),
            max_iterations: rec
                .conversation_settings
                .get("max_iterations")
                .and_then(Value::as_u64),
            secrets,
            launch: launched.as_ref().map(|(p, _)| LaunchProfile::of(p)),
        })
    }
}

impl PersonalSettings {
    /// The three levels a start chooses its LLM from, first to last: the user's (the launched
    /// agent profile's LLM when given, else the active profile's, else the settings'; nothing
    /// when a key is stored but this server cannot open it), the organization's default, the
    /// operator's. The one list both [`for_start`](Self::for_start) and
    /// [`effective_llm`](Self::effective_llm) choose from.
    ///
    /// # Errors
    /// A sealed value that does not open, storage.
    fn levels(
        &self,
        org: OrgId,
        user: UserId,
        rec: &crate::user_settings::UserSettingsRecord,
        launched: Option<&OwnLlm>,
        org_defaults: &crate::services::OrgStartDefaults,
        server: &LlmConfig,
    ) -> Result<[(OwnLlm, &'static str); 3], DomainError> {
        let own = match launched {
            Some(llm) => Some(llm.clone()),
            None if self.settings.sealer.is_some() || rec.llm_api_key_sealed.is_none() => {
                self.settings.own_llm(org, user)?
            }
            None => None,
        };
        let from_profile = launched.is_some()
            || rec
                .active_profile
                .as_deref()
                .is_some_and(|n| rec.profile(n).is_some());
        let org_llm = OwnLlm {
            model: org_defaults.model.clone(),
            base_url: org_defaults.base_url.clone(),
            api_key: org_defaults.api_key.clone(),
        };
        let server_llm = OwnLlm {
            model: server.model.clone(),
            base_url: server.base_url.clone(),
            api_key: server.api_key.clone(),
        };
        let user_source = if from_profile { "profile" } else { "settings" };
        Ok([
            (own.unwrap_or_default(), user_source),
            (org_llm, "org"),
            (server_llm, "server"),
        ])
    }

    /// The LLM a start of `user` in `org` without `llm_model` or an agent profile would use
    /// (the module's precedence over the same levels as [`for_start`](Self::for_start)), for
    /// `GET /api/v1/settings`: its model, base URL, whether a key goes with it (never the
    /// key), and whose it is.
    ///
    /// # Errors
    /// A sealed value that does not open, storage.
    pub fn effective_llm(
        &self,
        org: OrgId,
        user: UserId,
        server: &LlmConfig,
    ) -> Result<EffectiveLlm, DomainError> {
        let rec = self
            .settings
            .settings
            .user_settings(org, user)?
            .unwrap_or_default();
        let org_defaults = self.org.for_start(org)?;
        let levels = self.levels(org, user, &rec, None, &org_defaults, server)?;
        Ok(EffectiveLlm::of(&levels, server.stream))
    }
}

impl PersonalSettings {
    /// The token `user` stored for `provider` (opened; `None` when none, or on a server
    /// without the installation key, where none can be stored) and the host stored with it,
    /// for the start's clone.
    ///
    /// # Errors
    /// A token that does not open (another installation key), storage.
    pub fn provider_token(
        &self,
        org: OrgId,
        user: UserId,
        provider: &str,
    ) -> Result<(Option<String>, Option<String>), DomainError> {
        if self.settings.sealer.is_none() {
            return Ok((None, None));
        }
        self.secrets.provider_token(org, user, provider)
    }
}

impl StartSettings {
    /// The secrets to mask in a task's detail: the LLM key and every secret value.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self.llm.api_key.iter().cloned().collect();
        out.extend(
            self.secrets
                .values()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        out
    }

    /// The request's secrets over the user's (the request's win on a shared name).
    pub fn secrets_under(&self, request: &Map<String, Value>) -> Map<String, Value> {
        let mut out = self.secrets.clone();
        for (k, v) in request {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    /// Adds to the agent server's create body what the body builder does not know: the MCP
    /// configuration (`agent.mcp_config`), the confirmation policy (`AlwaysConfirm` when the
    /// user turned confirmation on) and the user's `max_iterations` when the request set none.
    pub fn apply(&self, body: &mut StartConversationRequest) {
        if let Some(mcp) = &self.mcp_config {
            body.agent.mcp_config = Some(mcp.clone());
        }
        if self.confirmation_mode {
            body.confirmation_policy = Some(json!({"kind": "AlwaysConfirm"}));
        }
        if body.max_iterations.is_none() {
            body.max_iterations = self.max_iterations;
        }
        if let Some(launch) = &self.launch {
            if let Some(suffix) = &launch.system_message_suffix {
                let joined = match body.agent.agent_context.take() {
                    Some(c) => format!("{suffix}\n\n{}", c.system_message_suffix),
                    None => suffix.clone(),
                };
                body.agent.agent_context = Some(AgentContext {
                    system_message_suffix: joined,
                });
            }
            if let Some(tools) = &launch.tools {
                body.agent.tools = tools
                    .iter()
                    .filter_map(|t| {
                        Some(ToolSpec {
                            name: t.get("name")?.as_str()?.to_owned().into(),
                            params: t.get("params").filter(|p| !p.is_null()).cloned(),
                        })
                    })
                    .collect();
            }
        }
    }
}

/// `mcp_config` keeping only the servers named in `keep`: the keys of `mcpServers` (the
/// SDK's shape) and the `name`s in `sse_servers`, `shttp_servers` and `stdio_servers`
/// (OpenHands' settings shape); `None` when none is left.
fn only_servers(mut mcp: Value, keep: &[String]) -> Option<Value> {
    let obj = mcp.as_object_mut()?;
    let mut left = 0;
    if let Some(servers) = obj.get_mut("mcpServers").and_then(Value::as_object_mut) {
        servers.retain(|name, _| keep.contains(name));
        left += servers.len();
    }
    for list in ["sse_servers", "shttp_servers", "stdio_servers"] {
        if let Some(items) = obj.get_mut(list).and_then(Value::as_array_mut) {
            items.retain(|s| {
                s.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| keep.iter().any(|k| k == n))
            });
            left += items.len();
        }
    }
    (left > 0).then_some(mcp)
}

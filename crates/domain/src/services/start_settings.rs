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
//! user's level instead of the active profile or settings, its `mcp_server_refs` (when not
//! null) keep only the named MCP servers, its `secret_refs` (when not null) only the named
//! secrets, its other fields reach the agent as [`super::agent_launch`] says (an `acp`
//! profile launches the agent server's ACP agent, with no LLM of Switchboard's), and the
//! conversation is tagged with the profile's id and revision (read back as
//! `launched_agent_profile`).
//!
//! An LLM profile (or settings LLM) naming a provider connection (`provider_connection_id`)
//! takes the connection's base URL and key ([`crate::org_profiles::through_connection`]).
//! When that connection no longer exists and the level would set the start's endpoint, the
//! start fails saying so: no later level's key stands in for it.

use serde_json::{Map, Value, json};

use crate::agent_profiles::StoredAgentProfile;
use crate::conversations::skill_sources;
use crate::error::DomainError;
use crate::identity::redaction::MASK;
use crate::ids::{OrgId, UserId};
use crate::sandboxes::agent_requests::StartConversationRequest;
use crate::sandboxes::grouping::SandboxGrouping;
use crate::services::conversations::start::LlmConfig;
use crate::services::user_secrets::UserSecretService;
use crate::services::user_settings::{OwnLlm, UserSettingsService};
use crate::services::{AgentProfileService, OrgDefaultsService};
use crate::user_settings::view::conversation_defaults;

use super::agent_launch::LaunchProfile;
use super::llm_choice::{EffectiveLlm, broken_endpoint, choose_llm};

/// The user's settings and secrets, as a start reads them.
#[derive(Clone)]
pub struct PersonalSettings {
    settings: UserSettingsService,
    secrets: UserSecretService,
    org: OrgDefaultsService,
    agent_profiles: AgentProfileService,
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
    /// `conversation_settings.confirmation_mode` (the member's, else the organization's,
    /// else `false`).
    pub confirmation_mode: bool,
    /// `conversation_settings.security_analyzer` (the member's, else the organization's, else
    /// OpenHands' default `llm`); `None` for `none` or `null`.
    pub security_analyzer: Option<String>,
    /// `conversation_settings.max_iterations`, when the member or the organization set one.
    pub max_iterations: Option<u64>,
    /// The user's secrets, name → value (provider tokens as `<provider>_token`).
    pub secrets: Map<String, Value>,
    /// The agent profile launched from, when the request named one.
    pub launch: Option<LaunchProfile>,
    /// The member's own agent settings as the agent, when no agent profile is launched
    /// ([`crate::user_settings::agent_fields`]; issue 36).
    pub member_agent: Option<crate::user_settings::agent_fields::MemberAgent>,
    /// The member's `disabled_skills`, joined to the launched profile's (issue 36).
    pub disabled_skills: Vec<String>,
    /// The plugin marketplaces to register: the member's, then the organization's
    /// ([`crate::conversations::skill_sources::marketplaces`]).
    pub registered_marketplaces: Vec<Value>,
    /// The conversation's budget in USD: the member's `max_budget_per_task` under the
    /// organization's ([`crate::conversations::budget::effective_budget`]; API.md, "Budgets").
    pub max_budget_per_task: Option<f64>,
}

impl std::fmt::Debug for StartSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartSettings")
            .field("llm", &self.llm)
            .field("llm_source", &self.llm_source)
            .field("mcp_config", &self.mcp_config.as_ref().map(|_| MASK))
            .field("confirmation_mode", &self.confirmation_mode)
            .field("security_analyzer", &self.security_analyzer)
            .field("max_iterations", &self.max_iterations)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("launch", &self.launch)
            .field("max_budget_per_task", &self.max_budget_per_task)
            .field("member_agent", &self.member_agent)
            .field("disabled_skills", &self.disabled_skills)
            .field(
                "registered_marketplaces",
                &self.registered_marketplaces.len(),
            )
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
    /// with (its `llm_profile_ref`; none for an `acp` profile, whose ACP server makes its own
    /// model calls).
    ///
    /// # Errors
    /// [`DomainError::NotFound`] for an unknown profile or LLM profile;
    /// [`DomainError::BadRequest`] for a profile that cannot be launched
    /// ([`LaunchProfile::of`]); a key that does not open; storage.
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
        if LaunchProfile::of(p)?.is_acp() {
            return Ok((p.clone(), OwnLlm::default()));
        }
        let reference = p.text("llm_profile_ref").unwrap_or_default();
        let llm = match rec.profile(reference) {
            Some(mine) if self.settings.sealer.is_some() || mine.api_key_sealed.is_none() => {
                self.settings.profile_own_llm(mine, org, user)?
            }
            Some(mine) => OwnLlm {
                model: mine.config_str("model").map(str::to_owned),
                base_url: mine.config_str("base_url").map(str::to_owned),
                ..OwnLlm::default()
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
        let mut org_defaults = self.org.for_start(org)?;
        let org_app = self.settings.orgs.org_settings(org)?;
        let levels = self.levels(
            org,
            user,
            &rec,
            launched.as_ref().map(|(_, l)| l),
            &org_defaults,
            server,
        )?;
        // An ACP agent takes no LLM of Switchboard's; any other start refuses an endpoint lost
        // with its provider connection rather than fall back to another party's key.
        let acp = launched
            .as_ref()
            .is_some_and(|(p, _)| p.agent_kind == "acp");
        if let Some(why) = broken_endpoint(&levels).filter(|_| !acp) {
            return Err(DomainError::BadRequest(why));
        }
        let (mut llm, mut source) = choose_llm(&levels, server.stream);
        if let Some(m) = request_model.filter(|m| !m.is_empty()) {
            llm.model = Some(m.to_owned());
            source = "request";
        }
        let (confirmation_mode, security_analyzer, max_iterations) = conversation_parts(
            &std::mem::take(&mut org_defaults.conversation_settings),
            &rec.conversation_settings,
        );
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
            confirmation_mode,
            security_analyzer,
            max_iterations,
            secrets,
            launch: launched
                .as_ref()
                .map(|(p, _)| LaunchProfile::of(p))
                .transpose()?,
            max_budget_per_task: crate::conversations::budget::effective_budget(
                crate::conversations::budget::member_budget(&rec.preferences),
                org_app.as_ref().and_then(|s| s.max_budget_per_task),
            ),
            member_agent: launched
                .is_none()
                .then(|| crate::user_settings::agent_fields::member_agent(&rec.agent_settings)),
            disabled_skills: skill_sources::disabled_skills(&rec.preferences),
            registered_marketplaces: skill_sources::marketplaces(
                &rec.preferences,
                org_app
                    .as_ref()
                    .map_or(&[][..], |s| &s.registered_marketplaces[..]),
            ),
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
            broken: org_defaults.llm_broken.clone(),
            key_owner: Some("organization"),
        };
        let server_llm = OwnLlm {
            model: server.model.clone(),
            base_url: server.base_url.clone(),
            api_key: server.api_key.clone(),
            broken: None,
            key_owner: Some("operator"),
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
        if let Some(mcp) = &self.mcp_config {
            out.extend(crate::identity::mcp_redaction::mcp_secret_values(mcp));
        }
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
    /// user turned confirmation on), the user's `max_iterations` when the request set none,
    /// and the launched agent profile ([`LaunchProfile::apply`]).
    pub fn apply(&self, body: &mut StartConversationRequest) {
        if let Some(mcp) = &self.mcp_config {
            body.agent.mcp_config = Some(mcp.clone());
        }
        // OpenHands' `ConversationSettings`: confirmation on asks for risky actions only when
        // the LLM analyzer rates them, else for every action; the analyzer whenever it is `llm`.
        if self.confirmation_mode {
            let kind = if self.security_analyzer.as_deref() == Some("llm") {
                "ConfirmRisky"
            } else {
                "AlwaysConfirm"
            };
            body.confirmation_policy = Some(json!({ "kind": kind }));
        }
        if self.security_analyzer.as_deref() == Some("llm") {
            body.security_analyzer = Some(json!({"kind": "LLMSecurityAnalyzer"}));
        }
        if body.max_iterations.is_none() {
            body.max_iterations = self.max_iterations;
        }
        if let Some(launch) = &self.launch {
            launch.apply(&mut body.agent);
        } else if let Some(own) = &self.member_agent {
            apply_member_agent(own, &mut body.agent);
        }
        let skills = &mut body.agent.profile.disabled_skills;
        for name in &self.disabled_skills {
            if !skills.contains(name) {
                skills.push(name.clone());
            }
        }
        body.agent
            .profile
            .registered_marketplaces
            .clone_from(&self.registered_marketplaces);
    }
}

/// The conversation settings a start acts on, OpenHands' defaults under the organization's
/// (`org`) under the member's (`member`), key by key (issue 36): `confirmation_mode`,
/// `security_analyzer` (`None` for `none` or `null`), and `max_iterations` when the member or
/// the organization set one (the default is the agent server's own).
fn conversation_parts(
    org: &Map<String, Value>,
    member: &Map<String, Value>,
) -> (bool, Option<String>, Option<u64>) {
    let mut conv = conversation_defaults();
    conv.extend(org.clone());
    conv.extend(member.clone());
    let analyzer = conv
        .get("security_analyzer")
        .and_then(Value::as_str)
        .filter(|a| !a.eq_ignore_ascii_case("none") && !a.is_empty())
        .map(str::to_owned);
    let max_iterations = member
        .get("max_iterations")
        .or_else(|| org.get("max_iterations"))
        .and_then(Value::as_u64);
    (
        conv.get("confirmation_mode") == Some(&Value::Bool(true)),
        analyzer,
        max_iterations,
    )
}

/// The member's own agent settings on `agent` (a start without an agent profile; issue 36),
/// by the rules of an agent profile's same fields ([`LaunchProfile::apply`]): their suffix
/// before the request's, their tools for the standard ones, the condenser on the agent's LLM,
/// the tool concurrency.
fn apply_member_agent(
    own: &crate::user_settings::agent_fields::MemberAgent,
    agent: &mut crate::sandboxes::agent_requests::AgentSpec,
) {
    LaunchProfile {
        system_message_suffix: own.system_message_suffix.clone(),
        tools: own.tools.clone(),
        condenser: own.condenser.clone(),
        tool_concurrency_limit: own.tool_concurrency_limit,
        ..LaunchProfile::default()
    }
    .apply(agent);
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

impl PersonalSettings {
    /// The app preferences of `user` in `org` as a start reads them (OpenHands' defaults
    /// overlaid with the stored ones; [`crate::user_settings::view::preferences`]): the git
    /// identity and clone depth, the default sandbox spec (issue 36).
    ///
    /// # Errors
    /// Storage.
    pub fn preferences(&self, org: OrgId, user: UserId) -> Result<Map<String, Value>, DomainError> {
        let rec = self
            .settings
            .settings
            .user_settings(org, user)?
            .unwrap_or_default();
        Ok(crate::user_settings::view::preferences(&rec))
    }
}

impl PersonalSettings {
    /// The sandbox grouping strategy of `user` in `org` (their `sandbox_grouping_strategy`
    /// preference; `NO_GROUPING` when unset: [`SandboxGrouping::of_preferences`]), read before
    /// the start's sandbox is chosen.
    ///
    /// # Errors
    /// Storage.
    pub fn sandbox_grouping(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<SandboxGrouping, DomainError> {
        let rec = self.settings.settings.user_settings(org, user)?;
        Ok(rec.map_or_else(SandboxGrouping::default, |r| {
            SandboxGrouping::of_preferences(&r.preferences)
        }))
    }
}

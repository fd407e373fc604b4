//! What a conversation start takes from the user who starts it (issue 21, "Use"): the LLM by
//! precedence, the MCP configuration, the confirmation setting and `max_iterations`, and the
//! user's secrets as the agent server's conversation secrets. The start pipeline makes one
//! call here ([`PersonalSettings::for_start`]) and one to apply the result to the create body.
//!
//! LLM precedence: the request's `llm_model` → the user's active profile → the user's
//! settings → the operator's `--llm-*` flags. The user's base URL and key go together: the
//! operator's key is never sent to a user's base URL, and a user's key never to the
//! operator's (a user who set a base URL without a key gets no key). A user who named only a
//! model gets the operator's endpoint and key with it; one who set no model gets the
//! operator's model. The request's `llm_model` replaces the model of whichever source
//! applies.

use serde_json::{Map, Value, json};

use crate::error::DomainError;
use crate::identity::redaction::MASK;
use crate::ids::{OrgId, UserId};
use crate::sandboxes::agent_requests::StartConversationRequest;
use crate::services::conversations::start::LlmConfig;
use crate::services::user_secrets::UserSecretService;
use crate::services::user_settings::UserSettingsService;
use crate::user_settings::view::conversation_settings;

/// The user's settings and secrets, as a start reads them.
#[derive(Clone)]
pub struct PersonalSettings {
    settings: UserSettingsService,
    secrets: UserSecretService,
}

/// What one start takes from its user. Holds keys and secrets: `Debug` shows none.
#[derive(Clone, Default)]
pub struct StartSettings {
    /// The LLM to use (its `model` already chosen by precedence).
    pub llm: LlmConfig,
    /// Where the LLM came from: `request`, `profile`, `settings` or `server` (logged).
    pub llm_source: &'static str,
    /// The user's MCP configuration, if any.
    pub mcp_config: Option<Value>,
    /// `conversation_settings.confirmation_mode`.
    pub confirmation_mode: bool,
    /// `conversation_settings.max_iterations`, when the user set one.
    pub max_iterations: Option<u64>,
    /// The user's secrets, name → value (provider tokens as `<provider>_token`).
    pub secrets: Map<String, Value>,
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
            .finish()
    }
}

impl PersonalSettings {
    /// Over the two services.
    pub fn new(settings: UserSettingsService, secrets: UserSecretService) -> Self {
        PersonalSettings { settings, secrets }
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
    ) -> Result<StartSettings, DomainError> {
        let rec = self
            .settings
            .settings
            .user_settings(org, user)?
            .unwrap_or_default();
        let has_sealer = self.settings.sealer.is_some();
        let own = if has_sealer || rec.llm_api_key_sealed.is_none() {
            self.settings.own_llm(org, user)?
        } else {
            None
        };
        let from_profile = rec
            .active_profile
            .as_deref()
            .is_some_and(|n| rec.profile(n).is_some());
        let (mut llm, mut source) = match own {
            Some(own) => (
                LlmConfig {
                    model: own.model.or_else(|| server.model.clone()),
                    base_url: own.base_url,
                    api_key: own.api_key,
                    stream: server.stream,
                },
                if from_profile { "profile" } else { "settings" },
            ),
            None => (server.clone(), "server"),
        };
        if source != "server" && llm.base_url.is_none() && llm.api_key.is_none() {
            // Only a model named by the user: the operator's endpoint and key stay the
            // operator's (never mixed with a user's choice of endpoint).
            llm.base_url.clone_from(&server.base_url);
            llm.api_key.clone_from(&server.api_key);
        }
        if let Some(m) = request_model.filter(|m| !m.is_empty()) {
            llm.model = Some(m.to_owned());
            source = "request";
        }
        let conv = conversation_settings(&rec);
        let secrets = if has_sealer {
            self.secrets.start_secrets(org, user)?
        } else {
            Map::new()
        };
        let mcp_config = if has_sealer {
            self.settings.mcp_config(org, user)?
        } else {
            None
        };
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
        })
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
    }
}

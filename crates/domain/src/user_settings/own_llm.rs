//! A user's own LLM with its key opened ([`OwnLlm`]): what `users/me?expose_secrets=true`
//! answers, what a start takes by precedence, and what `switch_profile` hands a running
//! conversation.

use crate::error::DomainError;
use crate::sandboxes::agent_requests::LlmSpec;

/// The user's own LLM, its key opened: from the active profile, else the settings.
#[derive(Clone, Default, PartialEq)]
pub struct OwnLlm {
    /// Model.
    pub model: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
    /// Key, in the clear.
    pub api_key: Option<String>,
    /// Why this LLM cannot be used: it names a provider connection that no longer exists
    /// (its base URL and key are then none; a start or a switch to it fails with this text,
    /// never falling back to another party's key).
    pub broken: Option<String>,
    /// Whose key [`api_key`](Self::api_key) is when it is not the member's own:
    /// `organization` (an organization's profile or default, a provider connection) or
    /// `operator`; `None` for the member's own key (issue 38).
    pub key_owner: Option<&'static str>,
}

impl OwnLlm {
    /// The agent server's `LLM` for this one (usage `agent`, no retries, not streamed), as a
    /// running conversation gets it from its owner's profile `name`.
    ///
    /// # Errors
    /// [`DomainError::BadRequest`] (400) when the profile names no model, or a provider
    /// connection that no longer exists (`broken`).
    pub fn into_spec(self, name: &str) -> Result<LlmSpec, DomainError> {
        if let Some(why) = self.broken {
            return Err(DomainError::BadRequest(why));
        }
        let Some(model) = self.model else {
            return Err(DomainError::BadRequest(format!(
                "Profile '{name}' has no model"
            )));
        };
        Ok(LlmSpec {
            model,
            usage_id: "agent",
            num_retries: 0,
            base_url: self.base_url,
            api_key: self.api_key,
            stream: false,
        })
    }
}

//! `switch_profile` (issue 21): a running conversation given one of its owner's LLM profiles,
//! a key that is not the member's own (a provider connection's) through the LLM pass-through
//! (issue 38).

use super::AppConversationService;
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ids::ConversationId;
use crate::services::OwnLlm;
use crate::services::conversations::start::LlmConfig;
use crate::services::llm_relay::{LlmRelayService, RouteFor};
use crate::time_input::now_micros;

impl AppConversationService {
    /// Switches the running conversation's LLM to `own` (the caller's LLM profile `name`):
    /// its model, base URL and key, from the agent server's next step on; a key that is not
    /// the caller's own goes through `relay` (a route of this conversation's, its token sent
    /// instead of the key).
    ///
    /// # Errors
    /// [`DomainError::BadRequest`] for a profile without a model or whose provider connection
    /// is gone, or a shared key with no base URL and no public endpoint; then as
    /// [`AppConversationService::send_message`].
    pub fn switch_profile(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
        own: OwnLlm,
        name: &str,
        relay: &LlmRelayService,
    ) -> Result<(), DomainError> {
        let llm = LlmConfig {
            model: own.model.clone(),
            base_url: own.base_url.clone(),
            api_key: own.api_key.clone(),
            stream: false,
            key_owner: own.key_owner,
        };
        let mut spec = own.into_spec(name)?;
        if LlmRelayService::needed(&llm) {
            let info = self.visible(ctx, id)?;
            let sandbox = info
                .sandbox_id
                .ok_or(DomainError::ConversationSandboxMissing)?;
            let record = self.sandbox_record(sandbox)?;
            let proxy_url = self.sandboxes.llm_proxy_url_of(&record)?;
            let at = RouteFor {
                sandbox,
                conversation: id,
                org: info.org_id,
                user: info.created_by_user_id,
                model: &spec.model,
            };
            let routed = relay.open_route(at, &llm, &proxy_url, now_micros())?;
            spec.base_url = routed.base_url;
            spec.api_key = routed.api_key;
        }
        self.switch_llm(ctx, id, spec)
    }
}

//! A start's LLM through the pass-through (issue 38; [`crate::services::LlmRelayService`]): a
//! key that is not the starting member's own is replaced, in what the agent server is sent, by
//! the pass-through's address and a token of this conversation's.

use time::OffsetDateTime;

use super::steps::Agent;
use super::{Failure, LlmConfig, Run};
use crate::error::DomainError;
use crate::ids::SandboxId;
use crate::services::llm_relay::{LlmRelayService, RouteFor};

impl Run<'_> {
    /// The LLM the agent server is sent: `llm` itself when its key is the member's own (or it
    /// has none), else the pass-through's ([`LlmRelayService::open_route`]), the token joining
    /// the values masked in a detail.
    pub(super) fn through_relay(
        &mut self,
        llm: &LlmConfig,
        agent: &Agent<'_>,
        sandbox: SandboxId,
        model: &str,
        now: OffsetDateTime,
    ) -> Result<LlmConfig, Failure> {
        if !LlmRelayService::needed(llm) {
            return Ok(llm.clone());
        }
        let relay = self.svc.relay.as_ref().ok_or_else(|| {
            Failure("a shared LLM key cannot be used: this server has no LLM pass-through".into())
        })?;
        let at = RouteFor {
            sandbox,
            conversation: self.task.conversation_id,
            org: self.task.org_id,
            user: self.task.created_by_user_id,
            model,
        };
        let routed = relay
            .open_route(at, llm, &agent.llm_proxy_url, now)
            .map_err(|e| match e {
                DomainError::BadRequest(m) => Failure(m),
                e => Failure(format!("opening the LLM pass-through failed: {e}")),
            })?;
        if let Some(token) = &routed.api_key {
            self.secrets.push(token.clone());
        }
        Ok(routed)
    }
}

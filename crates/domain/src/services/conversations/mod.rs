//! Conversations, one room (issue 20 item 2): here the agent server's `ConversationInfo` and
//! who may see a conversation; [`app`] app conversations (read, change, delete, send a
//! message), [`start_tasks`] the reads of start tasks, [`start`] the start pipeline (its job,
//! claims, steps and the agent server's create request), [`workspace`] the workspace reads
//! and [`pending`] the messages queued while a conversation starts (issue 22).

pub(super) mod app;
pub(super) mod pending;
pub(super) mod start;
pub(super) mod start_tasks;
pub(super) mod workspace;

use std::sync::Arc;

use crate::conversations::{Conversation, ExecutionStatus, parse_conversation_info};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ids::ConversationId;
use crate::permissions::Permission;
use crate::ports::ConversationStore;
use crate::sandboxes::Sandbox;
use crate::time_input::now_micros;

/// Applies conversation updates from agent servers and resolves visible conversations.
#[derive(Clone)]
pub struct ConversationService {
    conversations: Arc<dyn ConversationStore>,
}

impl ConversationService {
    /// The service over the conversation store.
    pub fn new(conversations: Arc<dyn ConversationStore>) -> Self {
        ConversationService { conversations }
    }

    /// Applies the agent server's `ConversationInfo` (a JSON object with `id`; `title` and
    /// `execution_status` when present, the LLM model and metrics as
    /// [`RunDetails::of_info`](crate::conversations::RunDetails::of_info) reads them): creates
    /// or updates the conversation and keeps the whole object as metadata (unchanged, NUL
    /// included; the title column gets U+FFFD for each NUL). A status OpenHands does not define
    /// leaves the run state as it is. A `deleting` info (sent as the agent server deletes the
    /// conversation) never sets the run state, which keeps the last one reported, nor creates
    /// a conversation; its title, model and metrics are kept (OpenHands ignores it whole: here
    /// it is the last word of a conversation whose sandbox goes away; API.md, "What a
    /// conversation keeps after its sandbox").
    ///
    /// A conversation the sandbox may not write (another organization's, or another user's)
    /// is left untouched and the call answered as any other, so that a sandbox cannot learn
    /// which ids exist outside its own (issue 24 item 5); the log says so.
    ///
    /// # Errors
    /// [`DomainError::Invalid`] for a body without a UUID `id` or with non-string title or
    /// status.
    pub fn ingest_conversation_info(
        &self,
        sandbox: &Sandbox,
        info: &serde_json::Value,
    ) -> Result<(), DomainError> {
        let parsed = parse_conversation_info(info)?;
        let mut status = parsed.execution_status;
        if status == Some(ExecutionStatus::Deleting) {
            if self.conversations.conversation(parsed.id)?.is_none() {
                return Ok(());
            }
            status = None;
        }
        let now = now_micros();
        let mut conv = Conversation::in_sandbox(sandbox, parsed.id, now);
        // The title column mirrors the metadata, which keeps the original (API.md, NUL
        // characters).
        conv.title = parsed.title.map(crate::validation::nul_replaced);
        conv.execution_status = status;
        if !self.conversations.upsert_conversation_info(
            &conv,
            &parsed.details,
            &info.to_string(),
            now,
        )? {
            tracing::warn!(sandbox = %sandbox.id, conversation = %parsed.id, "a webhook for a conversation its sandbox may not write, or one deleted: nothing stored");
        }
        Ok(())
    }

    /// The conversation `id` when the caller sees it: it belongs to the caller's organization
    /// and the caller owns it or holds `view_org_conversations` (admins and owners; the
    /// project's conversation visibility rule).
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] for an unknown conversation, another org's, or
    /// another member's for a member (never 403: ids do not leak).
    pub fn visible_conversation(
        &self,
        ctx: &OrgContext,
        id: ConversationId,
    ) -> Result<Conversation, DomainError> {
        match self.conversations.conversation(id)? {
            Some(c)
                if c.org_id == ctx.org.id
                    && (c.owner_id == ctx.principal.user_id
                        || ctx.role.grants(Permission::ViewOrgConversations)) =>
            {
                Ok(c)
            }
            _ => Err(DomainError::ConversationNotFound),
        }
    }
}

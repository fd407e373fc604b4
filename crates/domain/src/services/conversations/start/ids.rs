//! The conversation id of a start (issue 24 item 5): an id the caller does not see is taken
//! as unknown, so that no answer tells what exists outside the caller's scope.

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ids::ConversationId;
use crate::ports::StartedConversation;

use super::{ConversationStartService, Failure, Run, sees};

impl ConversationStartService {
    /// The conversation id of a start: the requested one when no conversation has it; a
    /// conversation the caller sees is 409; one they do not see (another organization's,
    /// another member's) is taken as unknown and the start gets a fresh id, so that the
    /// answer never tells what exists outside the caller's scope (issue 24 item 5).
    pub(super) fn chosen_conversation_id(
        &self,
        ctx: &OrgContext,
        requested: Option<ConversationId>,
    ) -> Result<ConversationId, DomainError> {
        let Some(id) = requested else {
            return Ok(ConversationId::new_random());
        };
        match self.conversations.conversation(id)? {
            None => Ok(id),
            Some(c) if sees(ctx, &c) => Err(DomainError::AlreadyExists(format!(
                "Conversation {id} already exists"
            ))),
            Some(_) => {
                tracing::info!(requested = %id, "a start named a conversation id the caller does not see: a fresh id is used");
                Ok(ConversationId::new_random())
            }
        }
    }
}

impl Run<'_> {
    /// Records the conversation row of the start ([`StartTaskStore::create_started_conversation`]);
    /// when its id was taken meanwhile by a conversation the caller does not see, a fresh id
    /// is used instead (issue 24 item 5). The id recorded.
    pub(super) fn record_conversation(
        &mut self,
        mut started: StartedConversation,
        now: time::OffsetDateTime,
    ) -> Result<ConversationId, Failure> {
        for _ in 0..2 {
            let id = started.conversation.id;
            match self.svc.tasks.create_started_conversation(&started, now) {
                Ok(true) => return Ok(id),
                Ok(false) => {}
                Err(e) => return Err(Failure(format!("recording the conversation failed: {e}"))),
            }
            let taken = self.svc.conversations.conversation(id).ok().flatten();
            if taken.is_some_and(|c| sees(self.ctx, &c)) {
                return Err(Failure(format!("Conversation {id} already exists")));
            }
            let fresh = ConversationId::new_random();
            tracing::info!(task = %self.task.id, requested = %id, "the start's conversation id was taken by a conversation the caller does not see: a fresh id is used");
            self.task.conversation_id = fresh;
            started.conversation.id = fresh;
        }
        Err(Failure("no conversation id could be recorded".into()))
    }
}

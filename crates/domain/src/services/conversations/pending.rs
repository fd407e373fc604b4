//! Pending messages (issue 22; OpenHands' `POST /api/v1/conversations/{id}/pending-messages`):
//! a message sent while the conversation is still starting is stored and delivered to its agent
//! server when the start is `READY`; one sent to a conversation that is ready is delivered at
//! once (as send-message does). Each queued message is taken from the store by exactly one
//! deliverer (the start pipeline, or the route when the start finished while it queued), so it
//! reaches the agent server once; a delivery that fails is logged and the message dropped, as
//! OpenHands does. A start that fails drops its queued messages.

use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use super::app::{AppConversationService, agent_failed};
use crate::conversations::app::SendMessage;
use crate::conversations::start_tasks::{StartTask, StartTaskFilter, StartTaskId, StartTaskStatus};
use crate::conversations::workspace::{MAX_PENDING_MESSAGES, PendingMessage};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ids::{ConversationId, parse_uuid};
use crate::permissions::Permission;
use crate::ports::{AppConversationStore, PendingMessageStore, StartTaskQuery, StartTaskStore};
use crate::sandboxes::runtime::SandboxStatus;
use crate::services::SandboxService;
use crate::time_input::now_micros;

/// Queues and delivers pending messages.
#[derive(Clone)]
pub struct PendingMessageService {
    pending: Arc<dyn PendingMessageStore>,
    tasks: Arc<dyn StartTaskStore>,
    store: Arc<dyn AppConversationStore>,
    app: AppConversationService,
    sandboxes: SandboxService,
}

/// OpenHands' `PendingMessageResponse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    /// The message's id.
    pub id: Uuid,
    /// Whether it was queued (`false`: the conversation was ready and it was delivered at
    /// once).
    pub queued: bool,
    /// Its position in the queue, 1-based (0 when delivered at once).
    pub position: u64,
}

impl PendingMessageService {
    /// The service over the pending-message, start-task and app-conversation stores.
    pub fn new(
        pending: Arc<dyn PendingMessageStore>,
        tasks: Arc<dyn StartTaskStore>,
        store: Arc<dyn AppConversationStore>,
        app: AppConversationService,
        sandboxes: SandboxService,
    ) -> Self {
        PendingMessageService {
            pending,
            tasks,
            store,
            app,
            sandboxes,
        }
    }

    /// Queues `message` for the conversation `target` names (its id, dashed or 32 hex; its
    /// start task's id; or `task-<start task id>`, as OpenHands' clients send before the
    /// conversation exists), or delivers it at once when the conversation is ready.
    ///
    /// # Errors
    /// [`DomainError::ConversationNotFound`] when the caller sees no such conversation or
    /// start; [`DomainError::Conflict`] (409) when its start failed;
    /// [`DomainError::TooManyPendingMessages`] (429) over [`MAX_PENDING_MESSAGES`]; those of
    /// send-message for a ready conversation, its 410 and 503 as 409
    /// ([`DomainError::Conflict`]); storage.
    pub fn queue(
        &self,
        ctx: &OrgContext,
        target: &str,
        message: &SendMessage,
    ) -> Result<Queued, DomainError> {
        let (conversation, task) = self.target(ctx, target)?;
        let id = Uuid::new_v4();
        match task.as_ref().map(|t| t.status) {
            None | Some(StartTaskStatus::Ready) => {
                self.app
                    .send_message(ctx, conversation, message)
                    .map_err(undeliverable)?;
                return Ok(Queued {
                    id,
                    queued: false,
                    position: 0,
                });
            }
            Some(StartTaskStatus::Error) => return Err(start_failed()),
            Some(_) => {}
        }
        let pending = PendingMessage {
            id,
            conversation_id: conversation,
            org_id: ctx.org.id,
            created_by_user_id: ctx.principal.user_id,
            body: json!({ "role": "user", "content": message.content, "run": message.run }),
            created_at: now_micros(),
        };
        let position = self
            .pending
            .queue_pending_message(&pending, MAX_PENDING_MESSAGES)?
            .ok_or(DomainError::TooManyPendingMessages)?;
        // The start may have finished while this was queued: then its delivery may have run
        // before the message was stored, and this call delivers (or drops) it.
        let task = task.expect("a task decided the queue");
        let now = self.tasks.start_tasks_by_ids(&[task.id])?.pop();
        match now.map(|t| t.status) {
            Some(StartTaskStatus::Ready) => self.deliver(conversation),
            Some(StartTaskStatus::Error) | None => self.discard(conversation),
            Some(_) => {}
        }
        Ok(Queued {
            id,
            queued: true,
            position,
        })
    }

    /// Delivers the conversation's queued messages to its agent server, oldest first (the
    /// start pipeline calls it at `READY`). Failures are logged: a message taken is never
    /// delivered twice.
    pub fn deliver(&self, conversation: ConversationId) {
        let messages = match self.pending.take_pending_messages(conversation) {
            Ok(m) if m.is_empty() => return,
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(conversation = %conversation.0, error = %e, "reading pending messages failed");
                return;
            }
        };
        let Some((url, key, client)) = self.endpoint(conversation) else {
            tracing::warn!(conversation = %conversation.0, dropped = messages.len(), "pending messages dropped: the conversation's agent server is not reachable");
            return;
        };
        for m in messages {
            if let Err(e) = client
                .send_message(&url, &key, conversation, &m.body)
                .map_err(agent_failed)
            {
                tracing::warn!(conversation = %conversation.0, message = %m.id, error = %e, "delivering a pending message failed");
            }
        }
    }

    /// Drops the conversation's queued messages (its start failed).
    pub fn discard(&self, conversation: ConversationId) {
        match self.pending.take_pending_messages(conversation) {
            Ok(m) if !m.is_empty() => {
                tracing::info!(conversation = %conversation.0, dropped = m.len(), "pending messages dropped: the start failed");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(conversation = %conversation.0, error = %e, "dropping pending messages failed");
            }
        }
    }

    /// The running agent server of a conversation: URL, session key and client.
    fn endpoint(
        &self,
        conversation: ConversationId,
    ) -> Option<(
        String,
        crate::identity::session_keys::SessionKey,
        Arc<dyn crate::sandboxes::runtime::AgentServerClient>,
    )> {
        let info = self
            .store
            .app_conversations_by_ids(&[conversation])
            .ok()?
            .pop()?;
        let record = self.sandboxes.sandboxes.sandbox(info.sandbox_id?).ok()??;
        if record.status != SandboxStatus::Running {
            return None;
        }
        let client = self.sandboxes.managed().ok()?.m.client.clone();
        let (url, key) = self.sandboxes.agent_target(&record).ok()??;
        Some((url, key, client))
    }

    /// The conversation `target` names and its latest start task (`None`: a conversation
    /// without one, e.g. created by a webhook).
    fn target(
        &self,
        ctx: &OrgContext,
        target: &str,
    ) -> Result<(ConversationId, Option<StartTask>), DomainError> {
        let (raw, task_only) = match target.strip_prefix("task-") {
            Some(rest) => (rest, true),
            None => (target, false),
        };
        let uuid = parse_uuid(raw).ok_or(DomainError::ConversationNotFound)?;
        let sees = |t: &StartTask| {
            t.org_id == ctx.org.id
                && (t.created_by_user_id == ctx.principal.user_id
                    || ctx.role.grants(Permission::ViewOrgConversations))
        };
        if let Some(task) = self
            .tasks
            .start_tasks_by_ids(&[StartTaskId(uuid)])?
            .into_iter()
            .find(&sees)
        {
            return Ok((task.conversation_id, Some(task)));
        }
        if task_only {
            return Err(DomainError::ConversationNotFound);
        }
        let conversation = ConversationId(uuid);
        let task = self.latest_task(ctx, conversation)?.filter(&sees);
        if task.is_some() {
            return Ok((conversation, task));
        }
        // A conversation without a start task of the caller's: it must be one they see.
        let info = self.store.app_conversations_by_ids(&[conversation])?;
        if info.iter().any(|i| super::app::visible(ctx, i)) {
            Ok((conversation, None))
        } else {
            Err(DomainError::ConversationNotFound)
        }
    }

    /// The newest start task of the conversation in the caller's organization.
    fn latest_task(
        &self,
        ctx: &OrgContext,
        conversation: ConversationId,
    ) -> Result<Option<StartTask>, DomainError> {
        Ok(self
            .tasks
            .search_start_tasks(&StartTaskQuery {
                org: ctx.org.id,
                creator: None,
                filter: StartTaskFilter {
                    conversation_id_eq: Some(conversation),
                    created_at_gte: None,
                },
                order: crate::conversations::app::SortOrder::CreatedAtDesc,
                after: None,
                limit: 1,
            })?
            .pop())
    }
}

/// A ready conversation whose sandbox cannot take the message now (send-message's 410 and
/// 503): 409 naming why, as the message is neither queued nor delivered (OpenHands always
/// queues, so it has no such answer).
fn undeliverable(e: DomainError) -> DomainError {
    match e {
        DomainError::ConversationSandboxMissing
        | DomainError::ConversationSandboxUnavailable(_) => {
            DomainError::Conflict(format!("The message cannot be delivered: {e}"))
        }
        e => e,
    }
}

/// The refusal for a start that failed.
fn start_failed() -> DomainError {
    DomainError::Conflict("The conversation's start failed: no message can be queued for it".into())
}

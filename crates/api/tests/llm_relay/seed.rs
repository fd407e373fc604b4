//! A live conversation for a pass-through route, stored directly (the tests of
//! `tests/llm_relay.rs` and the `llm_relay` bench): a sandbox record of `user` in `org` and a
//! started conversation on it (its budget `budget`), so a route of it is found.

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::ports::{SandboxStore, StartTaskStore, StartedConversation};
use switchboard_domain::sandboxes::records::SandboxRecord;
use switchboard_domain::{ConversationId, OrgId, SandboxId, UserId};
use switchboard_storage::DieselStore;
use time::OffsetDateTime;

/// Stores the sandbox and the conversation at `now`; their ids.
///
/// # Panics
/// When the store refuses either.
pub fn seed_conversation(
    store: &DieselStore,
    (org, user): (OrgId, UserId),
    budget: Option<f64>,
    now: OffsetDateTime,
) -> (SandboxId, ConversationId) {
    let sandbox = SandboxId::new_random();
    let r = SandboxRecord::starting(
        sandbox,
        Some((org, user)),
        "default".into(),
        "process".into(),
        "sealed".into(),
        now,
    );
    store
        .insert_sandbox(&r, &SessionKey::generate().hash())
        .unwrap();
    let conversation = ConversationId::new_random();
    let started = StartedConversation {
        conversation: Conversation {
            id: conversation,
            org_id: org,
            owner_id: user,
            sandbox_id: Some(sandbox),
            title: None,
            execution_status: Some(ExecutionStatus::Running),
            created_at: now,
            updated_at: now,
        },
        selected_repository: None,
        selected_branch: None,
        git_provider: None,
        trigger: None,
        pr_number: "[]".into(),
        llm_model: Some("openai/m".into()),
        parent_conversation_id: None,
        public: None,
        tags: "{}".into(),
        max_budget_per_task: budget,
    };
    assert!(store.create_started_conversation(&started, now).unwrap());
    (sandbox, conversation)
}

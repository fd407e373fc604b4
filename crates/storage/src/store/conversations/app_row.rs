//! The row of an app conversation as both its reads (`app.rs`) and its lists (`app_search.rs`)
//! select it.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::conversations::ExecutionStatus;
use switchboard_domain::conversations::app::{AppConversationInfo, ConversationTrigger};
use time::PrimitiveDateTime;

use crate::schema::conversations;
use crate::store::rows::{from_db, parse_id, parse_opt_id};

#[derive(Queryable, Selectable)]
#[diesel(table_name = conversations)]
pub(super) struct AppConversationRow {
    pub(super) id: String,
    org_id: String,
    owner_id: String,
    sandbox_id: Option<String>,
    title: Option<String>,
    execution_status: Option<String>,
    pub(super) created_at: PrimitiveDateTime,
    pub(super) updated_at: PrimitiveDateTime,
    selected_repository: Option<String>,
    selected_branch: Option<String>,
    git_provider: Option<String>,
    conversation_trigger: Option<String>,
    pr_number: String,
    llm_model: Option<String>,
    agent_kind: String,
    parent_conversation_id: Option<String>,
    public: Option<bool>,
    tags: String,
    metrics: Option<String>,
    max_budget_per_task: Option<f64>,
    budget_reached_at: Option<PrimitiveDateTime>,
}

impl AppConversationRow {
    pub(super) fn info(self) -> Result<AppConversationInfo, StorageError> {
        let json_err = |what: &str, e: serde_json::Error| {
            StorageError::Other(format!("stored {what}: {e}").into())
        };
        Ok(AppConversationInfo {
            id: parse_id(&self.id, "conversation")?,
            org_id: parse_id(&self.org_id, "org")?,
            created_by_user_id: parse_id(&self.owner_id, "user")?,
            sandbox_id: parse_opt_id(self.sandbox_id.as_deref(), "sandbox")?,
            selected_repository: self.selected_repository,
            selected_branch: self.selected_branch,
            git_provider: self.git_provider,
            title: self.title,
            // A trigger OpenHands does not define (written by a newer version) reads as none.
            trigger: self
                .conversation_trigger
                .as_deref()
                .and_then(ConversationTrigger::parse),
            pr_number: serde_json::from_str(&self.pr_number)
                .map_err(|e| json_err("pr_number", e))?,
            llm_model: self.llm_model,
            agent_kind: self.agent_kind,
            metrics: self
                .metrics
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| json_err("metrics", e))?,
            parent_conversation_id: parse_opt_id(
                self.parent_conversation_id.as_deref(),
                "conversation",
            )?,
            sub_conversation_ids: Vec::new(),
            public: self.public,
            tags: serde_json::from_str(&self.tags).map_err(|e| json_err("tags", e))?,
            execution_status: self
                .execution_status
                .as_deref()
                .and_then(ExecutionStatus::parse),
            max_budget_per_task: self.max_budget_per_task,
            budget_reached: self.budget_reached_at.is_some(),
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
        })
    }
}

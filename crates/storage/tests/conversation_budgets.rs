//! Conversations' budgets on both backends (API.md, "Budgets"): the budget a start records is
//! read back with the conversation; the mark that stops a conversation is won once, by one of
//! concurrent callers, only at or over the budget and never for a finished conversation; the
//! sweep lists the stopped conversations still reported `running` within its window.

use std::sync::Arc;

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::ports::{
    AppConversationStore, BudgetStore, StartTaskStore, StartedConversation,
};
use switchboard_domain::{ConversationId, OrgId, Switchboard, UserId};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::{Duration, OffsetDateTime};

fn started(org: OrgId, owner: UserId, budget: Option<f64>) -> StartedConversation {
    let now = OffsetDateTime::now_utc();
    StartedConversation {
        conversation: Conversation {
            id: ConversationId::new_random(),
            org_id: org,
            owner_id: owner,
            sandbox_id: None,
            title: Some("budget".into()),
            execution_status: Some(ExecutionStatus::Running),
            created_at: now,
            updated_at: now,
        },
        selected_repository: None,
        selected_branch: None,
        git_provider: None,
        trigger: None,
        pr_number: "[]".into(),
        llm_model: None,
        parent_conversation_id: None,
        public: None,
        tags: "{}".into(),
        max_budget_per_task: budget,
    }
}

fn budgets(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let boot = Switchboard::new(store.clone())
        .operator()
        .bootstrap("Budgets", "b@example.com")
        .unwrap();
    let now = OffsetDateTime::now_utc();
    let new = |budget: Option<f64>| {
        let s = started(boot.org_id, boot.user_id, budget);
        assert!(store.create_started_conversation(&s, now).unwrap());
        s.conversation.id
    };

    // Recorded at the start, read back unmarked.
    let a = new(Some(0.5));
    let read = store.conversation_budget(a).unwrap().unwrap();
    assert_eq!(read.max_budget_per_task, Some(0.5), "{backend}");
    assert_eq!(read.reached_at, None, "{backend}");
    assert_eq!(read.conversation.org_id, boot.org_id, "{backend}");
    let info = store.app_conversations_by_ids(&[a]).unwrap().pop().unwrap();
    assert_eq!(
        (info.max_budget_per_task, info.budget_reached),
        (Some(0.5), false),
        "{backend}"
    );

    // Under the budget: no mark. At it: one mark, once, among concurrent callers.
    assert!(
        !store.mark_budget_reached(a, 0.49, now).unwrap(),
        "{backend}"
    );
    let wins: usize = std::thread::scope(|s| {
        let tries: Vec<_> = (0..8)
            .map(|_| s.spawn(|| store.mark_budget_reached(a, 0.5, now).unwrap()))
            .collect();
        tries
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum()
    });
    assert_eq!(wins, 1, "{backend}");
    assert!(
        !store.mark_budget_reached(a, 9.0, now).unwrap(),
        "{backend}"
    );
    let read = store.conversation_budget(a).unwrap().unwrap();
    assert!(read.reached_at.is_some(), "{backend}");
    let info = store.app_conversations_by_ids(&[a]).unwrap().pop().unwrap();
    assert!(info.budget_reached, "{backend}");
    // The stored run state is the agent server's still.
    assert_eq!(
        info.execution_status,
        Some(ExecutionStatus::Running),
        "{backend}"
    );

    // No budget, or finished: never marked.
    let b = new(None);
    assert!(
        !store.mark_budget_reached(b, 9.0, now).unwrap(),
        "{backend}"
    );
    let mut done = started(boot.org_id, boot.user_id, Some(0.1));
    done.conversation.execution_status = Some(ExecutionStatus::Finished);
    assert!(store.create_started_conversation(&done, now).unwrap());
    let c = done.conversation.id;
    assert!(
        !store.mark_budget_reached(c, 9.0, now).unwrap(),
        "{backend}"
    );
    assert!(
        !store
            .mark_budget_reached(ConversationId::new_random(), 9.0, now)
            .unwrap(),
        "{backend}"
    );

    // The sweep: `a` was marked at `now` and reports `running`.
    let listed = |after: Duration, before: Duration| {
        store
            .budget_stops_running(now - after, now + before, 10)
            .unwrap()
    };
    assert_eq!(
        listed(Duration::minutes(1), Duration::seconds(1)),
        [a],
        "{backend}"
    );
    assert!(
        listed(Duration::minutes(1), Duration::seconds(-1)).is_empty(),
        "{backend}"
    );
    assert!(
        listed(Duration::seconds(-1), Duration::minutes(1)).is_empty(),
        "{backend}"
    );
}

#[test]
fn budgets_sqlite() {
    budgets(Backend::Sqlite);
}

#[test]
fn budgets_postgres() {
    budgets(Backend::Postgres);
}

//! A conversation's metrics never go back, on both backends (issue 31, found by CI): the stream
//! path, the pull path and the webhooks report one conversation's metrics in any order (a pause
//! drains the events after storing the `ConversationInfo`, whose `stats` already count the
//! title's LLM call that no event reports), so a snapshot replaces the stored one only when it
//! counts at least as many tokens, through the event append and the info upsert alike.

use std::sync::Arc;

use serde_json::json;
use switchboard_domain::conversations::{Conversation, RunDetails};
use switchboard_domain::events::prepare_batch;
use switchboard_domain::ports::{AppConversationStore, Append, ConversationStore, EventStore};
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

fn details(prompt: Option<u64>) -> RunDetails {
    let usage = prompt.map_or(
        json!(null),
        |p| json!({"prompt_tokens": p, "completion_tokens": 10}),
    );
    RunDetails {
        llm_model: None,
        metrics: Some(
            json!({"model_name": "default", "accumulated_token_usage": usage}).to_string(),
        ),
    }
}

fn stored_prompt(store: &DieselStore, id: ConversationId) -> Option<u64> {
    let info = store.app_conversations_by_ids(&[id]).unwrap().pop()?;
    let metrics = info.metrics?;
    metrics["accumulated_token_usage"]["prompt_tokens"].as_u64()
}

fn never_back(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let boot = Switchboard::new(store.clone())
        .operator()
        .bootstrap("Metrics", "m@example.com")
        .unwrap();
    let conv = Conversation {
        id: ConversationId::new_random(),
        org_id: boot.org_id,
        owner_id: boot.user_id,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: OffsetDateTime::now_utc(),
        updated_at: OffsetDateTime::now_utc(),
    };
    let mut n = 0;
    let mut append = |prompt: Option<u64>| {
        n += 1;
        let batch = format!(
            r#"[{{"id":"e{n}","timestamp":"2026-11-21T10:00:{n:02}","source":"user","kind":"PauseEvent"}}]"#
        );
        store
            .append_events(Append {
                conversation: conv.clone(),
                events: prepare_batch(&batch).unwrap().events,
                status: None,
                details: details(prompt),
                now: OffsetDateTime::now_utc(),
            })
            .unwrap()
            .unwrap();
    };
    append(Some(300));
    assert_eq!(stored_prompt(&store, conv.id), Some(300), "{backend}");
    let info = |prompt: Option<u64>| {
        assert!(
            store
                .upsert_conversation_info(
                    &conv,
                    &details(prompt),
                    &json!({"id": conv.id.to_string(), "n": prompt}).to_string(),
                    OffsetDateTime::now_utc(),
                )
                .unwrap()
        );
    };
    // The info counts the title's call too; the drain's events after it count less.
    info(Some(410));
    assert_eq!(stored_prompt(&store, conv.id), Some(410), "{backend}");
    append(Some(300));
    assert_eq!(
        stored_prompt(&store, conv.id),
        Some(410),
        "{backend}: an append went back"
    );
    info(Some(350));
    assert_eq!(
        stored_prompt(&store, conv.id),
        Some(410),
        "{backend}: an info went back"
    );
    // Metrics that do not count tokens do not replace counted ones.
    append(None);
    info(None);
    assert_eq!(stored_prompt(&store, conv.id), Some(410), "{backend}");
    // Forward, by either path.
    append(Some(500));
    assert_eq!(stored_prompt(&store, conv.id), Some(500), "{backend}");
    info(Some(600));
    assert_eq!(stored_prompt(&store, conv.id), Some(600), "{backend}");
}

#[test]
fn metrics_never_go_back_sqlite() {
    never_back(Backend::Sqlite);
}

#[test]
fn metrics_never_go_back_postgres() {
    never_back(Backend::Postgres);
}

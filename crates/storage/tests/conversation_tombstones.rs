//! A deleted conversation stays deleted, on both backends: after the API's delete, neither the
//! agent server's `ConversationInfo` (its `deleting` info arrives after the delete when the
//! webhook races it) nor a late event batch creates it again; a conversation never deleted is
//! still created by either; the tombstone is pruned by upkeep only after 30 days.

use std::sync::Arc;

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::events::prepare_batch;
use switchboard_domain::ports::{AppConversationStore, Append, ConversationStore, EventStore};
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

fn append(conv: &Conversation, from: usize) -> Append {
    let events: Vec<String> = (from..from + 3)
        .map(|i| {
            format!(
                r#"{{"id":"e{i}","timestamp":"2026-11-21T10:00:{i:02}","source":"user","kind":"PauseEvent"}}"#
            )
        })
        .collect();
    Append {
        conversation: conv.clone(),
        events: prepare_batch(&format!("[{}]", events.join(",")))
            .unwrap()
            .events,
        status: Some(ExecutionStatus::Running),
        details: Default::default(),
        now: OffsetDateTime::now_utc(),
    }
}

fn info(store: &DieselStore, conv: &Conversation, status: &str) -> bool {
    let mut c = conv.clone();
    c.execution_status = ExecutionStatus::parse(status);
    store
        .upsert_conversation_info(
            &c,
            &Default::default(),
            &format!(r#"{{"id":"{}","execution_status":"{status}"}}"#, conv.id),
            OffsetDateTime::now_utc(),
        )
        .unwrap()
}

fn stays_deleted(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let boot = Switchboard::new(store.clone())
        .operator()
        .bootstrap("Tombstones", "t@example.com")
        .unwrap();
    let conv = |n: u128| Conversation {
        id: ConversationId(uuid::Uuid::from_u128(n)),
        org_id: boot.org_id,
        owner_id: boot.user_id,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: OffsetDateTime::now_utc(),
        updated_at: OffsetDateTime::now_utc(),
    };
    let (gone, kept) = (conv(1), conv(2));
    for c in [&gone, &kept] {
        let out = store.append_events(append(c, 0)).unwrap().unwrap();
        assert_eq!(out.stored, 3, "{backend}");
    }
    let deleted = store.delete_app_conversation(gone.id).unwrap().unwrap();
    assert_eq!(deleted.events, 3, "{backend}");

    // The agent server's last word and a late batch: refused, nothing stored.
    assert!(!info(&store, &gone, "deleting"), "{backend}");
    assert!(!info(&store, &gone, "finished"), "{backend}");
    assert_eq!(
        store.append_events(append(&gone, 3)).unwrap(),
        None,
        "{backend}"
    );
    assert!(store.conversation(gone.id).unwrap().is_none(), "{backend}");
    assert_eq!(store.event_count(gone.id).unwrap(), 0, "{backend}");
    // A second delete finds nothing (and the tombstone stays).
    assert!(store.delete_app_conversation(gone.id).unwrap().is_none());
    assert_eq!(
        store.append_events(append(&gone, 6)).unwrap(),
        None,
        "{backend}"
    );

    // Others are untouched: updated by both paths, and a new one is created by an info.
    assert!(info(&store, &kept, "finished"), "{backend}");
    assert_eq!(
        store
            .append_events(append(&kept, 3))
            .unwrap()
            .unwrap()
            .stored,
        3
    );
    let fresh = conv(3);
    assert!(info(&store, &fresh, "idle"), "{backend}");
    assert!(store.conversation(fresh.id).unwrap().is_some(), "{backend}");

    // Upkeep keeps a tombstone younger than 30 days.
    store.upkeep().unwrap();
    assert!(!info(&store, &gone, "idle"), "{backend}");
}

#[test]
fn deleted_conversation_stays_deleted_sqlite() {
    stays_deleted(Backend::Sqlite);
}

#[test]
fn deleted_conversation_stays_deleted_postgres() {
    stays_deleted(Backend::Postgres);
}

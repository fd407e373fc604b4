//! Pending messages (issue 22) on both backends: at most `max` are queued per conversation,
//! their positions count from 1, a take returns them oldest first and empties the queue, and
//! of 8 concurrent takers of one queue each message goes to exactly one.

use std::sync::Arc;

use serde_json::json;
use switchboard_domain::conversations::workspace::PendingMessage;
use switchboard_domain::ports::PendingMessageStore;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};

fn message(
    conversation: ConversationId,
    boot: &switchboard_domain::Bootstrapped,
    n: u32,
) -> PendingMessage {
    PendingMessage {
        id: uuid::Uuid::new_v4(),
        conversation_id: conversation,
        org_id: boot.org_id,
        created_by_user_id: boot.user_id,
        body: json!({"role": "user", "content": [{"type": "text", "text": format!("m{n}")}], "run": true}),
        created_at: now_micros() + time::Duration::microseconds(i64::from(n)),
    }
}

fn queue_and_take(backend: Backend) {
    let db = TestDatabase::new(backend);
    let (store, _) = DieselStore::open(db.url(), None).unwrap();
    let store = Arc::new(store);
    let boot = Switchboard::new(store.clone())
        .operator()
        .bootstrap("Pending", "pending@example.com")
        .unwrap();
    let c = ConversationId::new_random();
    let other = ConversationId::new_random();
    for n in 1..=3 {
        assert_eq!(
            store
                .queue_pending_message(&message(c, &boot, n), 3)
                .unwrap(),
            Some(u64::from(n)),
            "{backend}"
        );
    }
    assert_eq!(
        store
            .queue_pending_message(&message(c, &boot, 4), 3)
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .queue_pending_message(&message(other, &boot, 1), 3)
            .unwrap(),
        Some(1)
    );
    let taken = store.take_pending_messages(c).unwrap();
    let texts: Vec<_> = taken
        .iter()
        .map(|m| m.body["content"][0]["text"].clone())
        .collect();
    assert_eq!(texts, [json!("m1"), json!("m2"), json!("m3")], "{backend}");
    assert!(store.take_pending_messages(c).unwrap().is_empty());
    assert_eq!(store.take_pending_messages(other).unwrap().len(), 1);

    // Concurrent takers: every message once.
    for n in 0..10 {
        store
            .queue_pending_message(&message(c, &boot, n), 10)
            .unwrap();
    }
    let takers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || store.take_pending_messages(c).unwrap())
        })
        .collect();
    let mut all: Vec<uuid::Uuid> = takers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .map(|m| m.id)
        .collect();
    assert_eq!(all.len(), 10, "{backend}");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 10, "{backend}: a message was taken twice");
}

#[test]
fn pending_messages_sqlite() {
    queue_and_take(Backend::Sqlite);
}

#[test]
fn pending_messages_postgres() {
    queue_and_take(Backend::Postgres);
}

//! Group commit of appends under concurrency, on both backends: concurrent appends (with
//! retried batches, repeated ids and another organization's conversation in the mix) store
//! every event exactly once, report exactly what they stored, and never write into another
//! organization's conversation.

use std::sync::Arc;

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::events::{NewEvent, prepare_batch};
use switchboard_domain::ports::{Append, ConversationStore, EventStore};
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

fn batch(conv: usize, from: usize, to: usize) -> Vec<NewEvent> {
    let events: Vec<String> = (from..to)
        .map(|i| {
            format!(
                r#"{{"id":"c{conv}-e{i}","timestamp":"2026-11-21T10:{:02}:{:02}.{:06}","source":"user","kind":"PauseEvent"}}"#,
                (i / 60) % 60,
                i % 60,
                i
            )
        })
        .collect();
    prepare_batch(&format!("[{}]", events.join(",")))
        .unwrap()
        .events
}

fn run(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let services = Switchboard::new(store.clone());
    let a = services.operator().bootstrap("A", "a@example.com").unwrap();
    let b = services.operator().bootstrap("B", "b@example.com").unwrap();
    let conv = |n: u128, org, owner| Conversation {
        id: ConversationId(uuid::Uuid::from_u128(n)),
        org_id: org,
        owner_id: owner,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: OffsetDateTime::now_utc(),
        updated_at: OffsetDateTime::now_utc(),
    };
    // Conversation 3 exists in org B.
    let theirs = conv(3, b.org_id, b.user_id);
    store
        .append_events(Append {
            conversation: theirs.clone(),
            events: batch(3, 0, 1),
            status: None,
            details: Default::default(),
            now: OffsetDateTime::now_utc(),
        })
        .unwrap()
        .unwrap();

    // 24 writers; each sends 10 batches of 5 to conversation 1 or 2 (org A), every batch twice
    // (a retry), and one batch to conversation 3 as org A (refused).
    let threads: Vec<_> = (0..24)
        .map(|w| {
            let store = store.clone();
            let mine = conv(1 + (w % 2) as u128, a.org_id, a.user_id);
            let intruder = conv(3, a.org_id, a.user_id);
            std::thread::spawn(move || {
                let mut stored = 0;
                for k in 0..10 {
                    let from = (w / 2) * 50 + k * 5;
                    for _ in 0..2 {
                        let out = store
                            .append_events(Append {
                                conversation: mine.clone(),
                                events: batch(1 + w % 2, from, from + 5),
                                status: Some(ExecutionStatus::Running),
                                details: Default::default(),
                                now: OffsetDateTime::now_utc(),
                            })
                            .unwrap()
                            .unwrap();
                        assert_eq!(out.stored + out.skipped, 5);
                        stored += out.stored;
                    }
                }
                let refused = store
                    .append_events(Append {
                        conversation: intruder,
                        events: batch(3, 100 + w, 101 + w),
                        status: None,
                        details: Default::default(),
                        now: OffsetDateTime::now_utc(),
                    })
                    .unwrap();
                assert_eq!(refused, None, "another org's conversation");
                stored
            })
        })
        .collect();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        total,
        24 * 10 * 5,
        "{backend}: every event stored exactly once across retries"
    );
    for c in [1u128, 2] {
        let id = ConversationId(uuid::Uuid::from_u128(c));
        let filter = switchboard_domain::events::EventFilter::default();
        assert_eq!(
            store.count_events(id, &filter).unwrap(),
            12 * 10 * 5,
            "{backend}: conversation {c}"
        );
        // Positions are dense from 0, in append order, whatever the concurrency.
        let mut positions = Vec::new();
        let mut after = -1;
        loop {
            let page = store.events_after(id, after, None, 97).unwrap();
            let Some(last) = page.last() else { break };
            after = last.position;
            positions.extend(page.iter().map(|e| e.position));
        }
        assert_eq!(
            positions,
            (0..12 * 10 * 5).collect::<Vec<i64>>(),
            "{backend}: conversation {c} positions"
        );
        assert_eq!(store.event_count(id).unwrap(), 12 * 10 * 5);
        let by_kind = switchboard_domain::events::EventFilter {
            kind: Some(switchboard_model::EventKind::PauseEvent),
            ..Default::default()
        };
        assert_eq!(store.count_events(id, &by_kind).unwrap(), 12 * 10 * 5);
        assert_eq!(
            store
                .conversation(id)
                .unwrap()
                .unwrap()
                .execution_status
                .map(ExecutionStatus::as_str),
            Some("running")
        );
    }
    let filter = switchboard_domain::events::EventFilter::default();
    assert_eq!(
        store.count_events(theirs.id, &filter).unwrap(),
        1,
        "{backend}: nothing written into org B's conversation"
    );
}

#[test]
fn sqlite_group_commit() {
    run(Backend::Sqlite);
}

#[test]
fn postgres_group_commit() {
    run(Backend::Postgres);
}

//! Event storage quotas and the disk reserve (issue 33), on both backends: a batch that would
//! take its conversation past its event or byte quota, or its organization past its byte
//! quota, stores none of its events and leaves one `ConversationErrorEvent` saying why (once);
//! repeats of stored ids pass whatever the quota; another organization is untouched; a delete
//! gives its organization's bytes back; concurrent appends never pass a quota together; under
//! the disk reserve nothing is written while reads and deletes go on.

use std::sync::Arc;

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::event_quota::{AppendRefusal, EventQuota, QuotaMeasure, QuotaScope};
use switchboard_domain::events::{AppendOutcome, prepare_batch, quota_notice_id};
use switchboard_domain::ports::{AppConversationStore, Append, ConversationStore, EventStore};
use switchboard_domain::{ConversationId, OrgId, Switchboard, UserId};
use switchboard_storage::{DieselStore, DiskReserve};
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

/// `n` events `from..from + n` of conversation `conv`, each with `pad` bytes of text.
fn append(conv: &Conversation, from: usize, n: usize, pad: usize) -> Append {
    let events: Vec<String> = (from..from + n)
        .map(|i| {
            format!(
                r#"{{"id":"e{i}","timestamp":"2026-11-21T10:00:00","source":"user","kind":"MessageEvent","llm_message":{{"role":"user","content":[{{"type":"text","text":"{}"}}]}}}}"#,
                "x".repeat(pad)
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

fn bytes(a: &Append) -> i64 {
    a.events.iter().map(|e| e.payload.len() as i64).sum()
}

fn conversation(org: OrgId, owner: UserId) -> Conversation {
    Conversation {
        id: ConversationId::new_random(),
        org_id: org,
        owner_id: owner,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: OffsetDateTime::now_utc(),
        updated_at: OffsetDateTime::now_utc(),
    }
}

fn refusal(out: &AppendOutcome) -> (QuotaScope, QuotaMeasure, i64, i64) {
    match out.refused {
        Some(AppendRefusal::Quota(q)) => (q.scope, q.measure, q.limit, q.used),
        other => panic!("not a quota refusal: {other:?}"),
    }
}

fn quotas(backend: Backend) {
    let db = TestDatabase::new(backend);
    let (opened, _) = DieselStore::open(db.url(), None).unwrap();
    let boot = Switchboard::new(Arc::new(opened.clone()))
        .operator()
        .bootstrap("Quotas", "q@example.com")
        .unwrap();
    let other = Switchboard::new(Arc::new(opened.clone()))
        .operator()
        .bootstrap("Others", "o@example.com")
        .unwrap();

    // Events per conversation: 9 fit, 3 more would make 12 of 10.
    let store = opened.clone().with_event_quota(EventQuota {
        max_events_per_conversation: Some(10),
        ..EventQuota::UNLIMITED
    });
    let a = conversation(boot.org_id, boot.user_id);
    for from in [0, 3, 6] {
        let out = store
            .append_events(append(&a, from, 3, 10))
            .unwrap()
            .unwrap();
        assert_eq!((out.stored, out.refused), (3, None), "{backend}");
    }
    let out = store.append_events(append(&a, 9, 3, 10)).unwrap().unwrap();
    assert_eq!(out.stored, 0, "{backend}");
    assert_eq!(
        refusal(&out),
        (QuotaScope::Conversation, QuotaMeasure::Events, 10, 9),
        "{backend}"
    );
    // The conversation says why, once: its notice is its tenth event.
    let notice = store.get_events(a.id, &[quota_notice_id(a.id)]).unwrap();
    assert_eq!(notice.len(), 1, "{backend}");
    assert!(
        notice[0]
            .payload
            .contains(r#""kind":"ConversationErrorEvent""#)
            && notice[0].payload.contains("--max-events-per-conversation"),
        "{backend}: {}",
        notice[0].payload
    );
    assert_eq!(store.event_count(a.id).unwrap(), 10, "{backend}");
    let again = store.append_events(append(&a, 9, 1, 10)).unwrap().unwrap();
    assert_eq!(refusal(&again).3, 10, "{backend}: the notice counts");
    assert_eq!(
        store.event_count(a.id).unwrap(),
        10,
        "{backend}: one notice"
    );
    // The refused batch's run state was not applied (nor its events).
    assert!(
        store.get_events(a.id, &["e9".into()]).unwrap().is_empty(),
        "{backend}"
    );
    // Ids already stored add nothing, so nothing is refused.
    let repeat = store.append_events(append(&a, 0, 3, 10)).unwrap().unwrap();
    assert_eq!((repeat.stored, repeat.refused), (0, None), "{backend}");

    // Bytes per conversation: one batch over the limit alone is refused, a new conversation
    // stored with nothing but its notice.
    let b = conversation(boot.org_id, boot.user_id);
    let big = append(&b, 0, 2, 2000);
    let store_b = opened.clone().with_event_quota(EventQuota {
        max_bytes_per_conversation: Some(bytes(&big) - 1),
        ..EventQuota::UNLIMITED
    });
    let out = store_b.append_events(big.clone()).unwrap().unwrap();
    assert_eq!(
        refusal(&out),
        (
            QuotaScope::Conversation,
            QuotaMeasure::Bytes,
            bytes(&big) - 1,
            0
        ),
        "{backend}"
    );
    assert_eq!(store_b.event_count(b.id).unwrap(), 1, "{backend}");
    let small = store_b
        .append_events(append(&b, 5, 1, 10))
        .unwrap()
        .unwrap();
    assert_eq!(small.stored, 1, "{backend}: under the limit still stored");

    // Bytes per organization: what the org holds now, plus one small batch.
    let held: i64 = [&a, &b]
        .iter()
        .map(|c| {
            store
                .events_after(c.id, -1, None, 1000)
                .unwrap()
                .iter()
                .map(|e| e.payload.len() as i64)
                .sum::<i64>()
        })
        .sum();
    let c = conversation(boot.org_id, boot.user_id);
    let first = append(&c, 0, 1, 100);
    let store_org = opened.clone().with_event_quota(EventQuota {
        max_bytes_per_org: Some(held + bytes(&first)),
        ..EventQuota::UNLIMITED
    });
    let out = store_org.append_events(first).unwrap().unwrap();
    assert_eq!(
        (out.stored, out.refused),
        (1, None),
        "{backend}: exactly at the limit"
    );
    let out = store_org
        .append_events(append(&c, 1, 1, 100))
        .unwrap()
        .unwrap();
    let (scope, _, _, used) = refusal(&out);
    assert_eq!(
        (scope, used),
        (
            QuotaScope::Organization,
            held + bytes(&append(&c, 0, 1, 100))
        ),
        "{backend}: the organization's bytes, counted exactly"
    );
    // Another organization is untouched.
    let d = conversation(other.org_id, other.user_id);
    let out = store_org
        .append_events(append(&d, 0, 3, 100))
        .unwrap()
        .unwrap();
    assert_eq!((out.stored, out.refused), (3, None), "{backend}");
    // A delete gives the organization its bytes back.
    store_org.delete_app_conversation(b.id).unwrap().unwrap();
    store_org.delete_app_conversation(a.id).unwrap().unwrap();
    let out = store_org
        .append_events(append(&c, 1, 1, 100))
        .unwrap()
        .unwrap();
    assert_eq!((out.stored, out.refused), (1, None), "{backend}");

    // Concurrent appends near the limit: together they never pass it.
    let e = conversation(boot.org_id, boot.user_id);
    let store_e = Arc::new(opened.clone().with_event_quota(EventQuota {
        max_events_per_conversation: Some(50),
        ..EventQuota::UNLIMITED
    }));
    let threads: Vec<_> = (0..10)
        .map(|t| {
            let (store, e) = (store_e.clone(), e.clone());
            std::thread::spawn(move || {
                (0..3)
                    .map(|k| {
                        let from = (t * 3 + k) * 10;
                        store
                            .append_events(append(&e, from, 10, 10))
                            .unwrap()
                            .unwrap()
                            .stored
                    })
                    .sum::<usize>()
            })
        })
        .collect();
    let stored: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(stored, 50, "{backend}");
    assert_eq!(
        store_e.event_count(e.id).unwrap(),
        51,
        "{backend}: 50 and the notice"
    );
    let conv = store_e.conversation(e.id).unwrap().unwrap();
    assert_eq!(conv.org_id, boot.org_id);

    // The disk reserve: more than any disk has free; nothing written, reads and deletes go on.
    let dir = tempfile::tempdir().unwrap();
    let full = opened.clone().with_disk_reserve(DiskReserve {
        path: dir.path().to_owned(),
        reserve: u64::MAX,
        database: None,
    });
    let f = conversation(boot.org_id, boot.user_id);
    let out = full.append_events(append(&f, 0, 1, 10)).unwrap().unwrap();
    assert!(
        matches!(
            out.refused,
            Some(AppendRefusal::DiskReserve {
                reserve: u64::MAX,
                ..
            })
        ),
        "{backend}: {out:?}"
    );
    assert!(
        full.conversation(f.id).unwrap().is_none(),
        "{backend}: nothing written"
    );
    assert_eq!(
        full.event_count(e.id).unwrap(),
        51,
        "{backend}: reads go on"
    );
    assert!(
        full.delete_app_conversation(e.id).unwrap().is_some(),
        "{backend}"
    );
    let (free, reserve) = full.disk_free().unwrap();
    assert!(free > 0 && reserve == u64::MAX, "{backend}");
    let roomy = opened.with_disk_reserve(DiskReserve {
        path: dir.path().to_owned(),
        reserve: 0,
        database: None,
    });
    let out = roomy.append_events(append(&f, 0, 1, 10)).unwrap().unwrap();
    assert_eq!((out.stored, out.refused), (1, None), "{backend}");
}

#[test]
fn event_quotas_sqlite() {
    quotas(Backend::Sqlite);
}

#[test]
fn event_quotas_postgres() {
    quotas(Backend::Postgres);
}

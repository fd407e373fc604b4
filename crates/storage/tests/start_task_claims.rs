//! Claims on start tasks (issue 20; API.md, "App conversations: start") on both backends: ten
//! replicas claiming at once take every `WORKING` task exactly once, oldest first; a renewal
//! extends only the owner's unfinished claims; the stale tasks are those whose claim lapsed,
//! those of a named owner, and those past `WORKING` without a claim; a final task never moves
//! again.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use switchboard_domain::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use switchboard_domain::ports::{StaleStarts, StartClaim, StartTaskStore};
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ConversationId, OrgId, Switchboard, UserId};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

fn task(org: OrgId, user: UserId, status: StartTaskStatus, at: OffsetDateTime) -> StartTask {
    StartTask {
        id: StartTaskId(uuid::Uuid::new_v4()),
        org_id: org,
        created_by_user_id: user,
        status,
        detail: None,
        conversation_id: ConversationId::new_random(),
        sandbox_id: None,
        agent_server_url: None,
        request: json!({}),
        secrets_sealed: None,
        created_at: at,
        updated_at: at,
    }
}

fn claim(owner: &str, lease: Duration) -> StartClaim {
    StartClaim {
        owner: owner.to_owned(),
        until: now_micros() + lease,
    }
}

fn ids(tasks: &[StartTask]) -> HashSet<StartTaskId> {
    tasks.iter().map(|t| t.id).collect()
}

fn claims(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let boot = Switchboard::new(store.clone())
        .operator()
        .bootstrap("Claims", "claims@example.com")
        .unwrap();
    let (org, user) = (boot.org_id, boot.user_id);
    let start = now_micros() - Duration::from_secs(60);
    let working: Vec<StartTask> = (0..20u64)
        .map(|i| {
            task(
                org,
                user,
                StartTaskStatus::Working,
                start + Duration::from_secs(i),
            )
        })
        .collect();
    for t in &working {
        store.insert_start_task(t).unwrap();
    }
    // An old task past WORKING that was never claimed (written before claims existed).
    let orphan = task(org, user, StartTaskStatus::PreparingRepository, start);
    store.insert_start_task(&orphan).unwrap();

    // Ten replicas claim at once until nothing is left: each task exactly once.
    let barrier = Arc::new(Barrier::new(10));
    let handles: Vec<_> = (0..10)
        .map(|r| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let owner = format!("replica-{r}");
                let mut got = Vec::new();
                while let Some(t) = store
                    .claim_start_task(&claim(&owner, Duration::from_secs(60)))
                    .unwrap()
                {
                    got.push(t.id);
                }
                (owner, got)
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut by_owner = Vec::new();
    for h in handles {
        let (owner, got) = h.join().unwrap();
        for id in &got {
            assert!(seen.insert(*id), "{backend}: {id} claimed twice");
        }
        by_owner.push((owner, got));
    }
    assert_eq!(seen, ids(&working), "{backend}: every WORKING task, once");
    assert!(
        store
            .claim_start_task(&claim("late", Duration::from_secs(60)))
            .unwrap()
            .is_none()
    );

    // Nothing has lapsed: the stale tasks are the orphan alone, plus a named owner's claims.
    let now = now_micros();
    let stale = store
        .stale_start_tasks(&StaleStarts { now, owner: None })
        .unwrap();
    assert_eq!(ids(&stale), HashSet::from([orphan.id]), "{backend}");
    let (owner, mine) = by_owner
        .iter()
        .find(|(_, got)| !got.is_empty())
        .cloned()
        .unwrap();
    let stale = store
        .stale_start_tasks(&StaleStarts {
            now,
            owner: Some(owner.clone()),
        })
        .unwrap();
    let mut want: HashSet<_> = mine.iter().copied().collect();
    want.insert(orphan.id);
    assert_eq!(
        ids(&stale),
        want,
        "{backend}: the owner's claims and the orphan"
    );

    // A claim renewed into the past lapses; another owner's renewal does not touch it.
    let past = StartClaim {
        owner: owner.clone(),
        until: now_micros() - Duration::from_secs(1),
    };
    store.renew_start_task_claims(&past, &mine).unwrap();
    let other = StartClaim {
        owner: "someone-else".into(),
        until: now_micros() + Duration::from_secs(600),
    };
    store.renew_start_task_claims(&other, &mine).unwrap();
    let stale = store
        .stale_start_tasks(&StaleStarts {
            now: now_micros(),
            owner: None,
        })
        .unwrap();
    assert_eq!(ids(&stale), want, "{backend}: lapsed claims are stale");

    // A final task never moves again, and is no longer stale.
    let mut done = store.start_tasks_by_ids(&[mine[0]]).unwrap().pop().unwrap();
    done.status = StartTaskStatus::Error;
    done.detail = Some("closed".into());
    assert!(store.update_start_task(&done).unwrap());
    done.status = StartTaskStatus::Ready;
    assert!(!store.update_start_task(&done).unwrap(), "{backend}");
    let stored = store.start_tasks_by_ids(&[mine[0]]).unwrap().pop().unwrap();
    assert_eq!(stored.status, StartTaskStatus::Error, "{backend}");
    let stale = store
        .stale_start_tasks(&StaleStarts {
            now: now_micros(),
            owner: None,
        })
        .unwrap();
    assert!(!ids(&stale).contains(&mine[0]), "{backend}");
}

#[test]
fn sqlite_claims() {
    claims(Backend::Sqlite);
}

#[test]
fn postgres_claims() {
    claims(Backend::Postgres);
}

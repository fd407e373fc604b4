//! Sandbox grouping's transaction (docs/API.md, "Sandbox grouping") on both backends: ten of a
//! member's starts joining at once never fill a sandbox past the cap; only the member's own,
//! managed, live sandboxes of the spec asked for are candidates, a paused one only when no
//! live one has room; a start that ended no longer holds its sandbox; and a start that starts
//! a sandbox is bound to it in the same transaction.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use switchboard_domain::Role;
use switchboard_domain::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::ports::{
    AppConversationStore, JoinSandbox, RunningLimit, SandboxStore, StartOutcome, StartSandbox,
    StartTaskStore,
};
use switchboard_domain::sandboxes::grouping::SandboxGrouping;
use switchboard_domain::sandboxes::quotas::SandboxQuota;
use switchboard_domain::sandboxes::records::{EXTERNAL_RUNTIME, SandboxRecord};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ConversationId, OrgId, SandboxId, Switchboard, UserId};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};

fn task(org: OrgId, user: UserId) -> StartTask {
    let now = now_micros();
    StartTask {
        id: StartTaskId(uuid::Uuid::new_v4()),
        org_id: org,
        created_by_user_id: user,
        status: StartTaskStatus::WaitingForSandbox,
        detail: None,
        conversation_id: ConversationId::new_random(),
        sandbox_id: None,
        agent_server_url: None,
        request: json!({}),
        secrets_sealed: None,
        created_at: now,
        updated_at: now,
    }
}

/// A managed sandbox of `owner` (`None`: the warm pool's) in `status`, created `age` ago.
fn sandbox(
    store: &DieselStore,
    owner: Option<(OrgId, UserId)>,
    spec: &str,
    status: SandboxStatus,
    age: Duration,
) -> SandboxId {
    let id = SandboxId::new_random();
    let mut r = SandboxRecord::starting(
        id,
        owner,
        spec.into(),
        "process".into(),
        "sealed".into(),
        now_micros() - age,
    );
    r.status = status;
    store
        .insert_sandbox(&r, &SessionKey::generate().hash())
        .unwrap();
    id
}

fn join(task: &StartTask, spec: Option<&str>, cap: u32) -> JoinSandbox {
    JoinSandbox {
        task: task.id,
        org: task.org_id,
        owner: task.created_by_user_id,
        spec_id: spec.map(str::to_owned),
        strategy: SandboxGrouping::GroupByNewest,
        max_conversations: cap,
        now: now_micros(),
    }
}

fn joined(
    store: &DieselStore,
    task: &StartTask,
    spec: Option<&str>,
    cap: u32,
) -> Option<SandboxId> {
    store
        .join_sandbox(&join(task, spec, cap))
        .unwrap()
        .map(|r| r.id)
}

fn bound_to(store: &DieselStore, task: &StartTask) -> Option<SandboxId> {
    store.start_tasks_by_ids(&[task.id]).unwrap()[0].sandbox_id
}

fn grouping(backend: Backend) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let services = Switchboard::new(store.clone());
    let boot = services
        .operator()
        .bootstrap("Grouping", "grouping@example.com")
        .unwrap();
    let (org, user) = (boot.org_id, boot.user_id);
    let other = services
        .operator()
        .create_user("other@example.com", None)
        .unwrap()
        .id;
    services
        .operator()
        .add_member(org, other, Role::Member)
        .unwrap();
    let hour = Duration::from_secs(3600);

    // Not candidates: another member's sandbox, a warm-pool one, a registered one, a failed
    // one, each newer than the member's own.
    sandbox(
        &store,
        Some((org, other)),
        "a",
        SandboxStatus::Running,
        Duration::ZERO,
    );
    sandbox(&store, None, "a", SandboxStatus::Running, Duration::ZERO);
    let mut registered = SandboxRecord::starting(
        SandboxId::new_random(),
        Some((org, user)),
        EXTERNAL_RUNTIME.into(),
        EXTERNAL_RUNTIME.into(),
        "sealed".into(),
        now_micros(),
    );
    registered.status = SandboxStatus::Running;
    store
        .insert_sandbox(&registered, &SessionKey::generate().hash())
        .unwrap();
    sandbox(
        &store,
        Some((org, user)),
        "a",
        SandboxStatus::Error,
        Duration::ZERO,
    );
    let paused = sandbox(
        &store,
        Some((org, user)),
        "a",
        SandboxStatus::Paused,
        Duration::ZERO,
    );
    let mine = sandbox(&store, Some((org, user)), "a", SandboxStatus::Running, hour);

    // Ten starts at once with a cap of 3: three join the running sandbox, three the paused
    // one (used only once the running one is full), four find none.
    let tasks: Vec<StartTask> = (0..10).map(|_| task(org, user)).collect();
    for t in &tasks {
        store.insert_start_task(t).unwrap();
    }
    let barrier = Arc::new(Barrier::new(tasks.len()));
    let handles: Vec<_> = tasks
        .iter()
        .cloned()
        .map(|t| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                (t.id, joined(&store, &t, None, 3))
            })
        })
        .collect();
    let results: Vec<(StartTaskId, Option<SandboxId>)> =
        handles.into_iter().map(|h| h.join().unwrap()).collect();
    let count = |s: SandboxId| results.iter().filter(|(_, r)| *r == Some(s)).count();
    assert_eq!(
        (count(mine), count(paused)),
        (3, 3),
        "{backend}: {results:?}"
    );
    assert_eq!(results.iter().filter(|(_, r)| r.is_none()).count(), 4);
    let of = |id: StartTaskId| tasks.iter().find(|t| t.id == id).unwrap().clone();
    for (t, r) in &results {
        assert_eq!(
            bound_to(&store, &of(*t)),
            *r,
            "{backend}: the task is bound"
        );
    }
    assert_eq!(store.conversations_in_sandbox(mine).unwrap(), 3);

    // What holds the sandbox but one of its conversations; once that start ended (ERROR) it
    // holds it no more, and a place is free again.
    let (one, _) = *results.iter().find(|(_, r)| *r == Some(mine)).unwrap();
    let mut one = of(one);
    assert_eq!(
        store.others_in_sandbox(mine, one.conversation_id).unwrap(),
        2
    );
    one.sandbox_id = Some(mine);
    one.status = StartTaskStatus::Error;
    assert!(store.update_start_task(&one).unwrap());
    assert_eq!(store.conversations_in_sandbox(mine).unwrap(), 2);
    let late = task(org, user);
    store.insert_start_task(&late).unwrap();
    assert_eq!(joined(&store, &late, None, 3), Some(mine), "{backend}");

    // Only the spec asked for; with room everywhere, the newest of it.
    let b = sandbox(
        &store,
        Some((org, user)),
        "b",
        SandboxStatus::Starting,
        2 * hour,
    );
    let t = task(org, user);
    store.insert_start_task(&t).unwrap();
    assert_eq!(joined(&store, &t, Some("b"), 20), Some(b), "{backend}");
    assert_eq!(joined(&store, &t, Some("c"), 20), None, "{backend}");
    let t = task(org, user);
    store.insert_start_task(&t).unwrap();
    assert_eq!(
        joined(&store, &t, None, 20),
        Some(mine),
        "{backend}: the newest live one"
    );

    // A start that starts a sandbox is bound to it in the same transaction.
    let t = task(org, user);
    store.insert_start_task(&t).unwrap();
    let record = SandboxRecord::starting(
        SandboxId::new_random(),
        Some((org, user)),
        "a".into(),
        "process".into(),
        "sealed".into(),
        now_micros(),
    );
    let outcome = store
        .start_sandbox(&StartSandbox {
            record: record.clone(),
            key_hash: SessionKey::generate().hash(),
            claim_warm: None,
            limit: RunningLimit {
                owner: user,
                max: 100,
            },
            quota: SandboxQuota {
                owner: user,
                per_user: 100,
                org,
                per_org: None,
            },
            bind_task: Some(t.id),
        })
        .unwrap();
    assert!(matches!(outcome, StartOutcome::Started(_)), "{backend}");
    assert_eq!(bound_to(&store, &t), Some(record.id), "{backend}");
    assert_eq!(store.conversations_in_sandbox(record.id).unwrap(), 1);
}

#[test]
fn sqlite_grouping() {
    grouping(Backend::Sqlite);
}

#[test]
fn postgres_grouping() {
    grouping(Backend::Postgres);
}

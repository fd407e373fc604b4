//! The LLM pass-through's storage on both backends (issue 38, docs/API.md "LLM
//! pass-through"): a route is found by its token hash with its conversation's budget, only
//! while its sandbox is not deleted and its conversation exists, and a second route under the
//! same hash is refused; usage is added to its (conversation, day, model) row, concurrent
//! additions all counting, and read summed by member or by day within a range of days, and as
//! a cost since a day, the organization's or one conversation's.

use std::sync::Arc;

use switchboard_domain::conversations::{Conversation, ExecutionStatus};
use switchboard_domain::identity::Org;
use switchboard_domain::identity::session_keys::SessionKey;
use switchboard_domain::llm_relay::{
    LiveRoute, LlmRoute, UsageGroup, UsageQuery, UsageRecord, UsageRow,
};
use switchboard_domain::ports::{
    AppConversationStore, BudgetStore, IdentityStore, LlmRelayStore, SandboxStore, StartTaskStore,
    StartedConversation,
};
use switchboard_domain::sandboxes::records::SandboxRecord;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{
    ConversationId, OrgId, Role, SandboxId, StorageError, Switchboard, UserId,
};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::{Date, Month};

/// A store on a fresh database, its bootstrapped organization and owner, and a second member.
fn open(backend: Backend) -> (TestDatabase, Arc<DieselStore>, OrgId, UserId, UserId) {
    let db = TestDatabase::new(backend);
    let store = Arc::new(DieselStore::open(db.url(), None).unwrap().0);
    let services = Switchboard::new(store.clone());
    let boot = services
        .operator()
        .bootstrap("Relay", "relay@example.com")
        .unwrap();
    let other = services
        .operator()
        .create_user("member@example.com", None)
        .unwrap()
        .id;
    services
        .operator()
        .add_member(boot.org_id, other, Role::Member)
        .unwrap();
    (db, store, boot.org_id, boot.user_id, other)
}

/// A managed sandbox of `user` in `org`.
fn sandbox(store: &DieselStore, org: OrgId, user: UserId) -> SandboxId {
    let id = SandboxId::new_random();
    let r = SandboxRecord::starting(
        id,
        Some((org, user)),
        "default".into(),
        "process".into(),
        "sealed".into(),
        now_micros(),
    );
    store
        .insert_sandbox(&r, &SessionKey::generate().hash())
        .unwrap();
    id
}

/// A started conversation of `user` on `sandbox`, with `budget`.
fn conversation(
    store: &DieselStore,
    org: OrgId,
    user: UserId,
    sandbox: SandboxId,
    budget: Option<f64>,
) -> ConversationId {
    let now = now_micros();
    let started = StartedConversation {
        conversation: Conversation {
            id: ConversationId::new_random(),
            org_id: org,
            owner_id: user,
            sandbox_id: Some(sandbox),
            title: Some("relay".into()),
            execution_status: Some(ExecutionStatus::Running),
            created_at: now,
            updated_at: now,
        },
        selected_repository: None,
        selected_branch: None,
        git_provider: None,
        trigger: None,
        pr_number: "[]".into(),
        llm_model: Some("openai/gpt-4o".into()),
        parent_conversation_id: None,
        public: None,
        tags: "{}".into(),
        max_budget_per_task: budget,
    };
    assert!(store.create_started_conversation(&started, now).unwrap());
    started.conversation.id
}

fn route(
    hash: &str,
    sandbox: SandboxId,
    conversation: ConversationId,
    org: OrgId,
    user: UserId,
) -> LlmRoute {
    LlmRoute {
        token_hash: hash.into(),
        sandbox_id: sandbox,
        conversation_id: conversation,
        org_id: org,
        user_id: user,
        upstream: "https://api.openai.com/v1".into(),
        api_key_sealed: format!("sealed-for-{hash}"),
        key_owner: "organization".into(),
        model: "openai/gpt-4o".into(),
        created_at: now_micros(),
    }
}

fn routes(backend: Backend) {
    let (_db, store, org, owner, member) = open(backend);
    let s1 = sandbox(&store, org, owner);
    let a = conversation(&store, org, owner, s1, Some(0.5));

    // Stored, then found with its conversation's budget; an unknown hash finds nothing.
    let r1 = route("hash-a", s1, a, org, owner);
    store.insert_llm_route(&r1).unwrap();
    let live = store.llm_route("hash-a").unwrap();
    assert_eq!(
        live,
        Some(LiveRoute {
            route: r1.clone(),
            max_budget_per_task: Some(0.5),
            budget_reached: false,
        }),
        "{backend}"
    );
    assert_eq!(store.llm_route("hash-unknown").unwrap(), None, "{backend}");

    // A second route under the same hash is refused; the first is unchanged.
    let mut dup = route("hash-a", s1, a, org, owner);
    dup.upstream = "https://elsewhere.example/v1".into();
    let err = store.insert_llm_route(&dup).unwrap_err();
    assert!(
        matches!(err, StorageError::UniqueViolation(_)),
        "{backend}: {err:?}"
    );
    assert_eq!(
        store.llm_route("hash-a").unwrap().unwrap().route,
        r1,
        "{backend}"
    );

    // The budget stopping the conversation shows in its route.
    assert!(store.mark_budget_reached(a, 0.5, now_micros()).unwrap());
    let live = store.llm_route("hash-a").unwrap().unwrap();
    assert!(live.budget_reached, "{backend}");

    // A conversation without a budget, the other member's.
    let s2 = sandbox(&store, org, member);
    let b = conversation(&store, org, member, s2, None);
    store
        .insert_llm_route(&route("hash-b", s2, b, org, member))
        .unwrap();
    let live = store.llm_route("hash-b").unwrap().unwrap();
    assert_eq!(
        (
            live.route.user_id,
            live.max_budget_per_task,
            live.budget_reached
        ),
        (member, None, false),
        "{backend}"
    );

    // Its sandbox tombstoned: gone, though its conversation stays.
    assert!(store.delete_sandbox(s2, now_micros()).unwrap());
    assert_eq!(store.llm_route("hash-b").unwrap(), None, "{backend}");
    assert!(store.conversation_budget(b).unwrap().is_some(), "{backend}");

    // Its conversation deleted: gone; the sandbox's other conversation's route stays.
    let c = conversation(&store, org, owner, s1, None);
    store
        .insert_llm_route(&route("hash-c", s1, c, org, owner))
        .unwrap();
    assert!(store.llm_route("hash-c").unwrap().is_some(), "{backend}");
    assert!(store.delete_app_conversation(c).unwrap().is_some());
    assert_eq!(store.llm_route("hash-c").unwrap(), None, "{backend}");
    assert!(store.llm_route("hash-a").unwrap().is_some(), "{backend}");

    // A route for a conversation that does not exist is refused (the route is written after
    // the start records its conversation).
    let err = store
        .insert_llm_route(&route(
            "hash-d",
            s1,
            ConversationId::new_random(),
            org,
            owner,
        ))
        .unwrap_err();
    assert!(
        matches!(err, StorageError::ForeignKeyViolation(_)),
        "{backend}: {err:?}"
    );
}

fn day(d: u8) -> Date {
    Date::from_calendar_date(2026, Month::December, d).unwrap()
}

fn used(
    org: OrgId,
    user: UserId,
    conversation: ConversationId,
    on: Date,
    model: &str,
    (requests, input, output, cost): (u64, u64, u64, f64),
) -> UsageRecord {
    UsageRecord {
        org_id: org,
        user_id: user,
        conversation_id: conversation,
        day: on,
        model: model.into(),
        requests,
        input_tokens: input,
        output_tokens: output,
        cost_usd: cost,
    }
}

fn row(user: Option<UserId>, on: Option<Date>, sums: (u64, u64, u64, f64)) -> UsageRow {
    UsageRow {
        user_id: user,
        day: on,
        requests: sums.0,
        input_tokens: sums.1,
        output_tokens: sums.2,
        cost_usd: sums.3,
    }
}

fn usage(backend: Backend) {
    let (_db, store, org, owner, member) = open(backend);
    let (a, b) = (ConversationId::new_random(), ConversationId::new_random());

    // Added to one row: twice, then 8 threads × 25 requests at once, all counted. Costs are
    // multiples of 1/8 so that the sums are exact.
    let once = used(org, owner, a, day(3), "gpt-4o", (1, 100, 10, 0.25));
    store.add_llm_usage(&once).unwrap();
    store.add_llm_usage(&once).unwrap();
    let small = used(org, owner, a, day(3), "gpt-4o", (1, 2, 3, 0.125));
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..25 {
                    store.add_llm_usage(&small).unwrap();
                }
            });
        }
    });
    // Another model the same day, another day, the other member's conversation, another
    // organization's usage.
    store
        .add_llm_usage(&used(org, owner, a, day(3), "claude", (1, 7, 1, 1.0)))
        .unwrap();
    store
        .add_llm_usage(&used(org, owner, a, day(5), "gpt-4o", (2, 20, 2, 0.5)))
        .unwrap();
    store
        .add_llm_usage(&used(org, member, b, day(4), "gpt-4o", (3, 30, 3, 2.0)))
        .unwrap();
    let elsewhere = OrgId::new_random();
    store
        .create_org(&Org {
            id: elsewhere,
            name: "Elsewhere".into(),
            created_at: now_micros(),
        })
        .unwrap();
    store
        .add_llm_usage(&used(
            elsewhere,
            owner,
            ConversationId::new_random(),
            day(3),
            "gpt-4o",
            (9, 9, 9, 9.0),
        ))
        .unwrap();

    let read = |user: Option<UserId>, from: u8, to: u8, group: UsageGroup| {
        store
            .llm_usage(&UsageQuery {
                org_id: org,
                user_id: user,
                from: day(from),
                to: day(to),
                group,
            })
            .unwrap()
    };
    // Day 3 of `a`: 2 + 200 + 1 requests; 200 + 400 + 7 in; 20 + 600 + 1 out; 0.5 + 25 + 1.
    let a3 = (203, 607, 621, 26.5);
    let (a5, b4) = ((2, 20, 2, 0.5), (3, 30, 3, 2.0));

    // By member, in member-id order.
    let mut by_member = vec![
        row(Some(owner), None, (205, 627, 623, 27.0)),
        row(Some(member), None, b4),
    ];
    by_member.sort_by_key(|r| r.user_id);
    assert_eq!(
        read(None, 1, 31, UsageGroup::Member),
        by_member,
        "{backend}"
    );
    // Bounds are inclusive; days outside are left out.
    assert_eq!(
        read(None, 4, 5, UsageGroup::Member),
        {
            let mut rows = vec![row(Some(owner), None, a5), row(Some(member), None, b4)];
            rows.sort_by_key(|r| r.user_id);
            rows
        },
        "{backend}"
    );
    assert_eq!(
        read(None, 3, 3, UsageGroup::Member),
        [row(Some(owner), None, a3)],
        "{backend}"
    );
    assert!(
        read(None, 6, 31, UsageGroup::Member).is_empty(),
        "{backend}"
    );

    // By day, in day order; days without usage are absent.
    assert_eq!(
        read(None, 1, 31, UsageGroup::Day),
        [
            row(None, Some(day(3)), a3),
            row(None, Some(day(4)), b4),
            row(None, Some(day(5)), a5),
        ],
        "{backend}"
    );
    assert_eq!(
        read(None, 4, 4, UsageGroup::Day),
        [row(None, Some(day(4)), b4)],
        "{backend}"
    );
    // One member's.
    assert_eq!(
        read(Some(owner), 1, 31, UsageGroup::Day),
        [row(None, Some(day(3)), a3), row(None, Some(day(5)), a5)],
        "{backend}"
    );
    assert_eq!(
        read(Some(member), 1, 31, UsageGroup::Member),
        [row(Some(member), None, b4)],
        "{backend}"
    );
    assert!(
        read(Some(member), 5, 31, UsageGroup::Day).is_empty(),
        "{backend}"
    );

    // Cost since a day: the organization's, one conversation's, none.
    let cost = |conversation: Option<ConversationId>, since: u8| {
        store.llm_cost(org, conversation, day(since)).unwrap()
    };
    assert_eq!(cost(None, 1), 29.0, "{backend}");
    assert_eq!(cost(None, 4), 2.5, "{backend}");
    assert_eq!(cost(Some(a), 1), 27.0, "{backend}");
    assert_eq!(cost(Some(a), 4), 0.5, "{backend}");
    assert_eq!(cost(Some(b), 5), 0.0, "{backend}");
    assert_eq!(cost(None, 6), 0.0, "{backend}");
    assert_eq!(
        cost(Some(ConversationId::new_random()), 1),
        0.0,
        "{backend}"
    );
    assert_eq!(
        store.llm_cost(elsewhere, None, day(1)).unwrap(),
        9.0,
        "{backend}"
    );
}

#[test]
fn routes_sqlite() {
    routes(Backend::Sqlite);
}

#[test]
fn routes_postgres() {
    routes(Backend::Postgres);
}

#[test]
fn usage_sqlite() {
    usage(Backend::Sqlite);
}

#[test]
fn usage_postgres() {
    usage(Backend::Postgres);
}

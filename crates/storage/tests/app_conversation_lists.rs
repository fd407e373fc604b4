//! Conversation lists (issue 23) on both backends: a walk in an `UPDATED_AT` order lists every
//! conversation once while conversations change under it (API.md, "Paging while
//! conversations change"), and the maintained counts equal a full scan after 20 concurrent
//! writers started and deleted conversations and start tasks.

use std::sync::Arc;

use diesel::prelude::*;
use serde_json::json;
use switchboard_domain::conversations::Conversation;
use switchboard_domain::conversations::app::{
    AppConversationFilter, AppConversationPatch, OrderedCursor, SortOrder,
};
use switchboard_domain::conversations::start_tasks::{StartTask, StartTaskId, StartTaskStatus};
use switchboard_domain::cursor::Keyset;
use switchboard_domain::ports::{
    AppConversationStore, StartTaskQuery, StartTaskStore, StartedConversation,
};
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ConversationId, OrgContext, OrgId, Role, Switchboard, UserId};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};
use time::OffsetDateTime;

struct Org {
    _db: TestDatabase,
    store: Arc<DieselStore>,
    services: Switchboard,
    ctx: OrgContext,
    org: OrgId,
    owner: UserId,
    member: UserId,
}

fn org(backend: Backend) -> Org {
    let db = TestDatabase::new(backend);
    let (store, _) = DieselStore::open(db.url(), None).unwrap();
    let store = Arc::new(store);
    let services = Switchboard::new(store.clone());
    let boot = services
        .operator()
        .bootstrap("Lists", "lists@example.com")
        .unwrap();
    let member = services
        .operator()
        .create_user("member@example.com", None)
        .unwrap()
        .id;
    services
        .operator()
        .add_member(boot.org_id, member, Role::Member)
        .unwrap();
    let ctx = services
        .auth()
        .authenticate_in(&boot.api_key, Some(boot.org_id))
        .unwrap();
    Org {
        _db: db,
        store,
        services,
        ctx,
        org: boot.org_id,
        owner: boot.user_id,
        member,
    }
}

/// A conversation as a start writes it, created and last changed at `at`.
fn started(
    org: OrgId,
    owner: UserId,
    at: OffsetDateTime,
    parent: Option<ConversationId>,
) -> StartedConversation {
    StartedConversation {
        conversation: Conversation {
            id: ConversationId(uuid::Uuid::new_v4()),
            org_id: org,
            owner_id: owner,
            sandbox_id: None,
            title: Some("walk".into()),
            execution_status: None,
            created_at: at,
            updated_at: at,
        },
        selected_repository: None,
        selected_branch: None,
        git_provider: None,
        trigger: None,
        pr_number: "[]".into(),
        llm_model: None,
        parent_conversation_id: parent.map(|p| p.to_string()),
        public: None,
        tags: "{}".into(),
        max_budget_per_task: None,
    }
}

/// Walks `order` by pages of 4; before pages 2 and 4 changes a conversation the walk has
/// not reached yet and one it has passed, and creates one. Returns the ids listed.
fn walk(o: &Org, order: SortOrder, ids: &[ConversationId]) -> Vec<ConversationId> {
    let svc = o.services.app_conversations();
    let rename = AppConversationPatch {
        title: Some(Some("changed".into())),
        ..AppConversationPatch::default()
    };
    let mut listed: Vec<ConversationId> = Vec::new();
    let mut after: Option<OrderedCursor> = None;
    for page_no in 0.. {
        if page_no == 1 || page_no == 3 {
            let unseen: Vec<_> = ids.iter().filter(|i| !listed.contains(i)).collect();
            // The last one the walk would reach, and the first it listed.
            svc.patch(&o.ctx, **unseen.last().unwrap(), &rename)
                .unwrap();
            svc.patch(&o.ctx, listed[0], &rename).unwrap();
            let new = started(o.org, o.owner, now_micros(), None);
            o.store
                .create_started_conversation(&new, now_micros())
                .unwrap();
        }
        let page = svc
            .search(&o.ctx, AppConversationFilter::default(), order, after, 4)
            .unwrap();
        listed.extend(page.items.iter().map(|c| c.info.id));
        match page.next_page_id {
            Some(next) => after = Some(OrderedCursor::decode(&next).unwrap()),
            None => break,
        }
    }
    listed
}

fn check_walks(backend: Backend) {
    let o = org(backend);
    let base = now_micros() - time::Duration::hours(1);
    let mut ids = Vec::new();
    for i in 0..14 {
        let c = started(o.org, o.owner, base + time::Duration::seconds(i), None);
        assert!(o.store.create_started_conversation(&c, base).unwrap());
        ids.push(c.conversation.id);
    }
    for order in [SortOrder::UpdatedAtDesc, SortOrder::UpdatedAt] {
        // The order the walk begins in: by updated_at as it is now.
        let page = o
            .services
            .app_conversations()
            .search(&o.ctx, AppConversationFilter::default(), order, None, 100)
            .unwrap();
        let before: Vec<ConversationId> = page.items.iter().map(|c| c.info.id).collect();
        let listed = walk(&o, order, &before);
        assert_eq!(
            listed, before,
            "{backend} {order:?}: every conversation once, where it stood when the walk began"
        );
    }
    let all = o
        .services
        .app_conversations()
        .count(&o.ctx, AppConversationFilter::default())
        .unwrap();
    assert_eq!(
        all,
        14 + 4,
        "{backend}: the ones created during the walks exist"
    );
}

#[test]
fn sqlite_updated_at_walks_neither_skip_nor_repeat() {
    check_walks(Backend::Sqlite);
}

#[test]
fn postgres_updated_at_walks_neither_skip_nor_repeat() {
    check_walks(Backend::Postgres);
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// `SELECT count(*) AS n FROM <rest>`, a full scan of the rows.
fn scan(o: &Org, rest: &str) -> i64 {
    let mut conn = o.store.conn().unwrap();
    diesel::sql_query(format!("SELECT count(*) AS n FROM {rest}"))
        .get_result::<Count>(&mut *conn)
        .unwrap()
        .n
}

/// Counts of the full scan: (top-level of the org, top-level of the member, with
/// sub-conversations, start tasks of the org, start tasks of the member).
fn scanned(o: &Org) -> (i64, i64, i64, i64, i64) {
    let (org, member) = (o.org, o.member);
    (
        scan(
            o,
            &format!("conversations WHERE org_id = '{org}' AND parent_conversation_id IS NULL"),
        ),
        scan(
            o,
            &format!(
                "conversations WHERE org_id = '{org}' AND owner_id = '{member}' AND parent_conversation_id IS NULL"
            ),
        ),
        scan(o, &format!("conversations WHERE org_id = '{org}'")),
        scan(o, &format!("start_tasks WHERE org_id = '{org}'")),
        scan(
            o,
            &format!("start_tasks WHERE org_id = '{org}' AND created_by_user_id = '{member}'"),
        ),
    )
}

fn task(o: &Org, creator: UserId, conv: ConversationId) -> StartTask {
    let now = now_micros();
    StartTask {
        id: StartTaskId(uuid::Uuid::new_v4()),
        org_id: o.org,
        created_by_user_id: creator,
        status: StartTaskStatus::Working,
        detail: None,
        conversation_id: conv,
        sandbox_id: None,
        agent_server_url: None,
        request: json!({}),
        secrets_sealed: None,
        created_at: now,
        updated_at: now,
    }
}

fn check_counts(backend: Backend) {
    let o = Arc::new(org(backend));
    let writers: Vec<_> = (0..20)
        .map(|w| {
            let o = o.clone();
            std::thread::spawn(move || {
                let creator = if w % 3 == 0 { o.member } else { o.owner };
                let mut mine: Vec<ConversationId> = Vec::new();
                for i in 0..15 {
                    let now = now_micros();
                    // Every 4th a sub-conversation of the writer's previous one.
                    let parent = (i % 4 == 3).then(|| mine.last().copied()).flatten();
                    let c = started(o.org, creator, now, parent);
                    o.store
                        .insert_start_task(&task(&o, creator, c.conversation.id))
                        .unwrap();
                    assert!(o.store.create_started_conversation(&c, now).unwrap());
                    mine.push(c.conversation.id);
                    if i % 3 == 2 {
                        let gone = mine.remove(i % mine.len());
                        o.store.delete_app_conversation(gone).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let (top, member_top, all, tasks, member_tasks) = scanned(&o);
    assert!(top > 0 && member_top > 0 && all > top && tasks > 0);
    let svc = o.services.app_conversations();
    let member_ctx = OrgContext {
        principal: switchboard_domain::Principal {
            user_id: o.member,
            ..o.ctx.principal.clone()
        },
        role: Role::Member,
        ..o.ctx.clone()
    };
    let with_subs = AppConversationFilter {
        include_sub_conversations: true,
        ..Default::default()
    };
    assert_eq!(
        svc.count(&o.ctx, AppConversationFilter::default()).unwrap(),
        top as u64,
        "{backend}"
    );
    assert_eq!(
        svc.count(&o.ctx, with_subs.clone()).unwrap(),
        all as u64,
        "{backend}"
    );
    assert_eq!(
        svc.count(&member_ctx, AppConversationFilter::default())
            .unwrap(),
        member_top as u64,
        "{backend}"
    );
    let q = |creator| StartTaskQuery {
        org: o.org,
        creator,
        filter: Default::default(),
        order: SortOrder::default(),
        after: None,
        limit: 0,
    };
    assert_eq!(
        o.store.count_start_tasks(&q(None)).unwrap(),
        tasks as u64,
        "{backend}"
    );
    assert_eq!(
        o.store.count_start_tasks(&q(Some(o.member))).unwrap(),
        member_tasks as u64,
        "{backend}"
    );
}

#[test]
fn sqlite_counts_match_a_scan_after_concurrent_writers() {
    check_counts(Backend::Sqlite);
}

#[test]
fn postgres_counts_match_a_scan_after_concurrent_writers() {
    check_counts(Backend::Postgres);
}

//! App-conversation search benchmark (`just bench-app-conversations`; results in
//! docs/benchmarks.md, "App conversations: search"). Not a CI test.
//!
//! For each backend (a fresh SQLite file and a fresh PostgreSQL database from the testkit):
//! one organization with an owner and a member, 50 registered sandboxes and
//! `SB_BENCH_APP_CONVS` conversations (default 100,000; with `SB_BENCH_ORGS=k` as many again
//! in each of k-1 other organizations, bulk-inserted; 10% the member's; every 5th created in
//! the same microsecond as the previous one, so the id tie-break is exercised; `updated_at` a
//! permutation of the creation times). Then, through the domain service as the API calls it
//! (store query with limit + 1, sub-conversation lookup, sandbox batch read, views), times
//! pages of 100 (p50/p99 over `SB_BENCH_ITERS` calls, default 300): the first page and pages
//! deep in the list (cursors taken from a full walk) in each order, a member's search (owner
//! filter), `sandbox_id__eq`, `title__contains` and the count. Statistics are what the server's
//! upkeep job leaves (`DieselStore::upkeep`), not a manual `ANALYZE`. `SB_BENCH_LIMIT` sets
//! the page size (default 100; clients open on 20), and the deep page is at
//! `SB_BENCH_DEPTH` (default 50,000, or the middle of smaller lists).

use std::time::{Duration, Instant};

use switchboard_domain::conversations::app::{AppConversationFilter, OrderedCursor, SortOrder};
use switchboard_domain::services::AppConversationService;
use switchboard_domain::{OrgContext, Role, SandboxId};
use switchboard_storage::DieselStore;
use switchboard_testkit::Backend;

#[path = "common/mod.rs"]
mod common;
use common::{env_num, execute, time_it, world};

/// 2026-11-01T00:00:00Z in Unix seconds.
const BASE_SECS: i64 = 1_793_491_200;

fn stamp(micros: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(
        (i128::from(BASE_SECS) * 1_000_000 + i128::from(micros)) * 1_000,
    )
    .unwrap();
    // The form diesel writes on SQLite (a fraction without trailing zeros, none for a whole
    // second): SQLite compares these texts, so rows must be in the form the server writes.
    let frac = format!("{:06}", t.microsecond());
    let frac = frac.trim_end_matches('0');
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{}{}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        if frac.is_empty() { "" } else { "." },
        frac
    )
}

/// Bulk-inserts `n` conversations of `org` (multi-row INSERTs of 1,000).
fn seed(
    store: &DieselStore,
    org: switchboard_domain::OrgId,
    owner: switchboard_domain::UserId,
    member: switchboard_domain::UserId,
    sandboxes: &[SandboxId],
    n: u64,
) {
    let mut created = 0i64;
    let mut i = 0u64;
    while i < n {
        let mut sql = String::from(
            "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, title, execution_status, created_at, updated_at) VALUES ",
        );
        for j in 0..1000.min(n - i) {
            let k = i + j;
            if k % 5 != 4 {
                created += 1_000; // 1 ms apart, every 5th a tie
            }
            let who = if k % 10 == 3 { member } else { owner };
            let updated = (k * 7_919) % n; // a permutation of the creation order
            if j > 0 {
                sql.push(',');
            }
            sql.push_str(&format!(
                "('{}', '{}', '{}', '{}', 'Conversation {k:06}', 'finished', '{}', '{}')",
                uuid::Uuid::new_v4(),
                org,
                who,
                sandboxes[(k % 50) as usize],
                stamp(created),
                stamp(updated as i64 * 1_000 + 500),
            ));
        }
        execute(store, &sql);
        i += 1000.min(n - i);
    }
}

fn run(backend: Backend, n: u64, iters: u64) {
    let (_db, store, services, boot) = world(backend);
    let member = services
        .operator()
        .create_user("member@bench.example", None)
        .unwrap()
        .id;
    services
        .operator()
        .add_member(boot.org_id, member, Role::Member)
        .unwrap();
    let member_key = services
        .operator()
        .operator_create_key(member, None, "bench".into(), None)
        .unwrap()
        .secret;
    let sandboxes: Vec<SandboxId> = (0..50)
        .map(|_| {
            let key = services
                .sandboxes()
                .register_sandbox(boot.org_id, boot.user_id)
                .unwrap();
            key.sandbox_id
        })
        .collect();

    let load = Instant::now();
    let orgs = env_num("SB_BENCH_ORGS", 1);
    seed(&store, boot.org_id, boot.user_id, member, &sandboxes, n);
    for k in 1..orgs {
        let other = services
            .operator()
            .bootstrap(&format!("Other {k}"), &format!("owner{k}@bench.example"))
            .unwrap();
        seed(
            &store,
            other.org_id,
            other.user_id,
            other.user_id,
            &sandboxes,
            n,
        );
    }
    // What the server's upkeep job does every minute.
    store.upkeep().unwrap();
    let load = load.elapsed();

    let auth = services.auth();
    let owner_ctx: OrgContext = auth
        .authenticate_in(&boot.api_key, Some(boot.org_id))
        .unwrap();
    let member_ctx: OrgContext = auth
        .authenticate_in(&member_key, Some(boot.org_id))
        .unwrap();
    let svc = services.app_conversations();
    let contexts = (&owner_ctx, &member_ctx);
    measure(backend, svc, contexts, &sandboxes, n, iters, load);
}

/// Times the searches and counts of the benchmark and prints them as a table.
fn measure(
    backend: Backend,
    svc: &AppConversationService,
    (owner_ctx, member_ctx): (&OrgContext, &OrgContext),
    sandboxes: &[SandboxId],
    n: u64,
    iters: u64,
    load: Duration,
) {
    let all = AppConversationFilter::default;
    let limit = env_num("SB_BENCH_LIMIT", 100) as u32;
    let depth = env_num("SB_BENCH_DEPTH", 50_000).min(n / 2) as usize;
    println!(
        "## {} — {n} conversations in one org ({} orgs; loaded in {:.1} s), pages of {limit}, {iters} calls each",
        backend.name(),
        env_num("SB_BENCH_ORGS", 1),
        load.as_secs_f64()
    );
    println!("| query | p50 ms | p99 ms |");
    println!("|---|---|---|");
    let titled = |t: &str| AppConversationFilter {
        title_contains: Some(t.to_owned()),
        ..all()
    };
    for order in SortOrder::ALL {
        // A walk to the deep page gives its cursor (and checks no conversation repeats).
        let walk = Instant::now();
        let mut after = None;
        let mut seen = std::collections::HashSet::new();
        while seen.len() < depth {
            let page = svc.search(owner_ctx, all(), order, after, 100).unwrap();
            for c in &page.items {
                assert!(seen.insert(c.info.id), "{order:?}: a conversation repeated");
            }
            let Some(next) = page.next_page_id else { break };
            after =
                Some(<OrderedCursor as switchboard_domain::cursor::Keyset>::decode(&next).unwrap());
        }
        let walk = walk.elapsed();
        let deep = after;
        for (what, filter) in [
            ("", all()),
            (" title__contains (all match)", titled("conversation")),
            (
                " title__contains (one match)",
                titled(&format!("{:06}", n / 3)),
            ),
        ] {
            let (p50, p99) = time_it(iters, |_| {
                svc.search(owner_ctx, filter.clone(), order, None, limit)
                    .unwrap();
            });
            println!(
                "| {}{what} first page | {p50:.2} | {p99:.2} |",
                order.as_str()
            );
            let (p50, p99) = time_it(iters, |_| {
                svc.search(owner_ctx, filter.clone(), order, deep, limit)
                    .unwrap();
            });
            println!(
                "| {}{what} page at {depth} | {p50:.2} | {p99:.2} |",
                order.as_str()
            );
        }
        println!(
            "| {} walk to {depth} by pages of 100 | {:.0} ms total | |",
            order.as_str(),
            walk.as_secs_f64() * 1e3,
        );
    }
    let (p50, p99) = time_it(iters, |_| {
        svc.search(member_ctx, all(), SortOrder::UpdatedAtDesc, None, limit)
            .unwrap();
    });
    println!("| member (own 10%) UPDATED_AT_DESC first page | {p50:.2} | {p99:.2} |");
    let (p50, p99) = time_it(iters, |k| {
        let filter = AppConversationFilter {
            sandbox_id_eq: Some(sandboxes[(k % 50) as usize]),
            ..all()
        };
        svc.search(owner_ctx, filter, SortOrder::CreatedAtDesc, None, limit)
            .unwrap();
    });
    println!("| sandbox_id__eq first page | {p50:.2} | {p99:.2} |");
    let (p50, p99) = time_it(iters, |_| {
        svc.count(owner_ctx, all()).unwrap();
    });
    println!("| count, whole org | {p50:.2} | {p99:.2} |");
    let (p50, p99) = time_it(iters, |_| {
        svc.count(member_ctx, all()).unwrap();
    });
    println!("| count, member | {p50:.2} | {p99:.2} |");
    let (p50, p99) = time_it(iters, |k| {
        svc.count(owner_ctx, titled(&format!("{:06}", (k * 997) % n)))
            .unwrap();
    });
    println!("| count, title__contains (one match) | {p50:.2} | {p99:.2} |");
    println!();
}

fn main() {
    let n = env_num("SB_BENCH_APP_CONVS", 100_000);
    let iters = env_num("SB_BENCH_ITERS", 300);
    let backends = std::env::var("SB_BENCH_BACKENDS").unwrap_or_else(|_| "sqlite postgres".into());
    for b in backends.split_whitespace() {
        match b {
            "sqlite" => run(Backend::Sqlite, n, iters),
            "postgres" => run(Backend::Postgres, n, iters),
            other => panic!("unknown backend {other}"),
        }
    }
}

//! Members and sign-in benchmark (`just bench-members`; results in docs/benchmarks.md,
//! "Members and sign-in"). Not a CI test.
//!
//! For each backend (a fresh SQLite file and a fresh PostgreSQL database from the testkit):
//! one organization with `SB_BENCH_MEMBERS` members (default 10,000, bulk-inserted), then,
//! through the domain services as the API calls them, p50/p99 over `SB_BENCH_ITERS` calls
//! (default 300) of: the first page of 100 members, a page deep in the list (from a cursor),
//! an e-mail filter, the count, a role change and back (each with its audit entry and the
//! key caches' invalidation), a session check, a device code started and polled, and an API
//! key check that misses the per-replica cache (the hot path, with the disabled-user check).

use std::time::Instant;

use switchboard_domain::identity::sign_in::ProviderIdentity;
use switchboard_domain::ports::{MemberPosition, MemberStore};
use switchboard_domain::{OrgContext, Role};
use switchboard_storage::DieselStore;
use switchboard_testkit::Backend;

#[path = "common/mod.rs"]
mod common;
use common::{env_num, execute, print_table, time_it, world};

/// Bulk-inserts `n` users, each a member of `org` (multi-row INSERTs of 1,000).
fn seed(store: &DieselStore, org: switchboard_domain::OrgId, n: u64) {
    let mut i = 0u64;
    while i < n {
        let batch = 1000.min(n - i);
        let ids: Vec<String> = (0..batch)
            .map(|_| uuid::Uuid::new_v4().to_string())
            .collect();
        let mut users =
            String::from("INSERT INTO users (id, email, name, current_org_id, created_at) VALUES ");
        let mut members =
            String::from("INSERT INTO org_members (org_id, user_id, role, created_at) VALUES ");
        for (j, id) in ids.iter().enumerate() {
            let k = i + j as u64;
            if j > 0 {
                users.push(',');
                members.push(',');
            }
            let at = format!("2026-11-01 00:{:02}:{:02}.{:06}", (k / 60) % 60, k % 60, k);
            users.push_str(&format!(
                "('{id}', 'user{k:06}@bench.example', NULL, '{org}', '{at}')"
            ));
            members.push_str(&format!("('{org}', '{id}', 'member', '{at}')"));
        }
        for sql in [users, members] {
            execute(store, &sql);
        }
        i += batch;
    }
}

fn run(backend: Backend, n: u64, iters: u64) {
    let (_db, store, services, boot) = world(backend);
    let load = Instant::now();
    seed(&store, boot.org_id, n);
    let load = load.elapsed();
    let ctx: OrgContext = services
        .auth()
        .authenticate_in(&boot.api_key, Some(boot.org_id))
        .unwrap();
    let members = services.members();
    let org = boot.org_id;
    let mut rows = Vec::new();
    rows.push((
        "members: first page of 100",
        time_it(iters, |_| {
            assert_eq!(
                members
                    .list(&ctx, org, None, None, 100)
                    .unwrap()
                    .items
                    .len(),
                100
            );
        }),
    ));
    let deep = store
        .members_page(
            org,
            switchboard_domain::ports::MemberQuery {
                email: None,
                position: None,
            },
            (n / 2) as u32,
        )
        .unwrap()
        .last()
        .map(|m| MemberPosition {
            joined_at: m.joined_at,
            user_id: m.user_id,
        });
    rows.push((
        "members: a page of 100 half-way (cursor)",
        time_it(iters, |_| {
            assert_eq!(
                members
                    .list(&ctx, org, None, deep, 100)
                    .unwrap()
                    .items
                    .len(),
                100
            );
        }),
    ));
    rows.push((
        "members: e-mail filter (substring)",
        time_it(iters, |i| {
            let f = format!("user{:04}", i % 1000);
            members.list(&ctx, org, Some(&f), None, 100).unwrap();
        }),
    ));
    rows.push((
        "members: count",
        time_it(iters, |_| {
            assert!(members.count(&ctx, org, None).unwrap() > n as i64);
        }),
    ));
    let target = members.list(&ctx, org, None, None, 2).unwrap().items[1].user_id;
    rows.push((
        "members: role change (+ audit, cache drop)",
        time_it(iters, |i| {
            let to = if i % 2 == 0 {
                Role::Admin
            } else {
                Role::Member
            };
            members.change_role(&ctx, org, target, to, None).unwrap();
        }),
    ));
    // Sign-in: a session opened once, checked; a device code started and polled.
    let who = ProviderIdentity {
        issuer: "https://idp.bench.example".into(),
        subject: "bench".into(),
        email: Some("owner@bench.example".into()),
        email_verified: true,
        ..ProviderIdentity::default()
    };
    let opened = services.sign_in().sign_in(&who, None).unwrap();
    rows.push((
        "sign-in: session check",
        time_it(iters, |_| {
            services.sign_in().session(&opened.cookie).unwrap();
        }),
    ));
    rows.push((
        "device: start + first poll",
        time_it(iters.min(900), |_| {
            let s = services.device_auth().start(None).unwrap();
            services
                .device_auth()
                .poll(&s.device_code)
                .unwrap()
                .unwrap_err();
        }),
    ));
    // The key check when the replica's cache misses: a new key each time.
    let keys: Vec<String> = (0..iters + 10)
        .map(|_| {
            services
                .operator()
                .operator_create_key(boot.user_id, None, "bench".into(), None)
                .unwrap()
                .secret
        })
        .collect();
    rows.push((
        "API key check, cache miss (with the disabled-user check)",
        time_it(iters, |i| {
            services
                .auth()
                .authenticate_in(&keys[i as usize], Some(org))
                .unwrap();
        }),
    ));
    let title = format!(
        "{backend}: {n} members (loaded in {:.1} s), {iters} calls each",
        load.as_secs_f64()
    );
    print_table(&title, &rows);
}

fn main() {
    let n = env_num("SB_BENCH_MEMBERS", 10_000);
    let iters = env_num("SB_BENCH_ITERS", 300);
    for backend in Backend::ALL {
        run(backend, n, iters);
    }
}

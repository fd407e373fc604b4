//! The API-key lookup cache (issue 23; API.md, "API keys: lookups from a per-replica
//! cache") on both backends: lookups are served from memory, a change the store did not make
//! is seen within the time to live, a key's recorded use reaches the cached entry, and every
//! identity write through any store (on PostgreSQL, through another replica, by `NOTIFY`) is
//! seen by the writer's next lookup, and by another replica's on PostgreSQL as soon as the
//! `NOTIFY` arrives (on SQLite, where one process serves, a second store stands for the
//! operator's CLI and sees it within the time to live).

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use switchboard_domain::identity::api_keys::hash_api_key;
use switchboard_domain::ports::IdentityStore;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{Role, Switchboard};
use switchboard_storage::{BackendKind, DieselStore, KEY_CACHE_TTL};
use switchboard_testkit::{Backend, TestDatabase};

fn open(db: &TestDatabase) -> Arc<DieselStore> {
    Arc::new(DieselStore::open(db.url(), None).unwrap().0)
}

/// On PostgreSQL the caches are used only while a listener runs: one per store, on `rt`.
fn listen(rt: &tokio::runtime::Runtime, db: &TestDatabase, store: &DieselStore) {
    if store.kind() != BackendKind::Postgres {
        return;
    }
    rt.spawn(switchboard_storage::listen::listen_for_caches(
        db.url().to_owned(),
        store.settings_cache(),
        store.key_cache(),
    ));
    let start = Instant::now();
    while !store.key_cache().in_use() {
        assert!(start.elapsed() < Duration::from_secs(10), "no listener");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Revokes every key behind the store's back (no notification, no invalidation).
fn revoke_by_hand(store: &DieselStore) {
    let mut conn = store.conn().unwrap();
    diesel::sql_query("UPDATE api_keys SET revoked_at = created_at")
        .execute(&mut *conn)
        .unwrap();
}

#[test]
fn lookups_are_cached_and_every_write_is_seen() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    for backend in Backend::ALL {
        let db = TestDatabase::new(backend);
        let a = open(&db);
        let b = open(&db);
        listen(&rt, &db, &a);
        listen(&rt, &db, &b);
        let services = Switchboard::new(a.clone());
        let boot = services
            .operator()
            .bootstrap("Keys", "keys@example.com")
            .unwrap();
        let hash = hash_api_key(&boot.api_key);
        let lookup = |s: &DieselStore| s.api_key_by_hash(&hash, None).unwrap().unwrap();

        // Cached on B: a change B's store did not make and nobody notified is not seen...
        let first = lookup(&b);
        assert_eq!(first.key.revoked_at, None, "{backend}");
        assert_eq!(b.key_cache().len(), 1, "{backend}");
        revoke_by_hand(&b);
        let filled = Instant::now();
        let cached = lookup(&b);
        if filled.elapsed() < KEY_CACHE_TTL / 2 {
            assert_eq!(cached.key.revoked_at, None, "{backend}: served from memory");
        }
        // ... until the entry's time to live has passed.
        std::thread::sleep(KEY_CACHE_TTL + Duration::from_millis(50));
        assert!(lookup(&b).key.revoked_at.is_some(), "{backend}");

        // A use recorded through B reaches B's cached entry (so the next one is a minute away).
        let db2 = TestDatabase::new(backend);
        let (a, b) = (open(&db2), open(&db2));
        listen(&rt, &db2, &a);
        listen(&rt, &db2, &b);
        let services = Switchboard::new(a.clone());
        let boot = services
            .operator()
            .bootstrap("Keys", "keys@example.com")
            .unwrap();
        let hash = hash_api_key(&boot.api_key);
        let lookup = |s: &DieselStore| s.api_key_by_hash(&hash, None).unwrap().unwrap();
        let found = lookup(&b);
        let now = now_micros();
        b.touch_api_key(found.key.id, now, now).unwrap();
        assert_eq!(lookup(&b).key.last_used_at, Some(now), "{backend}");

        // A revocation through A is refused by A's next lookup at once, and by B's: on
        // PostgreSQL by NOTIFY, well within the time to live; on SQLite (one serving process:
        // B stands for the operator's CLI) within the time to live.
        let bound = if a.kind() == BackendKind::Postgres {
            KEY_CACHE_TTL / 2
        } else {
            KEY_CACHE_TTL + Duration::from_millis(500)
        };
        lookup(&a);
        lookup(&b);
        let revoked_at = Instant::now();
        assert!(a.revoke_api_key(found.key.id, now_micros()).unwrap());
        assert!(lookup(&a).key.revoked_at.is_some(), "{backend}: the writer");
        loop {
            if lookup(&b).key.revoked_at.is_some() {
                break;
            }
            assert!(
                revoked_at.elapsed() < bound,
                "{backend}: B still serves the revoked key"
            );
            std::thread::sleep(Duration::from_millis(5));
        }

        // A role change through A is seen by B's next lookup in the same way.
        let org = boot.org_id;
        let user = found.key.user_id;
        let issued = services
            .operator()
            .operator_create_key(user, None, "second".into(), None)
            .unwrap();
        let hash = hash_api_key(&issued.secret);
        let role = |s: &DieselStore| {
            s.api_key_by_hash(&hash, Some(org))
                .unwrap()
                .unwrap()
                .effective
                .unwrap()
                .role
        };
        assert_eq!(role(&b), Some(Role::Owner), "{backend}");
        assert_eq!(role(&a), Some(Role::Owner), "{backend}");
        a.put_member(org, user, Role::Admin, now_micros()).unwrap();
        assert_eq!(
            role(&a),
            Some(Role::Admin),
            "{backend}: the writer, at once"
        );
        let changed = Instant::now();
        while role(&b) != Some(Role::Admin) {
            assert!(
                changed.elapsed() < bound,
                "{backend}: B still serves the old role"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

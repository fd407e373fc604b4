//! Test harness: the real app on a loopback port over a fresh database (SQLite file or
//! PostgreSQL database), seeded with one organization and one actor per identity case.

#![allow(dead_code)]

mod events;
pub mod sandboxes;

// Not every test binary uses the events' helpers.
#[allow(unused_imports)]
pub use events::*;

use std::sync::Arc;

use actix_web::{HttpServer, web};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use switchboard_api::extract::{BodyGate, BodyLimits};
use switchboard_api::{AppState, create_app};
use switchboard_domain::identity::api_keys::{ApiKeyRecord, generate_api_key};
use switchboard_domain::ports::IdentityStore;
use switchboard_domain::time_input::now_micros;
use switchboard_domain::{ApiKeyId, OrgId, Role, Switchboard, UserId};
use switchboard_storage::DieselStore;
use switchboard_testkit::{Backend, TestDatabase};

/// A user and an API key acting for them.
#[derive(Debug, Clone)]
pub struct Actor {
    pub user_id: UserId,
    pub key: String,
}

/// The running app and its seed data.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub services: Switchboard,
    pub store: Arc<DieselStore>,
    pub backend: Backend,
    /// The database URL (for raw access in tests, e.g. deleting rows from under the app).
    pub url: String,
    /// Organization A, where the actors below belong.
    pub org: OrgId,
    /// Organization B: the non-member belongs here only.
    pub other_org: OrgId,
    pub owner: Actor,
    pub admin: Actor,
    pub member: Actor,
    /// Member of B only (current org B).
    pub non_member: Actor,
    /// The owner's key bound to A.
    pub bound_owner: Actor,
    /// An expired key of the owner.
    pub expired: Actor,
    /// A revoked key of the owner.
    pub revoked: Actor,
    /// The app's room for body bytes in flight.
    pub bodies: Arc<BodyGate>,
    handle: actix_web::dev::ServerHandle,
    /// Live delivery of this app (its hub, limits, shutdown).
    pub live: Arc<switchboard_api::live::Live>,
    /// The LISTEN task on PostgreSQL (aborted on drop, before the database goes).
    pub listener: Option<tokio::task::JoinHandle<()>>,
    _db: TestDatabase,
}

impl TestApp {
    /// A request with the given key (`None`: no credentials).
    pub fn req(&self, method: Method, path: &str, key: Option<&str>) -> RequestBuilder {
        let b = self
            .client
            .request(method, format!("{}{}", self.base, path));
        match key {
            Some(k) => b.header("X-Access-Token", k),
            None => b,
        }
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Response {
        self.req(Method::GET, path, key).send().await.unwrap()
    }

    pub async fn post_json(&self, path: &str, key: Option<&str>, body: &Value) -> Response {
        self.req(Method::POST, path, key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Stops the server.
    pub async fn stop(self) {
        self.live.shutdown();
        self.handle.stop(true).await;
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(l) = self.listener.take() {
            l.abort();
        }
    }
}

/// Status and JSON body of a response.
pub async fn status_json(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text));
    (status, v)
}

fn key_for(services: &Switchboard, user: UserId, org: Option<OrgId>) -> String {
    services
        .operator()
        .operator_create_key(user, org, "test".into(), None)
        .unwrap()
        .secret
}

/// Starts the app over a fresh database of `backend` and seeds it.
pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_configured(backend, BodyLimits::default(), |s| s).await
}

/// As [`spawn_app`], reading bodies under `limits`.
pub async fn spawn_app_with(backend: Backend, limits: BodyLimits) -> TestApp {
    spawn_app_configured(backend, limits, |s| s).await
}

/// As [`spawn_app`], reading bodies under `limits`, the services passed through `configure`
/// first (e.g. to run sandboxes).
pub async fn spawn_app_configured(
    backend: Backend,
    limits: BodyLimits,
    configure: impl FnOnce(Switchboard) -> Switchboard,
) -> TestApp {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    spawn_app_on(backend, limits, listener, configure).await
}

/// As [`spawn_app_configured`], serving on `listener` (bound beforehand, e.g. so sandboxes
/// can be told where to post their webhooks).
pub async fn spawn_app_on(
    backend: Backend,
    limits: BodyLimits,
    listener: std::net::TcpListener,
    configure: impl FnOnce(Switchboard) -> Switchboard,
) -> TestApp {
    spawn_app_on_with_state(backend, limits, listener, configure, |s| s).await
}

/// As [`spawn_app_on`], the app's state passed through `state` last (e.g. the sandbox proxy's
/// configuration).
pub async fn spawn_app_on_with_state(
    backend: Backend,
    limits: BodyLimits,
    listener: std::net::TcpListener,
    configure: impl FnOnce(Switchboard) -> Switchboard,
    state: impl FnOnce(AppState) -> AppState,
) -> TestApp {
    let shape_state = state;
    let db = TestDatabase::new(backend);
    let db_url = db.url().to_owned();
    let url = db_url.clone();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || DieselStore::open(&url, None))
            .await
            .unwrap()
            .unwrap()
            .0,
    );
    let services = configure(Switchboard::new(store.clone()));
    let s = services.clone();
    let st = store.clone();
    let seeded = tokio::task::spawn_blocking(move || {
        let boot = s
            .operator()
            .bootstrap("Org A", "owner@example.com")
            .unwrap();
        let owner = Actor {
            user_id: boot.user_id,
            key: boot.api_key,
        };
        let admin_user = s
            .operator()
            .create_user("admin@example.com", None)
            .unwrap()
            .id;
        s.operator()
            .add_member(boot.org_id, admin_user, Role::Admin)
            .unwrap();
        let member_user = s
            .operator()
            .create_user("member@example.com", None)
            .unwrap()
            .id;
        s.operator()
            .add_member(boot.org_id, member_user, Role::Member)
            .unwrap();
        let b = s
            .operator()
            .bootstrap("Org B", "outsider@example.com")
            .unwrap();
        let non_member = Actor {
            user_id: b.user_id,
            key: b.api_key,
        };
        let admin = Actor {
            user_id: admin_user,
            key: key_for(&s, admin_user, None),
        };
        let member = Actor {
            user_id: member_user,
            key: key_for(&s, member_user, None),
        };
        let bound_owner = Actor {
            user_id: owner.user_id,
            key: key_for(&s, owner.user_id, Some(boot.org_id)),
        };
        // An expired key: stored directly, as the services refuse to issue one.
        let new = generate_api_key();
        let now = now_micros();
        st.insert_api_key(
            &ApiKeyRecord {
                id: ApiKeyId::new_random(),
                user_id: owner.user_id,
                org_id: None,
                name: "expired".into(),
                display_prefix: new.display_prefix.clone(),
                created_at: now - time::Duration::hours(2),
                last_used_at: None,
                expires_at: Some(now - time::Duration::hours(1)),
                revoked_at: None,
            },
            &new.hash,
        )
        .unwrap();
        let expired = Actor {
            user_id: owner.user_id,
            key: new.secret,
        };
        let revoked_key = s
            .operator()
            .operator_create_key(owner.user_id, None, "revoked".into(), None)
            .unwrap();
        s.operator()
            .operator_revoke_key(revoked_key.record.id)
            .unwrap();
        let revoked = Actor {
            user_id: owner.user_id,
            key: revoked_key.secret,
        };
        (
            boot.org_id,
            b.org_id,
            owner,
            admin,
            member,
            non_member,
            bound_owner,
            expired,
            revoked,
        )
    })
    .await
    .unwrap();
    let (org, other_org, owner, admin, member, non_member, bound_owner, expired, revoked) = seeded;

    let state = web::Data::new(shape_state(
        AppState::new(services.clone(), None).with_body_limits(limits),
    ));
    let bodies = state.bodies.clone();
    // Live delivery: appends wake this app's subscribers; on PostgreSQL, through LISTEN too.
    store.observe_appends(state.live.hub());
    let live = state.live.clone();
    let append_listener = (backend == Backend::Postgres).then(|| {
        tokio::spawn(switchboard_storage::listen::listen_for_appends(
            db_url.clone(),
            live.hub(),
        ))
    });
    let server = HttpServer::new(move || create_app(state.clone()))
        .workers(2)
        .disable_signals()
        .listen(listener)
        .unwrap();
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    tokio::spawn(server);
    TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        services,
        store,
        backend,
        url: db_url,
        org,
        other_org,
        owner,
        admin,
        member,
        non_member,
        bound_owner,
        expired,
        revoked,
        bodies,
        handle,
        live,
        listener: append_listener,
        _db: db,
    }
}

/// For each `async fn name(backend: Backend)` named, declares a module `name` with one
/// `#[tokio::test]` per backend: `name::sqlite` and `name::postgres`. In scope in every module
/// of the test binary (`tests/integration.rs` declares `#[macro_use] mod common;` first).
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    super::$name(switchboard_testkit::Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    super::$name(switchboard_testkit::Backend::Postgres).await;
                }
            }
        )*
    };
}

/// The settings route.
pub const SETTINGS: &str = "/api/organizations/app";

impl TestApp {
    /// Runs SQL on a connection of its own, outside the app (e.g. deleting a row from under it).
    pub async fn exec_sql(&self, sql: &str) {
        use diesel::connection::SimpleConnection;
        let url = self.url.clone();
        let sql = sql.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut conn = switchboard_storage::DatabaseUrl::parse(&url)
                .unwrap()
                .connect()
                .unwrap();
            conn.batch_execute(&sql).unwrap();
        })
        .await
        .unwrap();
    }

    /// `GET /api/organizations/app` with `key` (and `X-Org-Id: org` when given); must be 200.
    pub async fn settings_of(&self, key: &str, org: Option<OrgId>) -> Value {
        let mut r = self.req(Method::GET, SETTINGS, Some(key));
        if let Some(o) = org {
            r = r.header("X-Org-Id", o.to_string());
        }
        let (status, body) = status_json(r.send().await.unwrap()).await;
        assert_eq!(status, 200, "{}: GET settings: {body}", self.backend);
        body
    }

    /// Organization A's settings, read by its owner.
    pub async fn settings(&self) -> Value {
        self.settings_of(&self.owner.key, None).await
    }

    /// `POST /api/organizations/app` with `key` and a JSON body.
    pub async fn post_settings(&self, key: &str, body: &Value) -> (u16, Value) {
        status_json(self.post_json(SETTINGS, Some(key), body).await).await
    }

    /// `POST /api/organizations/app` with `key` and raw body bytes sent as JSON.
    pub async fn post_settings_raw(
        &self,
        key: Option<&str>,
        body: impl Into<Vec<u8>>,
    ) -> (u16, Value) {
        let r = self
            .req(Method::POST, SETTINGS, key)
            .header("content-type", "application/json")
            .body(body.into());
        status_json(r.send().await.unwrap()).await
    }
}

/// `{"detail": message}`.
pub fn detail(message: &str) -> Value {
    serde_json::json!({ "detail": message })
}

/// Asserts a FastAPI 422 body with exactly one entry, at `loc`, of type `error_type`, with a
/// message and the offending input.
#[track_caller]
pub fn assert_one_error(body: &Value, loc: &Value, error_type: &str) {
    let entries = body["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("not a 422 body: {body}"));
    assert_eq!(entries.len(), 1, "{body}");
    let e = &entries[0];
    assert_eq!(&e["loc"], loc, "{body}");
    assert_eq!(e["type"], error_type, "{body}");
    assert!(e["msg"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(e.get("input").is_some(), "{body}");
}

/// Parses an RFC 3339 date-time as the API writes it.
#[track_caller]
pub fn instant(v: &Value) -> time::OffsetDateTime {
    let s = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
}

//! Test harness: the real app on a loopback port over a fresh database (SQLite file or
//! PostgreSQL database), seeded with one organization and one actor per identity case.

#![allow(dead_code)]

use std::sync::Arc;

use actix_web::{HttpServer, web};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use switchboard_api::{AppState, create_app};
use switchboard_domain::api_keys::{ApiKeyRecord, generate_api_key};
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
    handle: actix_web::dev::ServerHandle,
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
        self.handle.stop(true).await;
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
        .operator_create_key(user, org, "test".into(), None)
        .unwrap()
        .secret
}

/// Starts the app over a fresh database of `backend` and seeds it.
pub async fn spawn_app(backend: Backend) -> TestApp {
    let db = TestDatabase::new(backend);
    let url = db.url().to_owned();
    let store = Arc::new(
        tokio::task::spawn_blocking(move || DieselStore::open(&url, None))
            .await
            .unwrap()
            .unwrap()
            .0,
    );
    let services = Switchboard::new(store.clone());
    let s = services.clone();
    let st = store.clone();
    let seeded = tokio::task::spawn_blocking(move || {
        let boot = s.bootstrap("Org A", "owner@example.com").unwrap();
        let owner = Actor {
            user_id: boot.user_id,
            key: boot.api_key,
        };
        let admin_user = s.create_user("admin@example.com", None).unwrap().id;
        s.add_member(boot.org_id, admin_user, Role::Admin).unwrap();
        let member_user = s.create_user("member@example.com", None).unwrap().id;
        s.add_member(boot.org_id, member_user, Role::Member)
            .unwrap();
        let b = s.bootstrap("Org B", "outsider@example.com").unwrap();
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
            .operator_create_key(owner.user_id, None, "revoked".into(), None)
            .unwrap();
        s.operator_revoke_key(revoked_key.record.id).unwrap();
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

    let state = web::Data::new(AppState::new(services.clone(), None));
    let server = HttpServer::new(move || create_app(state.clone()))
        .workers(2)
        .disable_signals()
        .bind(("127.0.0.1", 0))
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
        org,
        other_org,
        owner,
        admin,
        member,
        non_member,
        bound_owner,
        expired,
        revoked,
        handle,
        _db: db,
    }
}

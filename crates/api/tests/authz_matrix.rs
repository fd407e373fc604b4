//! The authorization matrix, generated: every endpoint × actor × target, on both backends, each
//! cell's expected status written once in the table below (API.md, Reliability and security).
//!
//! Actors: the owner, an admin and a member of organization A; a member (the owner) of B; a
//! key bound to A and one bound to B; a revoked and an expired key; the session key of a
//! sandbox in A and of one in B; no credentials. Each presents its secret in the header the
//! endpoint reads (`X-Access-Token` on API routes and websocket upgrades, `X-Session-API-Key` on
//! webhooks), so a session key on an API route and an API key on a webhook are cells too. The
//! websockets' cells are 101 (the first frame came: the socket is open to the actor) or the
//! close code (4001, 4004).
//!
//! Targets: the actor's own resource, another member's in A, one in B, an unknown id. A
//! resource is made fresh for every cell (a delete cannot affect the next one): API keys,
//! registered sandboxes, conversations (created through the webhook of a sandbox of the
//! resource's owner; the session actors' own conversation through their own sandbox).
//! Untargeted endpoints repeat one status over the four targets.
//!
//! Adding an endpoint is one row in [`rows`]. Besides the table, every cell is checked against
//! the rule no table may break: no 2xx for a resource of the other organization, except a
//! batch get answering `null` for it (checked: the body holds no such resource).

use crate::common;

use common::sandboxes::{SandboxOptions, spawn_sandbox_app};
use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::{OrgId, UserId};
use switchboard_testkit::Backend;

on_both_backends!(matrix);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Actor {
    OwnerA,
    AdminA,
    MemberA,
    MemberB,
    KeyBoundA,
    KeyBoundB,
    Revoked,
    Expired,
    SessionA,
    SessionB,
    Nobody,
}

const ACTORS: [Actor; 11] = [
    Actor::OwnerA,
    Actor::AdminA,
    Actor::MemberA,
    Actor::MemberB,
    Actor::KeyBoundA,
    Actor::KeyBoundB,
    Actor::Revoked,
    Actor::Expired,
    Actor::SessionA,
    Actor::SessionB,
    Actor::Nobody,
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Own,
    OtherInA,
    InB,
    Unknown,
}

const TARGETS: [Target; 4] = [Target::Own, Target::OtherInA, Target::InB, Target::Unknown];

/// What `{t}` in a row's path is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// No target: the path has no `{t}`.
    None,
    /// An API key id.
    Key,
    /// A (registered) sandbox id.
    Sandbox,
    /// A conversation id.
    Conversation,
    /// An organization id: the target's organization (issue 25).
    Org,
    /// `<org>/members/<user>`: the target's organization and user (issue 25).
    OrgMember,
}

/// Where the credential goes.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Api,
    Webhook,
    /// A websocket upgrade with `X-Access-Token`; without a credential, a first frame that is
    /// not `auth`. The cell's "status" is 101 when the first frame arrives (the socket is
    /// open for the actor), else the close code (4001, 4004) or the handshake's HTTP status.
    Socket,
}

/// One endpoint: its request and the expected status of each (actor, target) cell, actors in
/// [`ACTORS`] order, targets in [`TARGETS`] order.
struct Row {
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
    kind: Kind,
    via: Via,
    expect: [[u16; 4]; 11],
}

/// A sandbox's or a conversation's visibility: its owner, and its organization's admins and
/// owners, get `ok` (own, another member's in A; B's actors their own in B); every other
/// user or key gets `hidden`; revoked, expired, session keys and no key get `refused`. Actors
/// in [`ACTORS`] order, targets in [`TARGETS`] order.
/// The event the webhook row posts, and its batch.
const WEBHOOK_EVENT_ID: &str = "5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f";
const WEBHOOK_BATCH: &str = r#"[{"id":"5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f","timestamp":"2026-11-23T10:00:00","kind":"PauseEvent"}]"#;

/// How many events with id `event` conversation `conversation` holds, as stored.
async fn stored_events(app: &common::TestApp, conversation: &str, event: &str) -> usize {
    use switchboard_domain::ports::EventStore;
    let id = switchboard_domain::ConversationId(
        switchboard_domain::parse_uuid(conversation).expect("a conversation id"),
    );
    let store = app.store.clone();
    let event = event.to_owned();
    tokio::task::spawn_blocking(move || store.get_events(id, &[event]).unwrap().len())
        .await
        .unwrap()
}

const fn visibility(ok: u16, hidden: u16, refused: u16) -> [[u16; 4]; 11] {
    let (h, r) = (hidden, refused);
    [
        [ok, ok, h, h],
        [ok, ok, h, h],
        [ok, h, h, h],
        [ok, h, ok, h],
        [ok, ok, h, h],
        [ok, h, ok, h],
        [r, r, r, r],
        [r, r, r, r],
        [r, r, r, r],
        [r, r, r, r],
        [r, r, r, r],
    ]
}

/// [`visibility`] over HTTP: 404 for what the caller may not see (not 403: ids do not leak),
/// 401 without a usable API key.
const fn by_visibility(ok: u16) -> [[u16; 4]; 11] {
    visibility(ok, 404, 401)
}

/// An organization's route: `ok` for its owners and admins (and `member_ok` for its members)
/// in their own organization; 404 for one they are not a member of; 403 for a key bound to
/// another; 401 for revoked, expired, session keys and none. Targets: own, A, B, unknown.
const fn org_cells(ok: u16, member_ok: u16) -> [[u16; 4]; 11] {
    const R: [u16; 4] = [401, 401, 401, 401];
    [
        [ok, ok, 404, 404],
        [ok, ok, 404, 404],
        [member_ok, member_ok, 404, 404],
        [ok, 404, ok, 404],
        [ok, ok, 403, 403],
        [ok, 403, ok, 403],
        R,
        R,
        R,
        R,
        R,
    ]
}

/// The same status for the four targets.
const fn same(s: [u16; 11]) -> [[u16; 4]; 11] {
    let mut out = [[0; 4]; 11];
    let mut i = 0;
    while i < 11 {
        out[i] = [s[i], s[i], s[i], s[i]];
        i += 1;
    }
    out
}

fn row(
    method: Method,
    path: &'static str,
    body: Option<&'static str>,
    kind: Kind,
    via: Via,
    expect: [[u16; 4]; 11],
) -> Row {
    Row {
        method,
        path,
        body,
        kind,
        via,
        expect,
    }
}

/// The table. Columns per actor: [own, another member's in A, in B, unknown].
#[rustfmt::skip]
fn rows() -> Vec<Row> {
    use Kind as K;
    use Via::{Api, Socket, Webhook};
    // Actors: OwnerA AdminA MemberA MemberB KeyBoundA KeyBoundB Revoked Expired SessionA SessionB Nobody
    let ok_for_users = same([200, 200, 200, 200, 200, 200, 401, 401, 401, 401, 401]);
    vec![
        row(Method::GET, "/api/v1/users/me", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/organizations/app", None, K::None, Api, ok_for_users),
        // Any member writes the budget and flags; marketplaces need edit_org_settings (owners
        // and admins; reference §2.2).
        row(Method::POST, "/api/organizations/app", Some(r#"{"max_budget_per_task":5}"#), K::None, Api,
            ok_for_users),
        row(Method::POST, "/api/organizations/app", Some(r#"{"registered_marketplaces":[]}"#), K::None, Api,
            same([200, 200, 403, 200, 200, 200, 401, 401, 401, 401, 401])),
        row(Method::GET, "/api/keys", None, K::None, Api, ok_for_users),
        // Issue 31: the caller's own LLM key (any member, their own only).
        row(Method::GET, "/api/keys/llm/byor", None, K::None, Api, ok_for_users),
        // The service routes take the service key only (this server has none: 503 whatever
        // else is presented); their health needs nothing.
        row(Method::POST, "/api/service/users/5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f/orgs/5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f/api-keys",
            Some(r#"{"name":"automation"}"#), K::None, Api, same([503; 11])),
        row(Method::GET, "/api/service/health", None, K::None, Api, same([200; 11])),
        // Issue 25. Agent profiles are each user's own, in the effective organization.
        row(Method::GET, "/api/agent-profiles", None, K::None, Api, ok_for_users),
        row(Method::POST, "/api/agent-profiles/m", Some(r#"{"llm_profile_ref":"x"}"#), K::None, Api,
            same([201, 201, 201, 201, 201, 201, 401, 401, 401, 401, 401])),
        // The organization's LLM profiles and provider connections, and one member: any
        // member reads (view_org_settings), owners and admins write (edit_org_settings); a
        // non-member is 404, a key bound to another organization 403.
        row(Method::GET, "/api/organizations/{t}/profiles", None, K::Org, Api, org_cells(200, 200)),
        row(Method::POST, "/api/organizations/{t}/profiles/m", Some(r#"{"llm":{"model":"m"}}"#), K::Org, Api,
            org_cells(201, 403)),
        row(Method::GET, "/api/organizations/{t}/provider-connections", None, K::Org, Api, org_cells(200, 200)),
        row(Method::POST, "/api/organizations/{t}/provider-connections",
            Some(r#"{"display_name":"m","provider":"openai","api_key":"sk-m"}"#), K::Org, Api, org_cells(201, 403)),
        row(Method::GET, "/api/organizations/{t}", None, K::OrgMember, Api, org_cells(200, 200)),
        // Issue 34: members are listed and counted by any member; a role is changed by owners
        // (admins and members) and admins (members only), never one's own or an owner's (the
        // body asks for `member`, so the owner's change of a member changes nothing and every
        // cell stays repeatable); the audit log is the owners'. Removal is destructive:
        // tests/members_api covers it actor by actor.
        row(Method::GET, "/api/organizations/{t}/members", None, K::Org, Api, org_cells(200, 200)),
        row(Method::GET, "/api/organizations/{t}/members/count", None, K::Org, Api, org_cells(200, 200)),
        row(Method::PATCH, "/api/organizations/{t}", Some(r#"{"role":"member"}"#), K::OrgMember, Api, [
            [403, 200, 404, 404],
            [403, 403, 404, 404],
            [403, 403, 404, 404],
            [403, 404, 403, 404],
            [403, 200, 403, 403],
            [403, 403, 403, 403],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
        ]),
        row(Method::GET, "/api/organizations/{t}/audit-log", None, K::Org, Api, [
            [200, 200, 404, 404],
            [403, 403, 404, 404],
            [403, 403, 404, 404],
            [200, 404, 200, 404],
            [200, 200, 403, 403],
            [200, 403, 200, 403],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
        ]),
        row(Method::POST, "/api/keys", Some(r#"{"name":"m"}"#), K::None, Api, ok_for_users),
        // A key is its user's: another's, or one of another org, is 404.
        // (For B's actors, "in B" is their own.)
        row(Method::DELETE, "/api/keys/{t}", None, K::Key, Api, [
            [200, 404, 404, 404],
            [200, 404, 404, 404],
            [200, 404, 404, 404],
            [200, 404, 200, 404],
            [200, 404, 404, 404],
            [200, 404, 200, 404],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
        ]),
        // The LLM catalogs and the skills: any member's key (issue 25).
        row(Method::GET, "/api/v1/config/models/search?limit=5", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/config/providers/search", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/skills/search", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/sandboxes/search", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/sandbox-specs/search", None, K::None, Api, ok_for_users),
        // Batch get: 200 always for users; invisible ones are null (checked below).
        row(Method::GET, "/api/v1/sandboxes?id={t}", None, K::Sandbox, Api,
            same([200, 200, 200, 200, 200, 200, 401, 401, 401, 401, 401])),
        // Members see their own sandboxes; admins and owners all of their org's.
        row(Method::DELETE, "/api/v1/sandboxes/{t}", None, K::Sandbox, Api, by_visibility(200)),
        // The sandboxes here are registered (not run by Switchboard): pausing one is 409.
        row(Method::POST, "/api/v1/sandboxes/{t}/pause", None, K::Sandbox, Api, by_visibility(409)),
        row(Method::POST, "/api/v1/sandboxes/{t}/resume", None, K::Sandbox, Api, by_visibility(409)),
        // Specs are the installation's, the same for every user.
        row(Method::GET, "/api/v1/sandbox-specs?id=default", None, K::None, Api, ok_for_users),
        // Start tasks by id: a user's own only; an unknown id is null.
        row(Method::GET, "/api/v1/app-conversations/start-tasks?ids=5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f",
            None, K::None, Api, ok_for_users),
        // Conversations: the owner, and the org's admins and owners (view_org_conversations).
        row(Method::GET, "/api/v1/conversation/{t}/events/search", None, K::Conversation, Api, by_visibility(200)),
        // The websockets: the permissions of reading the conversation's events.
        row(Method::GET, "/sockets/events/{t}?resend_mode=all", None, K::Conversation, Socket, visibility(101, 4004, 4001)),
        row(Method::GET, "/sockets/session/{t}?after_seq=-1", None, K::Conversation, Socket, visibility(101, 4004, 4001)),
        row(Method::GET, "/api/v1/conversation/{t}/events/count", None, K::Conversation, Api, by_visibility(200)),
        // App conversations: lists and counts hold what the caller sees; the batch get answers
        // null for the others (checked below); PATCH follows the conversation's visibility.
        row(Method::GET, "/api/v1/app-conversations/search", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/app-conversations/count", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/app-conversations/start-tasks/search", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/app-conversations/start-tasks/count", None, K::None, Api, ok_for_users),
        row(Method::GET, "/api/v1/app-conversations?ids={t}", None, K::Conversation, Api,
            same([200, 200, 200, 200, 200, 200, 401, 401, 401, 401, 401])),
        row(Method::PATCH, "/api/v1/app-conversations/{t}", Some(r#"{"title":"m"}"#), K::Conversation, Api, by_visibility(200)),
        // Sending a message and deleting follow the conversation's visibility; a registered
        // sandbox (no agent server Switchboard runs) cannot take a message: 409.
        row(Method::POST, "/api/v1/app-conversations/{t}/send-message",
            Some(r#"{"role":"user","content":[{"type":"text","text":"m"}]}"#), K::Conversation, Api, by_visibility(409)),
        row(Method::DELETE, "/api/v1/app-conversations/{t}", None, K::Conversation, Api, by_visibility(200)),
        // Webhooks: only a session key; a sandbox writes only its owner's conversations in its
        // organization (an unknown id is created as its owner's; B's "in B" target is another
        // sandbox of the same user). Another's conversation is answered as an unknown one and
        // nothing is stored (ids do not leak: issue 24 item 5).
        row(Method::POST, "/api/v1/webhooks/events/{t}",
            Some(WEBHOOK_BATCH),
            K::Conversation, Webhook, [
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [401, 401, 401, 401],
            [200, 200, 200, 200],
            [200, 200, 200, 200],
            [401, 401, 401, 401],
        ]),
    ]
}

async fn matrix(backend: Backend) {
    let sapp = spawn_sandbox_app(backend, SandboxOptions::default()).await;
    let app = &sapp.app;
    let s = app.services.clone();
    let (b_user, b_org) = (app.non_member.user_id, app.other_org);
    let bound_b = tokio::task::spawn_blocking(move || {
        s.operator()
            .operator_create_key(b_user, Some(b_org), "bound to B".into(), None)
            .unwrap()
            .secret
    })
    .await
    .unwrap();
    let session_a = register(app, app.org, app.member.user_id).await;
    let session_b = register(app, app.other_org, app.non_member.user_id).await;

    let secret = |a: Actor| -> Option<String> {
        Some(match a {
            Actor::OwnerA => app.owner.key.clone(),
            Actor::AdminA => app.admin.key.clone(),
            Actor::MemberA => app.member.key.clone(),
            Actor::MemberB => app.non_member.key.clone(),
            Actor::KeyBoundA => app.bound_owner.key.clone(),
            Actor::KeyBoundB => bound_b.clone(),
            Actor::Revoked => app.revoked.key.clone(),
            Actor::Expired => app.expired.key.clone(),
            Actor::SessionA => session_a.1.clone(),
            Actor::SessionB => session_b.1.clone(),
            Actor::Nobody => return None,
        })
    };
    // The actor's own user and organization.
    let own = |a: Actor| -> (UserId, OrgId) {
        match a {
            Actor::AdminA => (app.admin.user_id, app.org),
            Actor::MemberA | Actor::SessionA => (app.member.user_id, app.org),
            Actor::MemberB | Actor::KeyBoundB | Actor::SessionB => {
                (app.non_member.user_id, app.other_org)
            }
            _ => (app.owner.user_id, app.org),
        }
    };

    let mut cells = 0;
    let mut failures = Vec::new();
    for r in rows() {
        for (ai, actor) in ACTORS.into_iter().enumerate() {
            for (ti, target) in TARGETS.into_iter().enumerate() {
                if r.kind == Kind::None && target != Target::Own {
                    continue;
                }
                let (user, org) = own(actor);
                let (t_user, t_org) = match target {
                    Target::Own => (user, org),
                    Target::OtherInA if user == app.owner.user_id => (app.member.user_id, app.org),
                    Target::OtherInA => (app.owner.user_id, app.org),
                    Target::InB => (app.non_member.user_id, app.other_org),
                    Target::Unknown => (user, org),
                };
                let id = if target == Target::Unknown && r.kind == Kind::OrgMember {
                    format!("{}/members/{}", uuid::Uuid::new_v4(), uuid::Uuid::new_v4())
                } else if target == Target::Unknown {
                    uuid::Uuid::new_v4().to_string()
                } else {
                    match r.kind {
                        Kind::None => String::new(),
                        Kind::Key => make_key(app, t_user).await,
                        Kind::Org => t_org.to_string(),
                        Kind::OrgMember => format!("{t_org}/members/{t_user}"),
                        Kind::Sandbox => register(app, t_org, t_user).await.0,
                        Kind::Conversation => {
                            // A session actor's own conversation is its own sandbox's.
                            let session = match (actor, target) {
                                (Actor::SessionA, Target::Own) => session_a.1.clone(),
                                (Actor::SessionB, Target::Own) => session_b.1.clone(),
                                _ => register(app, t_org, t_user).await.1,
                            };
                            make_conversation(app, &session).await
                        }
                    }
                };
                let path = r.path.replace("{t}", &id);
                if r.via == Via::Socket {
                    let outcome = socket_cell(&app.base, &path, secret(actor).as_deref()).await;
                    cells += 1;
                    let want = r.expect[ai][ti];
                    if outcome != want {
                        failures.push(format!(
                            "{} as {actor:?} on {target:?}: {outcome} (table: {want})",
                            r.path
                        ));
                    }
                    let crosses = match target {
                        Target::InB => org == app.org,
                        Target::OtherInA => org == app.other_org,
                        _ => false,
                    };
                    if crosses && outcome == 101 {
                        failures.push(format!("CROSS-ORG {} as {actor:?} on {target:?}", r.path));
                    }
                    continue;
                }
                let mut req = app.req(r.method.clone(), &path, None);
                if let Some(k) = secret(actor) {
                    req = match r.via {
                        Via::Api | Via::Socket => req.header("X-Access-Token", k),
                        Via::Webhook => req.header("X-Session-API-Key", k),
                    };
                }
                if let Some(b) = r.body {
                    req = req.header("content-type", "application/json").body(b);
                }
                let (status, body) = common::status_json(req.send().await.unwrap()).await;
                cells += 1;
                let want = r.expect[ai][ti];
                if status != want {
                    failures.push(format!(
                        "{} {} as {actor:?} on {target:?}: {status} (table: {want}) {body}",
                        r.method, r.path
                    ));
                }
                // The rule no table may break.
                let crosses = match target {
                    Target::InB => org == app.org,
                    Target::OtherInA => org == app.other_org,
                    _ => false,
                };
                if crosses && (200..300).contains(&status) && r.kind != Kind::None {
                    let null_batch = body
                        .as_array()
                        .is_some_and(|a| a.iter().all(Value::is_null));
                    // A webhook into another's conversation is answered as an unknown id's
                    // and must store nothing there (issue 24 item 5).
                    let nothing_stored = r.via == Via::Webhook
                        && stored_events(app, &id, WEBHOOK_EVENT_ID).await == 0;
                    if !null_batch && !nothing_stored {
                        failures.push(format!(
                            "CROSS-ORG {} {} as {actor:?} on {target:?}: {status} {body}",
                            r.method, r.path
                        ));
                    }
                }
                // A member sees only its own sandboxes and conversations in a batch get.
                if matches!(r.kind, Kind::Sandbox | Kind::Conversation)
                    && r.method == Method::GET
                    && r.path.contains('?')
                    && status == 200
                {
                    let visible = !body[0].is_null();
                    let should = match target {
                        Target::Own => true,
                        Target::OtherInA => {
                            matches!(actor, Actor::OwnerA | Actor::AdminA | Actor::KeyBoundA)
                        }
                        Target::InB => matches!(actor, Actor::MemberB | Actor::KeyBoundB),
                        Target::Unknown => false,
                    };
                    if visible != should {
                        failures.push(format!(
                            "batch get as {actor:?} on {target:?}: visible {visible} {body}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{backend}: {} of {cells} cells differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{backend}: {cells} cells checked");
}

async fn register(app: &common::TestApp, org: OrgId, user: UserId) -> (String, String) {
    let s = app.services.clone();
    let r = tokio::task::spawn_blocking(move || s.sandboxes().register_sandbox(org, user).unwrap())
        .await
        .unwrap();
    (r.sandbox_id.to_string(), r.session_api_key)
}

async fn make_key(app: &common::TestApp, user: UserId) -> String {
    let s = app.services.clone();
    tokio::task::spawn_blocking(move || {
        s.operator()
            .operator_create_key(user, None, "target".into(), None)
            .unwrap()
            .record
            .id
            .to_string()
    })
    .await
    .unwrap()
}

async fn make_conversation(app: &common::TestApp, session: &str) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let r = app
        .req(Method::POST, "/api/v1/webhooks/conversations", None)
        .header("X-Session-API-Key", session)
        .json(&json!({"id": id, "title": "matrix", "execution_status": "idle"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    id
}

/// One websocket cell: 101 when the first frame arrives, else the close code the server sends
/// (or the handshake's HTTP status). Without a key the first frame sent is not `auth`.
async fn socket_cell(base: &str, path: &str, key: Option<&str>) -> u16 {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let url = format!("{}{path}", base.replacen("http://", "ws://", 1));
    let mut req = url.into_client_request().unwrap();
    if let Some(k) = key {
        req.headers_mut()
            .insert("X-Access-Token", k.parse().unwrap());
    }
    let mut ws = match tokio_tungstenite::connect_async(req).await {
        Ok((ws, _)) => ws,
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => return r.status().as_u16(),
        Err(e) => panic!("{path}: {e}"),
    };
    if key.is_none() {
        ws.send(Message::text(r#"{"type":"hello"}"#)).await.unwrap();
    }
    loop {
        let m = tokio::time::timeout(std::time::Duration::from_secs(20), ws.next())
            .await
            .expect("a frame or a close within 20 s");
        match m {
            Some(Ok(Message::Text(_))) => {
                let _ = ws.close(None).await;
                return 101;
            }
            Some(Ok(Message::Close(Some(c)))) => return u16::from(c.code),
            Some(Ok(Message::Close(None))) | None => return 1005,
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("{path}: {e}"),
        }
    }
}

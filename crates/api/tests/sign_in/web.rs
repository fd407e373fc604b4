//! Sign-in through the provider, the account page, and every refusal.

use reqwest::Method;
use serde_json::Value;
use switchboard_domain::ports::IdentityStore;
use switchboard_testkit::Backend;
use switchboard_testkit::oidc::Browser;

use crate::common::status_json;
use crate::sign_in::rig::{ENGINEERING, EXAMPLE_COM, csrf, provider_missing, spawn};

const RULES: [&str; 2] = [
    "group:engineering=6a1e0c52-4b7f-4d2e-9c31-0f5e8d7a6b41:member",
    "domain:example.com=7b2f1d63-5c80-4e3f-8d42-1a6f9e8b7c52:admin",
];

/// `GET /api/v1/users/me` with a key (and `X-Org-Id`).
async fn me(app: &crate::common::TestApp, key: &str, org: Option<&str>) -> (u16, Value) {
    let mut r = app.req(Method::GET, "/api/v1/users/me", Some(key));
    if let Some(o) = org {
        r = r.header("X-Org-Id", o);
    }
    status_json(r.send().await.unwrap()).await
}

/// A first sign-in creates the user, a member by the rules (a domain rule only for a verified
/// e-mail); the member makes a key on the account page, uses it, revokes it; a second
/// sign-in is the same user; signing out ends the session.
pub async fn a_member_signs_in_and_makes_a_key(backend: Backend) {
    if provider_missing(backend) {
        return;
    }
    let s = spawn(backend, &RULES, 3600).await;
    let app = &s.app;
    // Not signed in: the account page sends to /login.
    let anon = Browser::new().get(&format!("{}/account", app.base)).await;
    assert_eq!(
        (anon.status, anon.location.as_deref()),
        (
            303,
            Some(format!("{}/login?next=/account", app.base)).as_deref()
        ),
        "{backend}"
    );

    let (browser, page) = s.signed_in("alice", "/account").await;
    assert_eq!(page.status, 200, "{backend}: {page:?}");
    assert!(page.url.ends_with("/account"), "{backend}: {}", page.url);
    assert!(page.body.contains("alice@example.com"), "{backend}");
    assert!(
        page.body.contains("Engineering") && page.body.contains("Example"),
        "{backend}: both rules"
    );
    let store = app.store.clone();
    let alice = tokio::task::spawn_blocking(move || {
        store.user_by_email("alice@example.com").unwrap().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(alice.name.as_deref(), Some("Alice Example"), "{backend}");
    assert_eq!(
        alice.current_org_id.map(|o| o.to_string()).as_deref(),
        Some(ENGINEERING),
        "{backend}: the first rule's"
    );

    // A key made on the page works on the API, in both organizations, with the rules' roles.
    let made = browser
        .post_form(
            &format!("{}/account/keys", app.base),
            &[("csrf", &csrf(&page)), ("name", "canvas")],
        )
        .await;
    assert_eq!(made.status, 200, "{backend}: {made:?}");
    let key = made
        .body
        .split("id=\"new-key\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap()
        .to_owned();
    assert!(key.starts_with("sb_"), "{backend}: {key}");
    let (status, body) = me(app, &key, None).await;
    assert_eq!(
        (status, body["email"].clone(), body["role"].clone()),
        (200, "alice@example.com".into(), "member".into()),
        "{backend}"
    );
    let (_, body) = me(app, &key, Some(EXAMPLE_COM)).await;
    assert_eq!(body["role"], "admin", "{backend}");
    // A form without the session's token does nothing.
    let forged = browser
        .post_form(
            &format!("{}/account/keys", app.base),
            &[("csrf", "forged"), ("name", "x")],
        )
        .await;
    assert_eq!(forged.status, 403, "{backend}");
    assert!(
        !Browser::new()
            .post_form(
                &format!("{}/account/keys", app.base),
                &[("csrf", &csrf(&page)), ("name", "x")]
            )
            .await
            .body
            .contains("new-key")
    );

    // Revoked on the page: refused at once.
    let listing = browser.get(&format!("{}/account", app.base)).await;
    let id = listing
        .body
        .split("data-key-id=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let revoked = browser
        .post_form(
            &format!("{}/account/keys/{id}/revoke", app.base),
            &[("csrf", &csrf(&listing))],
        )
        .await;
    assert_eq!(revoked.status, 303, "{backend}: {revoked:?}");
    assert_eq!(me(app, &key, None).await.0, 401, "{backend}");

    // bob: unverified e-mail: the group rule, not the domain rule. carol: the domain rule.
    let (_, bob) = s.signed_in("bob", "/account").await;
    assert!(
        bob.body.contains("Engineering") && !bob.body.contains("Example"),
        "{backend}: {}",
        bob.body
    );
    let (_, carol) = s.signed_in("carol", "/account").await;
    assert!(
        carol.body.contains("Example") && !carol.body.contains("Engineering"),
        "{backend}"
    );

    // Again as alice: the same user; the audit log has the rules' additions.
    let (_, again) = s.signed_in("alice", "/account").await;
    assert_eq!(again.status, 200);
    let store = app.store.clone();
    let same = tokio::task::spawn_blocking(move || {
        store
            .user_by_email("alice@example.com")
            .unwrap()
            .unwrap()
            .id
    })
    .await
    .unwrap();
    assert_eq!(same, alice.id, "{backend}");

    // Signing out ends the session.
    let out = browser
        .post_form(
            &format!("{}/logout", app.base),
            &[("csrf", &csrf(&listing))],
        )
        .await;
    assert_eq!(out.status, 200, "{backend}");
    let after = browser.get(&format!("{}/account", app.base)).await;
    assert_eq!(after.status, 303, "{backend}: signed out");
}

/// Without a rule a new user belongs nowhere, and the page says so.
pub async fn without_a_rule_no_membership(backend: Backend) {
    if provider_missing(backend) {
        return;
    }
    let s = spawn(backend, &[], 3600).await;
    let (_, page) = s.signed_in("carol", "/account").await;
    assert_eq!(page.status, 200, "{backend}");
    assert!(
        page.body
            .contains("You are not a member of any organization yet"),
        "{backend}"
    );
    let store = s.app.store.clone();
    let carol = tokio::task::spawn_blocking(move || {
        let u = store.user_by_email("carol@example.com").unwrap().unwrap();
        (u.current_org_id, store.memberships(u.id).unwrap().len())
    })
    .await
    .unwrap();
    assert_eq!(carol, (None, 0), "{backend}");
}

/// Signs in at the provider as alice: the callback URL it returns to (not followed).
async fn at_callback(browser: &Browser, start: &str, callback: &str) -> String {
    browser
        .sign_in_at_provider(start, "alice", "alice-password", callback)
        .await
        .location
        .expect("a redirect to the callback")
}

/// A tampered state, a callback in another browser, a replayed callback, a mismatched
/// nonce, an expired ID token, a wrong issuer and a disabled user are all refused.
pub async fn refusals(backend: Backend) {
    if provider_missing(backend) {
        return;
    }
    let s = spawn(backend, &RULES, 3600).await;
    let app = &s.app;
    let callback = s.callback();
    let start = format!("{}/login", app.base);
    // Tampered state.
    let browser = Browser::new();
    let url = at_callback(&browser, &start, &callback).await;
    let tampered = url.replace("state=", "state=x");
    let page = browser.get(&tampered).await;
    assert_eq!(page.status, 400, "{backend}: {page:?}");
    // The right callback in another browser (no sign-in cookie).
    let page = Browser::new().get(&url).await;
    assert_eq!(page.status, 400, "{backend}");
    assert!(
        page.body.contains("not started in this browser"),
        "{backend}"
    );
    // Once in its own browser, then replayed there: the state is used.
    let page = browser.get(&url).await;
    assert_eq!(page.status, 303, "{backend}: {page:?}");
    let replay = browser.get(&url).await;
    assert_eq!(replay.status, 400, "{backend}: a replayed callback");
    // A mismatched nonce: the ID token's nonce is not the sign-in's.
    let browser = Browser::new();
    let url = at_callback(&browser, &start, &callback).await;
    app.exec_sql("UPDATE sign_in_states SET nonce = 'not-the-nonce'")
        .await;
    let page = browser.get(&url).await;
    assert_eq!(page.status, 403, "{backend}: {page:?}");
    assert!(
        page.body.to_lowercase().contains("nonce"),
        "{backend}: {}",
        page.body
    );
    // A wrong password stays at the provider.
    let browser = Browser::new();
    let page = browser
        .sign_in_at_provider(&start, "alice", "wrong", &callback)
        .await;
    assert_eq!(page.status, 401, "{backend}: the provider's refusal");
    // The provider refuses (the person aborts): said plainly.
    let browser = Browser::new();
    let page = browser
        .follow(browser.get(&start).await, Some(&callback))
        .await;
    let abort = browser
        .follow(
            browser.get(&format!("{}/abort", page.url)).await,
            Some(&callback),
        )
        .await;
    let refused = browser.get(abort.location.as_deref().unwrap()).await;
    assert_eq!(refused.status, 403, "{backend}: {refused:?}");
    // A disabled user: the session ends at once, and signing in is refused.
    let (browser, page) = s.signed_in("alice", "/account").await;
    assert_eq!(page.status, 200);
    let (services, store) = (app.services.clone(), app.store.clone());
    tokio::task::spawn_blocking(move || {
        let alice = store.user_by_email("alice@example.com").unwrap().unwrap();
        services.user_admin().set_disabled(alice.id, true).unwrap();
    })
    .await
    .unwrap();
    let page = browser.get(&format!("{}/account", app.base)).await;
    assert_eq!(page.status, 403, "{backend}: {page:?}");
    let (_, page) = s.signed_in("alice", "/account").await;
    assert_eq!(page.status, 403, "{backend}");
    assert!(page.body.contains("disabled"), "{backend}");

    // An expired ID token (the provider's clock two minutes behind, tokens living one).
    let expired = crate::sign_in::rig::spawn_behind(backend, &RULES, 60, 120).await;
    let (_, page) = expired.signed_in("alice", "/account").await;
    assert_eq!(page.status, 403, "{backend}: {page:?}");
    assert!(
        page.body.to_lowercase().contains("expired"),
        "{backend}: {}",
        page.body
    );
}

/// A provider whose metadata names another issuer than the one configured is not trusted:
/// `/login` fails (502) instead of sending anyone there.
pub async fn wrong_issuer(backend: Backend) {
    if provider_missing(backend) {
        return;
    }
    let s = spawn(backend, &RULES, 3600).await;
    let wrong = switchboard_api::sign_in::Oidc::new(switchboard_api::sign_in::OidcConfig {
        issuer: format!("{}/", s.provider.issuer),
        client_id: "switchboard".into(),
        client_secret: "switchboard-secret".into(),
        redirect_url: s.callback(),
        scopes: vec!["email".into()],
        groups_claim: "groups".into(),
    })
    .unwrap();
    let refused = wrong.authorize().await.err().expect("a refusal");
    assert!(
        matches!(
            refused,
            switchboard_api::sign_in::oidc::OidcError::Unreachable(_)
        ),
        "{backend}: {refused}"
    );
    assert!(
        refused.to_string().to_lowercase().contains("issuer"),
        "{backend}: {refused}"
    );
}

//! The app with sign-in through a real provider, and a browser signed in to it.

use std::sync::Arc;

use switchboard_api::extract::BodyLimits;
use switchboard_api::sign_in::{Oidc, OidcConfig, SignIn};
use switchboard_domain::identity::Org;
use switchboard_domain::identity::sign_in::MembershipRule;
use switchboard_domain::ports::IdentityStore;
use switchboard_domain::{OrgId, parse_uuid};
use switchboard_testkit::Backend;
use switchboard_testkit::oidc::{
    Browser, CLIENT_ID, CLIENT_SECRET, OidcProvider, Page, hidden_value, unavailable,
};

use crate::common::{TestApp, spawn_app_on_with_state};

/// The organization the `group:engineering` rule adds to (made by the test).
pub const ENGINEERING: &str = "6a1e0c52-4b7f-4d2e-9c31-0f5e8d7a6b41";
/// The organization the `domain:example.com` rule adds to, as admin.
pub const EXAMPLE_COM: &str = "7b2f1d63-5c80-4e3f-8d42-1a6f9e8b7c52";

/// An app with sign-in through `provider`-to-be, and the provider.
pub struct SignInApp {
    pub app: TestApp,
    pub provider: OidcProvider,
}

impl SignInApp {
    /// Switchboard's callback.
    pub fn callback(&self) -> String {
        format!("{}/login/callback", self.app.base)
    }

    /// A browser signed in as `login` (through the provider's forms), at `next` after.
    pub async fn signed_in(&self, login: &str, next: &str) -> (Browser, Page) {
        let browser = Browser::new();
        let page = self.sign_in_with(&browser, login, next).await;
        (browser, page)
    }

    /// Signs `browser` in as `login`; the page it ends on.
    pub async fn sign_in_with(&self, browser: &Browser, login: &str, next: &str) -> Page {
        let start = format!("{}/login?next={next}", self.app.base);
        let at_callback = browser
            .sign_in_at_provider(
                &start,
                login,
                &format!("{login}-password"),
                &self.callback(),
            )
            .await;
        let callback = at_callback
            .location
            .clone()
            .unwrap_or_else(|| panic!("no redirect to the callback: {at_callback:?}"));
        browser.follow(browser.get(&callback).await, None).await
    }
}

/// The CSRF token of a page of the session.
pub fn csrf(page: &Page) -> String {
    hidden_value(&page.body, "csrf").unwrap_or_else(|| panic!("no csrf field: {}", page.body))
}

/// Whether the provider can run here; prints why not.
pub fn provider_missing(backend: Backend) -> bool {
    match unavailable() {
        Some(why) => {
            eprintln!("{backend}: sign-in tests skipped: {why}");
            true
        }
        None => false,
    }
}

/// The app over `backend` with sign-in through a fresh provider (ID tokens living
/// `id_token_ttl` seconds) and `rules` (the two organizations they name are made).
pub async fn spawn(backend: Backend, rules: &[&str], id_token_ttl: u32) -> SignInApp {
    spawn_behind(backend, rules, id_token_ttl, 0).await
}

/// As [`spawn`], the provider's clock `clock_behind` seconds behind.
pub async fn spawn_behind(
    backend: Backend,
    rules: &[&str],
    id_token_ttl: u32,
    clock_behind: u32,
) -> SignInApp {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let callback = format!("{base}/login/callback");
    let provider = OidcProvider::start_behind(&[&callback], id_token_ttl, clock_behind);
    let rules: Vec<MembershipRule> = rules.iter().map(|r| r.parse().unwrap()).collect();
    let oidc = Oidc::new(OidcConfig {
        issuer: provider.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        redirect_url: callback,
        scopes: vec!["email".into(), "profile".into(), "groups".into()],
        groups_claim: "groups".into(),
    })
    .unwrap();
    let sign_in: Arc<SignIn> = SignIn::new(oidc);
    let app = spawn_app_on_with_state(
        backend,
        BodyLimits::default(),
        listener,
        move |s| s.with_sign_in(|x| x.configured(rules, std::time::Duration::from_secs(3600))),
        move |st| st.with_sign_in(sign_in),
    )
    .await;
    let store = app.store.clone();
    tokio::task::spawn_blocking(move || {
        for (id, name) in [(ENGINEERING, "Engineering"), (EXAMPLE_COM, "Example")] {
            store
                .create_org(&Org {
                    id: OrgId(parse_uuid(id).unwrap()),
                    name: name.into(),
                    created_at: switchboard_domain::time_input::now_micros(),
                })
                .unwrap();
        }
    })
    .await
    .unwrap();
    SignInApp { app, provider }
}

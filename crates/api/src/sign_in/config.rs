//! Sign-in as the server runs it: the relying party, whether cookies are `Secure`, the public
//! origin, and the cookies' names and attributes.

use std::sync::Arc;

use actix_web::cookie::{Cookie, SameSite};

use super::oidc::Oidc;

/// The session cookie.
pub const SESSION_COOKIE: &str = "switchboard_session";

/// The cookie binding a sign-in in flight to the browser that started it (its `state`).
pub const SIGN_IN_COOKIE: &str = "switchboard_sign_in";

/// Sign-in as the server runs it.
pub struct SignIn {
    /// The relying party.
    pub oidc: Oidc,
    /// Whether cookies are `Secure` (the redirect URL is https).
    pub secure_cookies: bool,
    /// This server's public origin (`scheme://host[:port]`, from the redirect URL): the
    /// device flow's verification URI.
    pub public_origin: String,
}

impl SignIn {
    /// Sign-in with `oidc`; cookies `Secure` and the public origin from its redirect URL.
    pub fn new(oidc: Oidc) -> Arc<SignIn> {
        let redirect = oidc.config().redirect_url.clone();
        let secure_cookies = redirect.starts_with("https://");
        let public_origin = redirect
            .split_once("://")
            .map(|(scheme, rest)| {
                format!("{scheme}://{}", rest.split('/').next().unwrap_or_default())
            })
            .unwrap_or_default();
        Arc::new(SignIn {
            oidc,
            secure_cookies,
            public_origin,
        })
    }

    /// A cookie of this server: HttpOnly, SameSite=Lax, path `/`, `Secure` over https.
    pub(crate) fn cookie<'a>(&self, name: &'a str, value: String) -> Cookie<'a> {
        Cookie::build(name, value)
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure_cookies)
            .finish()
    }

    /// A cookie that removes `name`.
    pub(crate) fn removal<'a>(&self, name: &'a str) -> Cookie<'a> {
        let mut c = self.cookie(name, String::new());
        c.make_removal();
        c
    }
}

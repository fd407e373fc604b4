//! Sign-in as the server runs it: the relying party, whether cookies are `Secure`, the public
//! origin, and the cookies' names and attributes; made from the operator's settings
//! ([`SignInSettings`]).

use std::path::PathBuf;
use std::sync::Arc;

use actix_web::cookie::{Cookie, SameSite};

use super::oidc::{Oidc, OidcConfig};

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

/// Sign-in as the operator asks for it (`--oidc-*`), before it is checked.
#[derive(Debug, Clone)]
pub struct SignInSettings {
    /// The provider's issuer URL (`--oidc-issuer`).
    pub issuer: String,
    /// The client id registered at the provider (`--oidc-client-id`; required).
    pub client_id: Option<String>,
    /// The file holding the client's secret (`--oidc-client-secret-file`; required),
    /// surrounding white space ignored.
    pub client_secret_file: Option<PathBuf>,
    /// This server's callback as registered (`--oidc-redirect-url`; required).
    pub redirect_url: Option<String>,
    /// Scopes asked for besides `openid`, separated by white space (`--oidc-scopes`).
    pub scopes: String,
    /// The ID token claim listing the person's groups (`--oidc-groups-claim`).
    pub groups_claim: String,
}

impl SignIn {
    /// Sign-in through the provider of `settings` ([`SignIn::new`]), its client secret read
    /// from its file.
    ///
    /// # Errors
    /// A missing client id, secret file or redirect URL (the message names the three flags);
    /// an unreadable or empty secret file; a malformed URL.
    pub fn configure(settings: SignInSettings) -> Result<Arc<SignIn>, String> {
        let (Some(client_id), Some(secret_file), Some(redirect_url)) = (
            settings.client_id,
            settings.client_secret_file,
            settings.redirect_url,
        ) else {
            return Err(
                "--oidc-issuer needs --oidc-client-id, --oidc-client-secret-file and \
                        --oidc-redirect-url"
                    .to_owned(),
            );
        };
        let secret = std::fs::read_to_string(&secret_file)
            .map_err(|e| {
                format!(
                    "reading the OIDC client secret file {}: {e}",
                    secret_file.display()
                )
            })?
            .trim()
            .to_owned();
        if secret.is_empty() {
            return Err(format!(
                "the OIDC client secret file {} is empty",
                secret_file.display()
            ));
        }
        let oidc = Oidc::new(OidcConfig {
            issuer: settings.issuer,
            client_id,
            client_secret: secret,
            redirect_url,
            scopes: settings
                .scopes
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            groups_claim: settings.groups_claim,
        })?;
        Ok(SignIn::new(oidc))
    }

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

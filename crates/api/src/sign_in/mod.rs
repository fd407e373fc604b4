//! Sign-in for a team (issue 34): OpenID Connect sign-in to a browser session and the account
//! page ([`routes`]), and device authorization for `openhands login` ([`device`]). Without
//! `--oidc-issuer` the pages answer 404 "Sign-in is not configured on this server" and the
//! device endpoints refuse, so a server of keys only works as before.

pub mod config;
pub mod device;
pub mod oidc;
mod pages;
pub mod routes;
mod session;

use utoipa_actix_web::service_config::ServiceConfig;

pub use config::{SESSION_COOKIE, SIGN_IN_COOKIE, SignIn, SignInSettings};
pub use oidc::{Oidc, OidcConfig};
pub(crate) use session::remote_addr;

/// Registers the routes of this module and their OpenAPI paths.
pub fn configure(cfg: &mut ServiceConfig<'_>) {
    routes::configure(cfg);
    device::configure(cfg);
}

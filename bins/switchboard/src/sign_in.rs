//! `serve --oidc-*` (issue 34): signing a team in through the company's OpenID provider, the
//! operator's membership rules for first sign-ins, the session lifetime, and the device logins
//! of `openhands login` (which need sign-in: a signed-in member approves them). Without
//! `--oidc-issuer`, none of it: keys only. And `--service-api-key-file`, the key of the
//! trusted service's routes.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use switchboard_api::sign_in::{SignIn, SignInSettings};
use switchboard_domain::Switchboard;
use switchboard_domain::identity::sign_in::MembershipRule;

use crate::cli_help::heading;

/// Sign-in's settings.
#[derive(Args, Clone)]
#[command(next_help_heading = heading::SIGN_IN)]
pub struct SignInArgs {
    /// The OpenID provider's issuer URL (Keycloak: `https://HOST/realms/REALM`; Google: `https://accounts.google.com`; Okta: `https://ORG.okta.com`; Entra ID: `https://login.microsoftonline.com/TENANT/v2.0`; Dex: its issuer). Enables /login, the account page and `openhands login`'s device flow.
    #[arg(long, env = "SWITCHBOARD_OIDC_ISSUER", value_name = "URL")]
    pub oidc_issuer: Option<String>,
    /// The client id registered at the provider for this server.
    #[arg(long, env = "SWITCHBOARD_OIDC_CLIENT_ID", requires = "oidc_issuer")]
    pub oidc_client_id: Option<String>,
    /// A file holding the client's secret (surrounding whitespace ignored; keep it 0600).
    #[arg(
        long,
        env = "SWITCHBOARD_OIDC_CLIENT_SECRET_FILE",
        value_name = "FILE",
        requires = "oidc_issuer"
    )]
    pub oidc_client_secret_file: Option<PathBuf>,
    /// This server's callback as registered at the provider: `https://SWITCHBOARD/login/callback`. Its origin is also the device flow's verification address, and https makes the cookies Secure.
    #[arg(
        long,
        env = "SWITCHBOARD_OIDC_REDIRECT_URL",
        value_name = "URL",
        requires = "oidc_issuer"
    )]
    pub oidc_redirect_url: Option<String>,
    /// Scopes asked for besides openid (space-separated).
    #[arg(long, env = "SWITCHBOARD_OIDC_SCOPES", default_value = "email profile")]
    pub oidc_scopes: String,
    /// The ID token claim listing the person's groups (for group: rules).
    #[arg(long, env = "SWITCHBOARD_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,
    /// A rule making a first sign-in a member: domain:DOMAIN=ORG_ID:ROLE (a verified e-mail at DOMAIN) or group:GROUP=ORG_ID:ROLE (GROUP in the groups claim); repeatable. Without one, new users belong nowhere until an owner, an admin or the operator adds them.
    #[arg(
        long = "oidc-member-rule",
        env = "SWITCHBOARD_OIDC_MEMBER_RULES",
        value_delimiter = ',',
        value_name = "RULE"
    )]
    pub oidc_member_rules: Vec<MembershipRule>,
    /// Hours a browser session lasts.
    #[arg(long, env = "SWITCHBOARD_SESSION_TTL_HOURS", default_value = "12", value_parser = clap::value_parser!(u32).range(1..=720))]
    pub session_ttl_hours: u32,
}

impl SignInArgs {
    /// Sign-in for the app's state and the services it configures, when `--oidc-issuer` is
    /// given.
    ///
    /// # Errors
    /// A missing client id, secret file or redirect URL; an unreadable or empty secret file;
    /// a malformed URL.
    pub fn load(&self, services: Switchboard) -> Result<(Switchboard, Option<Arc<SignIn>>)> {
        let Some(issuer) = self.oidc_issuer.clone() else {
            return Ok((services, None));
        };
        let sign_in = SignIn::configure(SignInSettings {
            issuer,
            client_id: self.oidc_client_id.clone(),
            client_secret_file: self.oidc_client_secret_file.clone(),
            redirect_url: self.oidc_redirect_url.clone(),
            scopes: self.oidc_scopes.clone(),
            groups_claim: self.oidc_groups_claim.clone(),
        })
        .map_err(anyhow::Error::msg)?;
        let (issuer, rules) = (
            &sign_in.oidc.config().issuer,
            self.oidc_member_rules.clone(),
        );
        tracing::info!(issuer = %issuer, rules = rules.len(), "sign-in through the OpenID provider at /login");
        let ttl = std::time::Duration::from_secs(u64::from(self.session_ttl_hours) * 3600);
        let services = services.with_sign_in(|s| s.configured(rules, ttl));
        Ok((services, Some(sign_in)))
    }
}

/// The service routes' key (`--service-api-key-file`): the shared key a trusted service (the
/// OpenHands automation service) presents as `X-Service-API-Key` to mint its runs' API keys
/// (docs/API.md, "The automation service"); read by [`switchboard_ops::key_files`].
#[derive(Args, Clone)]
#[command(next_help_heading = heading::SIGN_IN)]
pub struct ServiceKeyArgs {
    /// A file holding the service key (surrounding whitespace ignored; keep it 0600) that the OpenHands automation service sends as X-Service-API-Key (its AUTOMATION_SERVICE_KEY) to mint its runs' API keys. Without it the /api/service routes answer 503.
    #[arg(long, env = "SWITCHBOARD_SERVICE_API_KEY_FILE", value_name = "FILE")]
    pub service_api_key_file: Option<PathBuf>,
}

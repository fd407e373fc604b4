//! The OpenID Connect relying party (issue 34), with the `openidconnect` crate: the
//! provider's metadata and keys found by discovery (kept an hour, found again once when a
//! token names a key not among them), the authorization URL (code flow, PKCE S256, `state`,
//! `nonce`), and the code exchanged for an ID token whose issuer, audience, expiry, nonce and
//! signature the crate checks. Its HTTP client follows no redirects.

use std::time::{Duration, Instant};

use base64::Engine;
use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde_json::Value;
use switchboard_domain::identity::sign_in::ProviderIdentity;
use tokio::sync::RwLock;

/// How long discovered metadata and keys are used before being fetched again.
const METADATA_TTL: Duration = Duration::from_secs(3600);

/// How long one request to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// The operator's provider settings (`--oidc-*`).
#[derive(Debug, Clone)]
pub struct OidcConfig {
    /// The issuer URL (`--oidc-issuer`), as the provider's metadata names it.
    pub issuer: String,
    /// The client id registered at the provider.
    pub client_id: String,
    /// The client secret (read from `--oidc-client-secret-file`).
    pub client_secret: String,
    /// This server's callback, registered at the provider (`…/login/callback`).
    pub redirect_url: String,
    /// Scopes asked for besides `openid` (default `email profile`).
    pub scopes: Vec<String>,
    /// The claim holding the person's groups (default `groups`).
    pub groups_claim: String,
}

/// Why a sign-in failed at the provider's side (the person sees the text; the log has more).
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider could not be reached or answered nonsense.
    #[error("the identity provider could not be reached: {0}")]
    Unreachable(String),
    /// The provider refused the code (used, expired, not ours) or gave no ID token.
    #[error("the identity provider refused the sign-in: {0}")]
    Refused(String),
    /// The ID token failed a check (issuer, audience, expiry, nonce, signature).
    #[error("the identity provider's token failed a check: {0}")]
    BadToken(String),
}

/// The relying party.
pub struct Oidc {
    config: OidcConfig,
    http: reqwest::Client,
    metadata: RwLock<Option<(CoreProviderMetadata, Instant)>>,
}

/// A sign-in to send the browser to the provider with: the URL and what the callback checks.
pub struct Authorization {
    /// The provider's authorization URL.
    pub url: String,
    /// `state`.
    pub state: String,
    /// `nonce`.
    pub nonce: String,
    /// The PKCE verifier.
    pub pkce_verifier: String,
}

/// Sends one request to the provider.
async fn send(
    http: &reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut out = openidconnect::http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        out = out.header(name, value);
    }
    let body = response.bytes().await?.to_vec();
    Ok(out.body(body).expect("a response rebuilt from a valid one"))
}

impl Oidc {
    /// The relying party of `config` (nothing is fetched until the first sign-in).
    ///
    /// # Errors
    /// A malformed issuer or redirect URL, or an HTTP client that cannot be built.
    pub fn new(config: OidcConfig) -> Result<Oidc, String> {
        IssuerUrl::new(config.issuer.clone()).map_err(|e| format!("--oidc-issuer: {e}"))?;
        RedirectUrl::new(config.redirect_url.clone())
            .map_err(|e| format!("--oidc-redirect-url: {e}"))?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("the OpenID client: {e}"))?;
        Ok(Oidc {
            config,
            http,
            metadata: RwLock::new(None),
        })
    }

    /// The operator's settings.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// The provider's metadata: cached, or discovered when `fresh` or older than an hour.
    async fn metadata(&self, fresh: bool) -> Result<CoreProviderMetadata, OidcError> {
        if !fresh
            && let Some((m, at)) = self.metadata.read().await.as_ref()
            && at.elapsed() < METADATA_TTL
        {
            return Ok(m.clone());
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone())
            .map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let client = |r| send(&self.http, r);
        let m = CoreProviderMetadata::discover_async(issuer, &client)
            .await
            .map_err(|e| OidcError::Unreachable(error_chain(&e)))?;
        *self.metadata.write().await = Some((m.clone(), Instant::now()));
        Ok(m)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let redirect = RedirectUrl::new(self.config.redirect_url.clone())
            .map_err(|e| OidcError::Unreachable(e.to_string()))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(self.config.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// A new sign-in: the URL to send the browser to, with fresh `state`, `nonce` and PKCE
    /// challenge.
    ///
    /// # Errors
    /// [`OidcError::Unreachable`] when discovery fails.
    pub async fn authorize(&self) -> Result<Authorization, OidcError> {
        let client = self.client(self.metadata(false).await?)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for s in &self.config.scopes {
            request = request.add_scope(Scope::new(s.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok(Authorization {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        })
    }

    /// Exchanges a callback's `code` (with the sign-in's PKCE verifier) and checks the ID
    /// token against `nonce`: the person it names. A token signed by a key the cached
    /// metadata lacks is checked once more after discovery (the provider rotated its keys).
    ///
    /// # Errors
    /// [`OidcError`].
    pub async fn finish(
        &self,
        code: &str,
        nonce: &str,
        pkce_verifier: &str,
    ) -> Result<ProviderIdentity, OidcError> {
        let client = self.client(self.metadata(false).await?)?;
        let http = |r| send(&self.http, r);
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Refused(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&http)
            .await
            .map_err(|e| OidcError::Refused(error_chain(&e)))?;
        let token = tokens
            .id_token()
            .ok_or_else(|| OidcError::Refused("no ID token (is `openid` a scope?)".into()))?;
        let nonce = Nonce::new(nonce.to_owned());
        let claims = match token.claims(&client.id_token_verifier(), &nonce) {
            Ok(c) => c.clone(),
            Err(first) => {
                let client = self.client(self.metadata(true).await?)?;
                token
                    .claims(&client.id_token_verifier(), &nonce)
                    .map_err(|_| OidcError::BadToken(first.to_string()))?
                    .clone()
            }
        };
        Ok(ProviderIdentity {
            issuer: claims.issuer().to_string(),
            subject: claims.subject().to_string(),
            email: claims.email().map(|e| e.to_string()),
            email_verified: claims.email_verified().unwrap_or(false),
            name: claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.to_string()),
            groups: groups(&token.to_string(), &self.config.groups_claim),
        })
    }
}

/// The groups claim of a checked ID token (the crate's claims type has no room for it): its
/// payload read again, the claim's strings.
fn groups(jwt: &str, claim: &str) -> Vec<String> {
    let payload = jwt
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    match payload.as_ref().and_then(|p| p.get(claim)) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// An error and its sources, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

//! The credentials and organization a request names in its headers, read without checking
//! them: the API key ([`presented_key`]), the session key's header ([`SESSION_KEY_HEADER`])
//! and `X-Org-Id` ([`requested_org`]). The extractors check them ([`super::Caller`],
//! [`super::SandboxCaller`]); the rate limiter and the sandbox proxy read them too.

use actix_web::HttpRequest;
use actix_web::http::header::AUTHORIZATION;
use switchboard_domain::validation::{loc, uuid_parsing};
use switchboard_domain::{OrgId, parse_uuid};
use switchboard_model::ValidationError;

/// Header carrying an API key (spec §5).
pub const ACCESS_TOKEN_HEADER: &str = "X-Access-Token";
/// Header naming the organization to act on (API.md, Identity).
pub const ORG_HEADER: &str = "X-Org-Id";

/// The API key of a request: `X-Access-Token`, else `Authorization: Bearer`. The first present
/// wins; an invalid one never falls through to the other.
pub fn presented_key(req: &HttpRequest) -> Option<String> {
    if let Some(v) = req.headers().get(ACCESS_TOKEN_HEADER) {
        return Some(v.to_str().unwrap_or("").trim().to_owned());
    }
    let auth = req.headers().get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

/// `X-Org-Id`, parsed: `Ok(None)` when absent; a 422 (`uuid_parsing`, loc
/// `["header", "x-org-id"]`) when it is not a UUID.
pub fn requested_org(req: &HttpRequest) -> Result<Option<OrgId>, ValidationError> {
    let Some(v) = req.headers().get(ORG_HEADER) else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or("");
    parse_uuid(text.trim())
        .map(|u| Some(OrgId(u)))
        .ok_or_else(|| uuid_parsing(loc(["header", "x-org-id"]), text))
}

/// Header carrying a sandbox session key on the webhook routes.
pub const SESSION_KEY_HEADER: &str = "X-Session-API-Key";

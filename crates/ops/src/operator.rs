//! The operator's commands on the installation's organizations, API keys and registered
//! sandboxes (API.md): `migrate`, `bootstrap`, `keys create|list|revoke`, `sandboxes
//! register`. Each opens the database, calls the service of its resource and returns the JSON
//! object the command prints. Ids and dates are the commands' arguments as given (a malformed
//! one is an error naming its flag).

use anyhow::Result;
use serde_json::{Value, json};
use switchboard_domain::identity::api_keys::ApiKeyRecord;
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::{ApiKeyId, ApiKeyView, OrgId, UserId};

use crate::{Database, domain, parse_id};

/// A key as `keys list` prints one (its view: never the secret).
fn key_json(k: &ApiKeyRecord) -> Value {
    serde_json::to_value(ApiKeyView::from(k)).unwrap_or(Value::Null)
}

/// `migrate`: pending migrations applied; `{"applied": [versions]}`.
///
/// # Errors
/// The database cannot be opened or migrated.
pub fn migrate(db: &Database) -> Result<Value> {
    let (_, applied) = db.open(Some(1), false)?;
    Ok(json!({ "applied": applied }))
}

/// `bootstrap`: the organization `org_name` and its owner `email` made if absent, and a new
/// API key for the owner; `{"org_id", "user_id", "api_key"}` (the key shown once).
///
/// # Errors
/// The database cannot be opened, or the domain refuses.
pub fn bootstrap(db: &Database, org_name: &str, email: &str) -> Result<Value> {
    let b = db
        .services()?
        .operator()
        .bootstrap(org_name, email)
        .map_err(domain)?;
    Ok(json!({ "org_id": b.org_id, "user_id": b.user_id, "api_key": b.api_key }))
}

/// `keys create`: a key named `name` for the user `user_id`, bound to the organization
/// `org_id` when given, expiring at `expires_at` (RFC 3339) when given; `{"id", "api_key",
/// "name", "org_id", "expires_at"}` (the key shown once).
///
/// # Errors
/// An id that is not a UUID, a date that is not one, a database that cannot be opened, or
/// the domain's refusal.
pub fn create_key(
    db: &Database,
    user_id: &str,
    org_id: Option<&str>,
    name: String,
    expires_at: Option<&str>,
) -> Result<Value> {
    let user: UserId = parse_id(user_id, "user-id")?;
    let org: Option<OrgId> = org_id.map(|o| parse_id(o, "org-id")).transpose()?;
    let expires = expires_at
        .map(|e| {
            parse_datetime(e).ok_or_else(|| anyhow::anyhow!("--expires-at: not a date-time: {e}"))
        })
        .transpose()?;
    let k = db
        .services()?
        .operator()
        .operator_create_key(user, org, name, expires)
        .map_err(domain)?;
    let view = ApiKeyView::from(&k.record);
    Ok(
        json!({ "id": view.id, "api_key": k.secret, "name": view.name, "org_id": view.org_id, "expires_at": view.expires_at }),
    )
}

/// `keys list`: the user's keys; `{"items": [key views]}`.
///
/// # Errors
/// `user_id` is not a UUID, the database cannot be opened, or the domain refuses.
pub fn list_keys(db: &Database, user_id: &str) -> Result<Value> {
    let user: UserId = parse_id(user_id, "user-id")?;
    let keys = db
        .services()?
        .operator()
        .operator_list_keys(user)
        .map_err(domain)?;
    Ok(json!({ "items": keys.iter().map(key_json).collect::<Vec<_>>() }))
}

/// `keys revoke`: the key `id` revoked; `{"id", "revoked": true}`.
///
/// # Errors
/// `id` is not a UUID, the database cannot be opened, or the domain refuses.
pub fn revoke_key(db: &Database, id: &str) -> Result<Value> {
    let id: ApiKeyId = parse_id(id, "id")?;
    db.services()?
        .operator()
        .operator_revoke_key(id)
        .map_err(domain)?;
    Ok(json!({ "id": id, "revoked": true }))
}

/// `sandboxes register`: an agent server run elsewhere registered as a sandbox of the
/// organization, owned by the member `user_id`; `{"sandbox_id", "session_api_key"}` (the
/// webhooks' key, shown once).
///
/// # Errors
/// An id that is not a UUID, a database that cannot be opened, or the domain's refusal.
pub fn register_sandbox(db: &Database, org_id: &str, user_id: &str) -> Result<Value> {
    let org: OrgId = parse_id(org_id, "org-id")?;
    let user: UserId = parse_id(user_id, "user-id")?;
    let r = db
        .services()?
        .sandboxes()
        .register_sandbox(org, user)
        .map_err(domain)?;
    Ok(json!({ "sandbox_id": r.sandbox_id, "session_api_key": r.session_api_key }))
}

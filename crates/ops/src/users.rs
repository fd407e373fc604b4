//! The operator's commands on users, members and the audit log (API.md; issue 34): `users
//! create|list|disable|enable|remove`, `members add|remove`, `audit list`. Each opens the
//! database, calls the domain's service and returns the JSON object the command prints; every
//! change is written to the audit log with the operator as its actor. Ids are the commands'
//! arguments as given (UUIDs; a malformed one is an error naming its flag).

use anyhow::{Result, bail};
use serde_json::{Value, json};
use switchboard_domain::identity::User;
use switchboard_domain::identity::audit::Actor;
use switchboard_domain::time_input::format_rfc3339_micros;
use switchboard_domain::{OrgId, Role, UserId};

use crate::{Database, domain, parse_id};

/// A user as the commands print one: `user_id`, `email`, `name`, `current_org_id`,
/// `created_at` and `disabled_at` (RFC 3339, microseconds).
fn user_json(u: &User) -> Value {
    json!({
        "user_id": u.id,
        "email": u.email,
        "name": u.name,
        "current_org_id": u.current_org_id,
        "created_at": format_rfc3339_micros(u.created_at),
        "disabled_at": u.disabled_at.map(format_rfc3339_micros),
    })
}

/// `users create`: a user of `email` (unique) and display `name`; `{"user_id"}`.
///
/// # Errors
/// The database cannot be opened, or the domain refuses (e.g. the e-mail is taken).
pub fn create_user(db: &Database, email: &str, name: Option<String>) -> Result<Value> {
    let u = db
        .services()?
        .operator()
        .create_user(email, name)
        .map_err(domain)?;
    Ok(json!({ "user_id": u.id }))
}

/// `users list`: one page of at most `limit` users, oldest first, whose e-mail contains
/// `email` (any case), after the user `after` (`--after`); `{"items", "next_after"}`, the
/// latter the last user's id when the page is full.
///
/// # Errors
/// The database cannot be opened, `after` is not a UUID or no user, or the domain refuses
/// `limit` (1-1000).
pub fn list_users(
    db: &Database,
    email: Option<&str>,
    after: Option<&str>,
    limit: u32,
) -> Result<Value> {
    let sb = db.services()?;
    let after = match after {
        Some(a) => {
            let id: UserId = parse_id(a, "after")?;
            let u = sb.user_admin().existing(id).map_err(domain)?;
            Some((u.created_at, u.id))
        }
        None => None,
    };
    let page = sb
        .user_admin()
        .list_users(email, after, limit)
        .map_err(domain)?;
    let next = (page.len() == limit as usize)
        .then(|| page.last().map(|u| u.id))
        .flatten();
    Ok(json!({
        "items": page.iter().map(user_json).collect::<Vec<_>>(),
        "next_after": next,
    }))
}

/// `users disable` (`disabled`) and `users enable`: the user as it is then.
///
/// # Errors
/// The database cannot be opened, `user_id` is not a UUID, or the domain refuses.
pub fn set_disabled(db: &Database, user_id: &str, disabled: bool) -> Result<Value> {
    let sb = db.services()?;
    let id: UserId = parse_id(user_id, "user-id")?;
    let u = sb.user_admin().set_disabled(id, disabled).map_err(domain)?;
    Ok(user_json(&u))
}

/// `users remove`: the user with everything they own; `{"user_id", "email", "removed"}`.
///
/// # Errors
/// The database cannot be opened, `user_id` is not a UUID, or the domain refuses (an
/// organization's only owner).
pub fn remove_user(db: &Database, user_id: &str) -> Result<Value> {
    let sb = db.services()?;
    let id: UserId = parse_id(user_id, "user-id")?;
    let u = sb.user_admin().remove_user(id).map_err(domain)?;
    Ok(json!({ "user_id": u.id, "email": u.email, "removed": true }))
}

/// `members add`: the user made a member of the organization with `role` (owner, admin or
/// member), or their role changed; `{"org_id", "user_id", "role"}`.
///
/// # Errors
/// An id that is not a UUID, an unknown role, a database that cannot be opened, or the
/// domain's refusal.
pub fn add_member(db: &Database, org_id: &str, user_id: &str, role: &str) -> Result<Value> {
    let org: OrgId = parse_id(org_id, "org-id")?;
    let user: UserId = parse_id(user_id, "user-id")?;
    let Some(r) = Role::parse(role) else {
        bail!("--role: expected owner, admin or member, got {role}")
    };
    db.services()?
        .operator()
        .add_member(org, user, r)
        .map_err(domain)?;
    Ok(json!({ "org_id": org, "user_id": user, "role": r.as_str() }))
}

/// `members remove`: the user out of the organization (their keys bound to it revoked);
/// `{"org_id", "user_id", "removed", "role"}` with the role they had.
///
/// # Errors
/// An id that is not a UUID, a database that cannot be opened, or the domain's refusal (the
/// last owner).
pub fn remove_member(db: &Database, org_id: &str, user_id: &str) -> Result<Value> {
    let org: OrgId = parse_id(org_id, "org-id")?;
    let user: UserId = parse_id(user_id, "user-id")?;
    let role = db
        .services()?
        .user_admin()
        .remove_member(org, user)
        .map_err(domain)?;
    Ok(json!({ "org_id": org, "user_id": user, "removed": true, "role": role.as_str() }))
}

/// `audit list`: at most `limit` entries, newest first, before position `before`, of the
/// organization `org_id` (else the changes to users as a whole); `{"items", "next_before"}`,
/// the latter the last entry's position when the page is full.
///
/// # Errors
/// `org_id` is not a UUID, the database cannot be opened, or a storage failure.
pub fn audit(
    db: &Database,
    org_id: Option<&str>,
    before: Option<i64>,
    limit: u32,
) -> Result<Value> {
    let org: Option<OrgId> = org_id.map(|o| parse_id(o, "org-id")).transpose()?;
    let entries = db
        .services()?
        .user_admin()
        .audit(org, before, limit)
        .map_err(domain)?;
    let next = (entries.len() == limit as usize)
        .then(|| entries.last().map(|e| e.id))
        .flatten();
    let items: Vec<Value> = entries
        .into_iter()
        .map(|r| {
            let e = r.entry;
            let actor = match e.actor {
                Actor::User { id, email } => {
                    json!({ "user_id": id, "email": email })
                }
                Actor::Operator => json!("operator"),
            };
            json!({
                "id": r.id,
                "org_id": e.org,
                "actor": actor,
                "action": e.action.as_str(),
                "target": e.target.map(|(id, email)| json!({ "user_id": id, "email": email })),
                "detail": e.detail,
                "remote_addr": e.remote_addr,
                "created_at": format_rfc3339_micros(e.at),
            })
        })
        .collect();
    Ok(json!({ "items": items, "next_before": next }))
}

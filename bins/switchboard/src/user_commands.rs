//! The operator's commands on users, members and the audit log (API.md; issue 34): `users
//! create|list|disable|enable|remove`, `members add|remove`, `audit list`. Each opens the
//! database, calls the domain's service and prints one JSON object on stdout; every change is
//! written to the audit log with the operator as its actor.

use std::sync::Arc;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use switchboard_domain::identity::User;
use switchboard_domain::identity::audit::Actor;
use switchboard_domain::time_input::format_rfc3339_micros;
use switchboard_domain::{OrgId, Role, Switchboard, UserId};
use switchboard_ops::{Database, domain};

use crate::cli::{AuditCommand, MembersCommand, UsersCommand};
use crate::output::{parse_id, print};

/// The domain's services over the database.
fn services(db: &Database) -> Result<Switchboard> {
    let (store, _) = db.open(Some(2), false)?;
    Ok(Switchboard::new(Arc::new(store)))
}

/// A user as the commands print one.
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

/// `users …`.
///
/// # Errors
/// A malformed argument, a database that cannot be opened, or the domain's refusal.
pub fn users(db: &Database, command: UsersCommand) -> Result<()> {
    let sb = services(db)?;
    match command {
        UsersCommand::Create { email, name } => {
            let u = sb.operator().create_user(&email, name).map_err(domain)?;
            print(json!({ "user_id": u.id }));
        }
        UsersCommand::List {
            email,
            after,
            limit,
        } => {
            let after = match after {
                Some(a) => {
                    let id: UserId = parse_id(&a, "after")?;
                    let u = sb.user_admin().existing(id).map_err(domain)?;
                    Some((u.created_at, u.id))
                }
                None => None,
            };
            let page = sb
                .user_admin()
                .list_users(email.as_deref(), after, limit)
                .map_err(domain)?;
            let next = (page.len() == limit as usize)
                .then(|| page.last().map(|u| u.id))
                .flatten();
            print(json!({
                "items": page.iter().map(user_json).collect::<Vec<_>>(),
                "next_after": next,
            }));
        }
        UsersCommand::Disable { user_id } => set_disabled(&sb, &user_id, true)?,
        UsersCommand::Enable { user_id } => set_disabled(&sb, &user_id, false)?,
        UsersCommand::Remove { user_id } => {
            let id: UserId = parse_id(&user_id, "user-id")?;
            let u = sb.user_admin().remove_user(id).map_err(domain)?;
            print(json!({ "user_id": u.id, "email": u.email, "removed": true }));
        }
    }
    Ok(())
}

/// `users disable` / `users enable`.
fn set_disabled(sb: &Switchboard, user_id: &str, disabled: bool) -> Result<()> {
    let id: UserId = parse_id(user_id, "user-id")?;
    let u = sb.user_admin().set_disabled(id, disabled).map_err(domain)?;
    print(user_json(&u));
    Ok(())
}

/// `members …`.
///
/// # Errors
/// A malformed argument, a database that cannot be opened, or the domain's refusal.
pub fn members(db: &Database, command: MembersCommand) -> Result<()> {
    match command {
        MembersCommand::Add {
            org_id,
            user_id,
            role,
        } => {
            let org: OrgId = parse_id(&org_id, "org-id")?;
            let user: UserId = parse_id(&user_id, "user-id")?;
            let Some(r) = Role::parse(&role) else {
                bail!("--role: expected owner, admin or member, got {role}")
            };
            services(db)?
                .operator()
                .add_member(org, user, r)
                .map_err(domain)?;
            print(json!({ "org_id": org, "user_id": user, "role": r.as_str() }));
        }
        MembersCommand::Remove { org_id, user_id } => {
            let org: OrgId = parse_id(&org_id, "org-id")?;
            let user: UserId = parse_id(&user_id, "user-id")?;
            let role = services(db)?
                .user_admin()
                .remove_member(org, user)
                .map_err(domain)?;
            print(
                json!({ "org_id": org, "user_id": user, "removed": true, "role": role.as_str() }),
            );
        }
    }
    Ok(())
}

/// `audit list`.
///
/// # Errors
/// A malformed argument, a database that cannot be opened, or a storage failure.
pub fn audit(db: &Database, command: AuditCommand) -> Result<()> {
    let AuditCommand::List {
        org_id,
        before,
        limit,
    } = command;
    let org: Option<OrgId> = org_id
        .as_deref()
        .map(|o| parse_id(o, "org-id"))
        .transpose()?;
    let entries = services(db)?
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
    print(json!({ "items": items, "next_before": next }));
    Ok(())
}

//! The operator commands of API.md (`migrate`, `bootstrap`, `keys create|list|revoke`, `sandboxes register`, `secrets rotate-key`): each opens the database, calls the
//! service of its resource and prints one JSON object on stdout; and `specs pull` (issue 12),
//! which needs the Docker daemon, not the database, and prints one line per image. The
//! commands on users, members and the audit log are [`crate::user_commands`]'s.

use std::sync::Arc;

use anyhow::Result;
use serde_json::{Value, json};
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::{ApiKeyId, ApiKeyView, OrgId, Switchboard, UserId};
use switchboard_ops::{Database, domain};

use crate::cli::{
    KeysCommand, OperatorCommand as Command, SandboxesCommand, SecretsCommand, SpecsCommand,
};
use crate::output::{parse_id, print};

fn key_json(k: &switchboard_domain::identity::api_keys::ApiKeyRecord) -> Value {
    serde_json::to_value(ApiKeyView::from(k)).unwrap_or(Value::Null)
}

// Over 100 lines, on purpose: the table of operator commands, one short arm each, read at once.
/// Runs an operator command (every command but `serve`).
///
/// # Errors
/// A malformed argument, a database that cannot be opened, or the domain's refusal.
pub fn run(db: &Database, command: Command) -> Result<()> {
    match command {
        // Needs no database.
        Command::Specs(SpecsCommand::Pull { specs }) => crate::specs::specs_pull(&specs)?,
        Command::Secrets(SecretsCommand::RotateKey { secret_key_file }) => {
            let key_file = db.key_file(secret_key_file.as_deref());
            print(switchboard_ops::rotate_key::rotate_key(db, &key_file)?);
        }
        Command::Migrate(args) if args.status => {
            print(switchboard_ops::backup::migrate_status(db)?)
        }
        Command::Migrate(_) => {
            let (_, applied) = db.open(Some(1), false)?;
            print(json!({ "applied": applied }));
        }
        Command::Backup(args) => {
            let key_file = db.key_file(args.secret_key_file.as_deref());
            let pg_dump = args.pg_dump.as_deref();
            print(switchboard_ops::backup::backup(
                db, &args.dest, &key_file, pg_dump,
            )?);
        }
        Command::Restore(args) => {
            let key_file = db.key_file(args.secret_key_file.as_deref());
            print(switchboard_ops::restore::restore(
                db,
                &args.from,
                &key_file,
                args.replaces_original,
                args.pg_restore.as_deref(),
            )?);
        }
        Command::Bootstrap { org_name, email } => {
            let (store, _) = db.open(Some(2), false)?;
            let b = Switchboard::new(Arc::new(store))
                .operator()
                .bootstrap(&org_name, &email)
                .map_err(domain)?;
            print(json!({ "org_id": b.org_id, "user_id": b.user_id, "api_key": b.api_key }));
        }
        Command::Users(c) => crate::user_commands::users(db, c)?,
        Command::Members(c) => crate::user_commands::members(db, c)?,
        Command::Audit(c) => crate::user_commands::audit(db, c)?,
        Command::Keys(KeysCommand::Create {
            user_id,
            org_id,
            name,
            expires_at,
        }) => {
            let user: UserId = parse_id(&user_id, "user-id")?;
            let org: Option<OrgId> = org_id
                .as_deref()
                .map(|o| parse_id(o, "org-id"))
                .transpose()?;
            let expires = expires_at
                .as_deref()
                .map(|e| {
                    parse_datetime(e)
                        .ok_or_else(|| anyhow::anyhow!("--expires-at: not a date-time: {e}"))
                })
                .transpose()?;
            let (store, _) = db.open(Some(2), false)?;
            let k = Switchboard::new(Arc::new(store))
                .operator()
                .operator_create_key(user, org, name, expires)
                .map_err(domain)?;
            let view = ApiKeyView::from(&k.record);
            print(
                json!({ "id": view.id, "api_key": k.secret, "name": view.name, "org_id": view.org_id, "expires_at": view.expires_at }),
            );
        }
        Command::Sandboxes(SandboxesCommand::Register { org_id, user_id }) => {
            let org: OrgId = parse_id(&org_id, "org-id")?;
            let user: UserId = parse_id(&user_id, "user-id")?;
            let (store, _) = db.open(Some(2), false)?;
            let r = Switchboard::new(Arc::new(store))
                .sandboxes()
                .register_sandbox(org, user)
                .map_err(domain)?;
            print(json!({ "sandbox_id": r.sandbox_id, "session_api_key": r.session_api_key }));
        }
        Command::Keys(KeysCommand::List { user_id }) => {
            let user: UserId = parse_id(&user_id, "user-id")?;
            let (store, _) = db.open(Some(2), false)?;
            let keys = Switchboard::new(Arc::new(store))
                .operator()
                .operator_list_keys(user)
                .map_err(domain)?;
            print(json!({ "items": keys.iter().map(key_json).collect::<Vec<_>>() }));
        }
        Command::Keys(KeysCommand::Revoke { id }) => {
            let id: ApiKeyId = parse_id(&id, "id")?;
            let (store, _) = db.open(Some(2), false)?;
            Switchboard::new(Arc::new(store))
                .operator()
                .operator_revoke_key(id)
                .map_err(domain)?;
            print(json!({ "id": id, "revoked": true }));
        }
    }
    Ok(())
}

//! The operator commands of API.md (every command but `serve`): each calls its operation in
//! [`switchboard_ops`] (or, for `specs pull`, which needs the Docker daemon and not the
//! database, [`switchboard_sandbox::wiring`]) with its arguments and prints the JSON object it
//! returns on stdout ([`print()`]: what every command prints, one JSON object per line).

use anyhow::Result;
use serde_json::Value;
use switchboard_ops::{Database, backup, operator, restore, rotate_key, users};

use crate::cli_operator::{
    AuditCommand, KeysCommand, MembersCommand, OperatorCommand as Command, SandboxesCommand,
    SecretsCommand, SpecsCommand, UsersCommand,
};

/// Runs an operator command (every command but `serve`).
///
/// # Errors
/// A malformed argument, a database that cannot be opened, or the domain's refusal.
pub fn run(db: &Database, command: Command) -> Result<()> {
    let report = match command {
        Command::Specs(SpecsCommand::Pull { specs }) => {
            return switchboard_sandbox::wiring::specs_pull(&specs.options(), print);
        }
        Command::Secrets(SecretsCommand::RotateKey { secret_key_file }) => {
            rotate_key::rotate_key(db, &db.key_file(secret_key_file.as_deref()))?
        }
        Command::Migrate(args) if args.status => backup::migrate_status(db)?,
        Command::Migrate(_) => operator::migrate(db)?,
        Command::Backup(a) => {
            let key_file = db.key_file(a.secret_key_file.as_deref());
            backup::backup(db, &a.dest, &key_file, a.pg_dump.as_deref())?
        }
        Command::Restore(a) => {
            let key_file = db.key_file(a.secret_key_file.as_deref());
            let pg_restore = a.pg_restore.as_deref();
            restore::restore(db, &a.from, &key_file, a.replaces_original, pg_restore)?
        }
        Command::Bootstrap { org_name, email } => operator::bootstrap(db, &org_name, &email)?,
        Command::Users(UsersCommand::Create { email, name }) => {
            users::create_user(db, &email, name)?
        }
        Command::Users(UsersCommand::List {
            email,
            after,
            limit,
        }) => users::list_users(db, email.as_deref(), after.as_deref(), limit)?,
        Command::Users(UsersCommand::Disable { user_id }) => {
            users::set_disabled(db, &user_id, true)?
        }
        Command::Users(UsersCommand::Enable { user_id }) => {
            users::set_disabled(db, &user_id, false)?
        }
        Command::Users(UsersCommand::Remove { user_id }) => users::remove_user(db, &user_id)?,
        Command::Members(MembersCommand::Add {
            org_id,
            user_id,
            role,
        }) => users::add_member(db, &org_id, &user_id, &role)?,
        Command::Members(MembersCommand::Remove { org_id, user_id }) => {
            users::remove_member(db, &org_id, &user_id)?
        }
        Command::Audit(AuditCommand::List {
            org_id,
            before,
            limit,
        }) => users::audit(db, org_id.as_deref(), before, limit)?,
        Command::Keys(KeysCommand::Create {
            user_id,
            org_id,
            name,
            expires_at,
        }) => operator::create_key(db, &user_id, org_id.as_deref(), name, expires_at.as_deref())?,
        Command::Keys(KeysCommand::List { user_id }) => operator::list_keys(db, &user_id)?,
        Command::Keys(KeysCommand::Revoke { id }) => operator::revoke_key(db, &id)?,
        Command::Sandboxes(SandboxesCommand::Register { org_id, user_id }) => {
            operator::register_sandbox(db, &org_id, &user_id)?
        }
    };
    print(report);
    Ok(())
}

/// Prints one JSON object on stdout, one line.
pub fn print(v: Value) {
    println!("{v}");
}

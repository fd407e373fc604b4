//! The operator commands (API.md; docs/operations.md): they need database access, no API key.
//! Their arguments; [`crate::commands`] runs them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli_sandboxes::SpecArgs;

#[derive(Subcommand)]
pub enum OperatorCommand {
    /// Apply pending migrations and exit (with --status, only report them).
    Migrate(MigrateArgs),
    /// Back up the database and the installation key into a directory (SQLite: an online copy; PostgreSQL: pg_dump).
    Backup(BackupArgs),
    /// Restore a backup into an empty database (SQLite: a new file; PostgreSQL: pg_restore).
    Restore(RestoreArgs),
    /// Create (if absent) an organization and its owner, and issue a new API key for the owner.
    Bootstrap {
        /// Organization name.
        #[arg(long, default_value = "default")]
        org_name: String,
        /// Owner's e-mail.
        #[arg(long, default_value = "admin@localhost")]
        email: String,
    },
    /// Users.
    #[command(subcommand)]
    Users(UsersCommand),
    /// Memberships.
    #[command(subcommand)]
    Members(MembersCommand),
    /// The audit log of changes to members, users and keys.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Sandboxes (agent servers run elsewhere).
    #[command(subcommand)]
    Sandboxes(SandboxesCommand),
    /// Sandbox specs.
    #[command(subcommand)]
    Specs(SpecsCommand),
    /// The installation key sealing secrets at rest.
    #[command(subcommand)]
    Secrets(SecretsCommand),
}

#[derive(Subcommand)]
pub enum SecretsCommand {
    /// Replace the installation key: a new key, every sealed value of the database re-sealed with it in one transaction, then the key file replaced (the old key kept beside it, with .old added to its name). Stop every server first.
    RotateKey {
        /// The current key file [default: DATA_DIR/secret.key].
        #[arg(long, env = "SWITCHBOARD_SECRET_KEY_FILE")]
        secret_key_file: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum SpecsCommand {
    /// Pull the images of the Docker specs that are not on the Docker host (`DOCKER_HOST`); prints one line per image and fails when one could not be pulled.
    Pull {
        #[command(flatten)]
        specs: SpecArgs,
    },
}

#[derive(Subcommand)]
pub enum SandboxesCommand {
    /// Register an agent server as a sandbox of an organization, owned by a member; prints its
    /// session key (`X-Session-API-Key` of the webhooks), shown once.
    Register {
        /// Organization id.
        #[arg(long)]
        org_id: String,
        /// Owner's user id (a member of the organization).
        #[arg(long)]
        user_id: String,
    },
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Issue a key for a user (bound to --org-id when given).
    Create {
        /// User id.
        #[arg(long)]
        user_id: String,
        /// Bind the key to this organization.
        #[arg(long)]
        org_id: Option<String>,
        /// Name.
        #[arg(long, default_value = "cli")]
        name: String,
        /// Expiry (RFC 3339).
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List a user's keys.
    List {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
    /// Revoke a key.
    Revoke {
        /// Key id.
        #[arg(long)]
        id: String,
    },
}

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Create a user.
    Create {
        /// E-mail (unique).
        #[arg(long)]
        email: String,
        /// Display name.
        #[arg(long)]
        name: Option<String>,
    },
    /// List users, oldest first (one page; `next_after` continues it).
    List {
        /// Only e-mails containing this (any case).
        #[arg(long)]
        email: Option<String>,
        /// Continue after this user id (the `next_after` of the page before).
        #[arg(long)]
        after: Option<String>,
        /// Users per page (1-1000).
        #[arg(long, default_value = "100")]
        limit: u32,
    },
    /// Disable a user: every key of theirs is refused at once, on every replica.
    Disable {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
    /// Remove a user with everything they own (keys, settings, secrets, conversations);
    /// refused while they are an organization's only owner.
    Remove {
        /// User id.
        #[arg(long)]
        user_id: String,
    },
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Audit log entries, newest first: an organization's, or (without --org-id) the
    /// changes to users as a whole.
    List {
        /// Organization id.
        #[arg(long)]
        org_id: Option<String>,
        /// Entries before this position (the `next_before` of the page before).
        #[arg(long)]
        before: Option<i64>,
        /// Entries per page (1-1000).
        #[arg(long, default_value = "100")]
        limit: u32,
    },
}

#[derive(Subcommand)]
pub enum MembersCommand {
    /// Add a user to an organization (or change their role).
    Add {
        /// Organization id.
        #[arg(long)]
        org_id: String,
        /// User id.
        #[arg(long)]
        user_id: String,
        /// owner, admin or member.
        #[arg(long)]
        role: String,
    },
    /// Remove a user from an organization (their keys bound to it revoked); refused for its
    /// last owner.
    Remove {
        /// Organization id.
        #[arg(long)]
        org_id: String,
        /// User id.
        #[arg(long)]
        user_id: String,
    },
}

#[derive(Args, Clone, Default)]
pub struct MigrateArgs {
    /// Only report: the database's schema version and this binary's, the migrations pending and those the database has that this binary does not know (a newer release's); applies nothing.
    #[arg(long)]
    pub status: bool,
}

#[derive(Args, Clone)]
pub struct BackupArgs {
    /// The directory to write the backup into (created with mode 0700; it must not exist, or be empty).
    pub dest: PathBuf,
    /// The installation key file to include [default: DATA_DIR/secret.key].
    #[arg(long, env = "SWITCHBOARD_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// PostgreSQL: the pg_dump program (its major version at least the server's) [default: pg_dump on PATH, else the newest /usr/lib/postgresql/*/bin/pg_dump].
    #[arg(long, env = "SWITCHBOARD_PG_DUMP")]
    pub pg_dump: Option<PathBuf>,
}

#[derive(Args, Clone)]
pub struct RestoreArgs {
    /// A directory written by `switchboard backup`.
    pub from: PathBuf,
    /// Where the installation key goes [default: DATA_DIR/secret.key]; it must not exist, or hold the backup's key.
    #[arg(long, env = "SWITCHBOARD_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// The copy replaces the original installation, which must be stopped for good: it keeps the original's installation id and takes over its sandboxes. Without it the copy becomes an installation of its own (a new id) and never adopts or stops the original's sandboxes.
    #[arg(long)]
    pub replaces_original: bool,
    /// PostgreSQL: the pg_restore program [default: pg_restore on PATH, else the newest /usr/lib/postgresql/*/bin/pg_restore].
    #[arg(long, env = "SWITCHBOARD_PG_RESTORE")]
    pub pg_restore: Option<PathBuf>,
}

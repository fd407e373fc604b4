//! The flags of `migrate`, `backup` and `restore` (docs/operations.md).

use std::path::PathBuf;

use clap::Args;

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

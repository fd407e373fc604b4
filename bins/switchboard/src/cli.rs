//! The command line: clap types for `serve` and the operator commands, and the database
//! options every command shares.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use switchboard_storage::{BackendKind, DatabaseUrl, DieselStore, PoolConfig};

#[derive(Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Control plane for software-agent conversations"
)]
pub struct Cli {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args, Clone)]
pub struct DbArgs {
    /// Database URL: postgres://… or sqlite://PATH (default: SQLite in the data dir).
    #[arg(long, env = "SWITCHBOARD_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// Folder for the default SQLite database (created if missing).
    #[arg(
        long,
        env = "SWITCHBOARD_DATA_DIR",
        global = true,
        default_value = "./switchboard-data"
    )]
    pub data_dir: PathBuf,
}

// Doc comments on clap types become help text: these use plain comments.
#[derive(Subcommand)]
pub enum Command {
    /// Run the HTTP server.
    Serve(ServeArgs),
    /// Any other command.
    #[command(flatten)]
    Operator(OperatorCommand),
}

// The operator commands (API.md): they need database access, no API key.
#[derive(Subcommand)]
pub enum OperatorCommand {
    /// Apply pending migrations and exit.
    Migrate,
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
    /// API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Sandboxes (agent servers run elsewhere).
    #[command(subcommand)]
    Sandboxes(SandboxesCommand),
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

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, env = "SWITCHBOARD_BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "SWITCHBOARD_WORKERS")]
    pub workers: Option<usize>,
    /// Maximum database connections in the pool.
    #[arg(long, env = "SWITCHBOARD_DB_POOL_SIZE")]
    pub db_pool_size: Option<u32>,
    /// Log format.
    #[arg(
        long,
        env = "SWITCHBOARD_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Seconds to let in-flight requests finish on SIGINT/SIGTERM.
    #[arg(long, default_value = "30")]
    pub shutdown_timeout: u64,
    #[command(flatten)]
    pub sandboxes: SandboxArgs,
}

// How Switchboard runs sandboxes (issue 9; docs/sandbox-specs.md).
#[derive(Args, Clone)]
pub struct SandboxArgs {
    /// JSON file of sandbox specs (default: one built-in spec running the OpenHands agent server).
    #[arg(long, env = "SWITCHBOARD_SANDBOX_SPECS")]
    pub sandbox_specs: Option<PathBuf>,
    /// The agent server command of the built-in spec, split as a shell would (default: `agent-server` on PATH, else `python3 -m openhands.agent_server`).
    #[arg(long, env = "SWITCHBOARD_AGENT_SERVER_COMMAND")]
    pub agent_server_command: Option<String>,
    /// Switchboard's URL as sandboxes reach it; they post webhooks to it + /api/v1/webhooks (default: the bound address).
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// A variable of Switchboard's environment to pass to every sandbox (repeatable; e.g. LLM_API_KEY). PATH, HOME and LANG always pass.
    #[arg(long = "sandbox-env", value_name = "NAME")]
    pub sandbox_env: Vec<String>,
    /// Seconds a sandbox may take to answer /alive after a start or resume before it is ERROR.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_START_TIMEOUT", default_value = "120")]
    pub sandbox_start_timeout: u64,
    /// Running sandboxes per user; starting or resuming beyond it pauses the user's least recently used one.
    #[arg(long, env = "SWITCHBOARD_MAX_RUNNING_SANDBOXES", default_value = "5", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_running_sandboxes: u32,
    /// Started, unowned sandboxes of the default spec kept ready; a start claims one at once.
    #[arg(long, env = "SWITCHBOARD_WARM_SANDBOXES", default_value = "0")]
    pub warm_sandboxes: u32,
    /// The key sealing session keys at rest (created 0600 if missing; refused if group or others can read it) [default: DATA_DIR/secret.key].
    #[arg(long, env = "SWITCHBOARD_SECRET_KEY_FILE")]
    pub secret_key_file: Option<PathBuf>,
    /// The runtime of specs that name none.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_RUNTIME", default_value = "process")]
    pub sandbox_runtime: String,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl DbArgs {
    /// The database URL: `--database-url`, else the SQLite file `switchboard.sqlite` in
    /// `--data-dir` (created if missing).
    ///
    /// # Errors
    /// The data directory cannot be created.
    pub fn url(&self) -> Result<String> {
        if let Some(u) = &self.database_url {
            return Ok(u.clone());
        }
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating {}", self.data_dir.display()))?;
        let path = self.data_dir.join("switchboard.sqlite");
        let abs = std::path::absolute(&path).unwrap_or(path);
        Ok(format!("sqlite://{}", abs.display()))
    }

    /// Opens the store, applying pending migrations (their versions are returned).
    /// `pool_size` overrides the pool's size; `server` turns SQLite's automatic WAL checkpoints
    /// off, for a long-running process whose supervisor checkpoints instead.
    ///
    /// # Errors
    /// As [`DbArgs::url`], or the database cannot be opened or migrated.
    pub fn open(&self, pool_size: Option<u32>, server: bool) -> Result<(DieselStore, Vec<String>)> {
        let url = self.url()?;
        let kind = DatabaseUrl::parse(&url)
            .map(|u| u.kind())
            .unwrap_or(BackendKind::Sqlite);
        let defaults = PoolConfig::default_for(kind);
        let config = PoolConfig {
            max_size: pool_size.map_or(defaults.max_size, |n| n.max(1)),
            min_idle: pool_size.map_or(defaults.min_idle, |n| n.max(1)),
            manual_checkpoints: server,
            ..defaults
        };
        DieselStore::open(&url, Some(config)).with_context(|| "opening the database")
    }
}

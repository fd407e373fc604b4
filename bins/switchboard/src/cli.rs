//! The command line: clap types for `serve` and the operator commands, and the database
//! options every command shares; parsed with the configuration file of `--config FILE` (or
//! `SWITCHBOARD_CONFIG=FILE`), TOML whose keys are the flags' long names, e.g. `bind =
//! "0.0.0.0:3000"` or `cors-allowed-origin = ["https://app.example.com"]`
//! (docs/configuration.md). Every command reads it: `serve` and the operator commands that
//! take the same flags (`--database-url`, `--data-dir`, `--secret-key-file`, …). How the
//! file's values become the flags' defaults, and how it is checked, is
//! [`switchboard_runtime::config_file`]'s.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use switchboard_ops::Database;

use crate::cli_help::heading;
use crate::cli_operator::OperatorCommand;
use crate::cli_sandboxes::SandboxArgs;

/// The environment variable naming the configuration file when `--config` is not given.
pub const CONFIG_ENV: &str = "SWITCHBOARD_CONFIG";

/// The command line parsed with the configuration file's values (if one is named) as the
/// flags' defaults ([`switchboard_runtime::config_file::parse_or_exit`]).
pub fn parse() -> Cli {
    switchboard_runtime::config_file::parse_or_exit(command(), CONFIG_ENV)
}

/// The whole command line: [`Cli`]'s, `--config`, and `-h` made short
/// ([`switchboard_runtime::help::short_help`]).
pub fn command() -> clap::Command {
    let cmd = switchboard_runtime::config_file::with_config_flag(Cli::command(), CONFIG_ENV);
    switchboard_runtime::help::short_help(cmd)
}

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
#[command(next_help_heading = heading::STORAGE)]
pub struct DbArgs {
    /// Database URL: postgres://… or sqlite://PATH (default: SQLite in the data dir).
    #[arg(long, env = "SWITCHBOARD_DATABASE_URL", global = true)]
    pub database_url: Option<String>,
    /// A file holding the database URL (surrounding whitespace ignored): a URL with a password, kept out of the environment and the command line.
    #[arg(
        long,
        env = "SWITCHBOARD_DATABASE_URL_FILE",
        global = true,
        value_name = "FILE",
        conflicts_with = "database_url"
    )]
    pub database_url_file: Option<PathBuf>,
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
    Serve(Box<ServeArgs>),
    /// Any other command.
    #[command(flatten)]
    Operator(OperatorCommand),
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, env = "SWITCHBOARD_BIND", default_value = "127.0.0.1:3000", help_heading = heading::SERVER)]
    pub bind: SocketAddr,
    /// Serve `/metrics` on this address alone (e.g. `127.0.0.1:9100`), no longer on the API's
    /// address (404 there). Default: on the API's address.
    #[arg(long, env = "SWITCHBOARD_METRICS_LISTEN", help_heading = heading::OBSERVABILITY)]
    pub metrics_listen: Option<SocketAddr>,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "SWITCHBOARD_WORKERS", help_heading = heading::SERVER)]
    pub workers: Option<usize>,
    /// Maximum database connections in the pool.
    #[arg(long, env = "SWITCHBOARD_DB_POOL_SIZE", help_heading = heading::STORAGE)]
    pub db_pool_size: Option<u32>,
    /// Log format.
    #[arg(
        long,
        env = "SWITCHBOARD_LOG_FORMAT",
        value_enum,
        default_value = "text",
        help_heading = heading::OBSERVABILITY
    )]
    pub log_format: LogFormat,
    /// Seconds to let in-flight requests finish on SIGINT/SIGTERM.
    #[arg(
        long,
        env = "SWITCHBOARD_SHUTDOWN_TIMEOUT",
        default_value = "30",
        help_heading = heading::SERVER
    )]
    pub shutdown_timeout: u64,
    /// Bytes of request bodies held at once across the server; a body waits for room (at most
    /// the body read timeout, then 503). At least the largest body limit (8 MiB).
    #[arg(
        long,
        env = "SWITCHBOARD_MAX_BODY_BYTES_IN_FLIGHT",
        default_value_t = switchboard_api::extract::DEFAULT_MAX_BODY_BYTES_IN_FLIGHT,
        value_parser = switchboard_api::extract::parse_max_in_flight,
        help_heading = heading::LIMITS
    )]
    pub max_body_bytes_in_flight: usize,
    /// Seconds a request body may take to arrive once admitted (then 408, connection closed).
    #[arg(
        long,
        env = "SWITCHBOARD_BODY_READ_TIMEOUT",
        default_value_t = switchboard_api::extract::DEFAULT_BODY_READ_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = heading::LIMITS
    )]
    pub body_read_timeout: u64,
    /// Slowest average rate, in bytes per second, a request body may arrive at after its
    /// first 5 seconds (then 408, connection closed); 0 turns the check off.
    #[arg(
        long,
        env = "SWITCHBOARD_BODY_MIN_RATE",
        default_value_t = switchboard_api::extract::DEFAULT_BODY_MIN_RATE,
        help_heading = heading::LIMITS
    )]
    pub body_min_rate: u32,
    /// Requests per second per credential (API key, or a sandbox's session key on the
    /// webhooks), burst the same; over it 429 with `Retry-After`. 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_PER_KEY", default_value = "0", help_heading = heading::LIMITS)]
    pub rate_limit_per_key: u32,
    /// Requests per second per client address (the TCP peer), burst the same; over it 429
    /// with `Retry-After`. 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_PER_IP", default_value = "0", help_heading = heading::LIMITS)]
    pub rate_limit_per_ip: u32,
    /// Websocket subscribers this process serves at once (API.md, Live delivery); one more is
    /// closed with 1013.
    #[arg(
        long,
        env = "SWITCHBOARD_MAX_SUBSCRIBERS",
        default_value_t = switchboard_api::live::DEFAULT_MAX_SUBSCRIBERS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        help_heading = heading::LIMITS
    )]
    pub max_subscribers: usize,
    /// Websockets one member (user) may hold at once on this process, whatever API keys they use: Switchboard's own sockets up to this many, and proxied sockets to sandboxes up to this many more; one more is refused (1013, or 503 before a proxied upgrade), so one member never takes every socket, also by minting keys. `--max-sockets-per-key` is its former name.
    #[arg(
        long,
        alias = "max-sockets-per-key",
        env = "SWITCHBOARD_MAX_SOCKETS_PER_MEMBER",
        default_value_t = switchboard_api::live::DEFAULT_MAX_SOCKETS_PER_MEMBER,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        help_heading = heading::LIMITS
    )]
    pub max_sockets_per_member: usize,
    /// Websockets the members of one organization may hold together on this process, whatever members and keys: Switchboard's own sockets (counted for the conversation's organization) up to this many, and proxied sockets (for the sandbox's) up to this many more; one more is refused (1013, or 503 before a proxied upgrade), so one organization never takes every socket from the others. Default: no limit but each member's.
    #[arg(
        long,
        env = "SWITCHBOARD_MAX_SOCKETS_PER_ORG",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        help_heading = heading::LIMITS
    )]
    pub max_sockets_per_org: Option<usize>,
    /// The most live API keys (not revoked, not expired) one member may hold through `POST /api/keys`; one more is 409 until they revoke one (minting keys must not multiply what a member may hold).
    #[arg(
        long,
        env = "SWITCHBOARD_MAX_API_KEYS_PER_MEMBER",
        default_value_t = switchboard_domain::services::DEFAULT_MAX_API_KEYS_PER_MEMBER,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        help_heading = heading::LIMITS
    )]
    pub max_api_keys_per_member: usize,
    /// A browser origin allowed to call the API and the sandbox proxy (repeatable, e.g. `https://app.example.com`; none by default).
    #[arg(
        long = "cors-allowed-origin",
        value_name = "ORIGIN",
        env = "SWITCHBOARD_CORS_ALLOWED_ORIGINS",
        value_delimiter = ',',
        help_heading = heading::SERVER
    )]
    pub cors_allowed_origin: Vec<String>,
    #[command(flatten)]
    pub urls: crate::sandbox_urls::SandboxUrlArgs,
    #[command(flatten)]
    pub storage_limits: crate::cli_storage::StorageLimitArgs,
    /// The largest request body the sandbox proxy forwards, bytes (as the API's routes: 1 MiB); larger is 413.
    #[arg(
        long,
        env = "SWITCHBOARD_PROXY_MAX_BODY_BYTES",
        default_value_t = switchboard_api::extract::DEFAULT_BODY_LIMIT,
        help_heading = heading::SANDBOX_URLS
    )]
    pub proxy_max_body_bytes: usize,
    /// Seconds the sandbox proxy waits for a sandbox's service to send the next bytes of an answer (then 504, or the answer ends).
    #[arg(
        long,
        env = "SWITCHBOARD_PROXY_READ_TIMEOUT",
        default_value = "600",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = heading::SANDBOX_URLS
    )]
    pub proxy_read_timeout: u64,
    /// Frames from a sandbox queued for one proxied websocket client; a client further behind is closed (1008).
    #[arg(
        long,
        env = "SWITCHBOARD_PROXY_WS_QUEUE",
        default_value = "1024",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        help_heading = heading::SANDBOX_URLS
    )]
    pub proxy_ws_queue: usize,
    /// Narrows the LLM models members are offered (`GET /api/v1/config/models/search` and `/providers/search`) to those a pattern matches: `provider/name` with `*` for any run of characters (e.g. `anthropic/*,openai/gpt-5*`). Repeat or separate with commas. Default: LiteLLM's whole list as shipped.
    #[arg(
        long = "llm-model-allow",
        env = "SWITCHBOARD_LLM_MODEL_ALLOW",
        value_name = "PATTERN",
        value_delimiter = ',',
        help_heading = heading::LLM
    )]
    pub llm_model_allow: Vec<switchboard_domain::llm_catalog::ModelPattern>,
    /// The skills directory `GET /api/v1/skills/search` lists: `DIR/global/**/*.md` for everyone, `DIR/users/<user id>/**/*.md` for that user (markdown with YAML front matter). Default: none.
    #[arg(long, env = "SWITCHBOARD_SKILLS_DIR", value_name = "DIR", help_heading = heading::LLM)]
    pub skills_dir: Option<PathBuf>,
    /// Serves a browser client's built files at `/` from DIR (e.g. the `build/` directory of the npm package `@openhands/agent-canvas`), beside the API on the same origin; client-side routes get its `index.html`.
    #[arg(long, env = "SWITCHBOARD_WEB_CLIENT", value_name = "DIR", value_parser = switchboard_api::web_client::WebClient::parse, help_heading = heading::SERVER)]
    pub web_client: Option<switchboard_api::web_client::WebClient>,
    #[command(flatten)]
    pub sandboxes: SandboxArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub service: crate::sign_in::ServiceKeyArgs,
    #[command(flatten)]
    pub sign_in: crate::sign_in::SignInArgs,
}

// The LLM of started conversations (issue 10; docs/API.md, App conversations: start).
#[derive(Args, Clone)]
pub struct LlmArgs {
    /// The default LLM model of started conversations (LiteLLM name, e.g. openai/gpt-4o); a start request's llm_model wins.
    #[arg(long, env = "LLM_MODEL", help_heading = heading::LLM)]
    pub llm_model: Option<String>,
    /// The LLM provider's base URL (e.g. `http://127.0.0.1:18100/v1`).
    #[arg(long, env = "LLM_BASE_URL", help_heading = heading::LLM)]
    pub llm_base_url: Option<String>,
    /// A file holding the LLM API key (trailing whitespace ignored); else LLM_API_KEY.
    #[arg(long, env = "SWITCHBOARD_LLM_API_KEY_FILE", help_heading = heading::LLM)]
    pub llm_api_key_file: Option<PathBuf>,
    /// Have the LLM stream its completions: the agent server sends token deltas, relayed to live subscribers as transient frames.
    #[arg(long, env = "SWITCHBOARD_LLM_STREAM", help_heading = heading::LLM)]
    pub llm_stream: bool,
    /// Seconds .openhands/setup.sh may run during a start.
    #[arg(long, env = "SWITCHBOARD_SETUP_SCRIPT_TIMEOUT", default_value = "600", help_heading = heading::STARTS)]
    pub setup_script_timeout: u64,
    /// Seconds a replica's claim on a conversation start holds without renewal (renewed every few seconds while it runs); once it lapses (the replica ended), any replica fails the start.
    #[arg(long, env = "SWITCHBOARD_START_CLAIM_LEASE", default_value = "60", value_parser = clap::value_parser!(u64).range(3..), help_heading = heading::STARTS)]
    pub start_claim_lease: u64,
    /// Conversation starts this replica runs at once; more wait for a free worker (or another replica).
    #[arg(long, env = "SWITCHBOARD_START_WORKERS", default_value = "32", value_parser = clap::value_parser!(u64).range(1..=1024), help_heading = heading::STARTS)]
    pub start_workers: u64,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl DbArgs {
    /// The database these flags name ([`switchboard_ops::Database`]).
    pub fn database(&self) -> Database {
        Database {
            url: self.database_url.clone(),
            url_file: self.database_url_file.clone(),
            data_dir: self.data_dir.clone(),
        }
    }
}

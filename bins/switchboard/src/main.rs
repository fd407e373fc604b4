//! `switchboard`: the server (`serve`) and the operator commands of API.md (`migrate`,
//! `bootstrap`, `users create`, `members add`, `keys create|list|revoke`).
//!
//! Every command takes `--database-url` (env `SWITCHBOARD_DATABASE_URL`; default: the SQLite
//! file `switchboard.sqlite` in `--data-dir`, env `SWITCHBOARD_DATA_DIR`, default
//! `./switchboard-data`), applies pending migrations first, and prints one JSON object on
//! stdout; errors go to stderr with a non-zero exit.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};
use switchboard_api::{AppState, PoolStats, create_app};
use switchboard_domain::time_input::parse_datetime;
use switchboard_domain::{ApiKeyId, ApiKeyView, DomainError, OrgId, Role, Switchboard, UserId};
use switchboard_storage::DieselStore;

#[derive(Parser)]
#[command(
    name = "switchboard",
    version,
    about = "Control plane for software-agent conversations"
)]
struct Cli {
    #[command(flatten)]
    db: DbArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct DbArgs {
    /// Database URL: postgres://… or sqlite://PATH (default: SQLite in the data dir).
    #[arg(long, env = "SWITCHBOARD_DATABASE_URL", global = true)]
    database_url: Option<String>,
    /// Folder for the default SQLite database (created if missing).
    #[arg(
        long,
        env = "SWITCHBOARD_DATA_DIR",
        global = true,
        default_value = "./switchboard-data"
    )]
    data_dir: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server.
    Serve(ServeArgs),
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
enum SandboxesCommand {
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
enum UsersCommand {
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
enum MembersCommand {
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
enum KeysCommand {
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
struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, env = "SWITCHBOARD_BIND", default_value = "127.0.0.1:3000")]
    bind: SocketAddr,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "SWITCHBOARD_WORKERS")]
    workers: Option<usize>,
    /// Maximum database connections in the pool.
    #[arg(long, env = "SWITCHBOARD_DB_POOL_SIZE")]
    db_pool_size: Option<u32>,
    /// Log format.
    #[arg(
        long,
        env = "SWITCHBOARD_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    log_format: LogFormat,
    /// Seconds to let in-flight requests finish on SIGINT/SIGTERM.
    #[arg(long, default_value = "30")]
    shutdown_timeout: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SWITCHBOARD_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        LogFormat::Text => builder.init(),
    }
}

impl DbArgs {
    fn url(&self) -> Result<String> {
        if let Some(u) = &self.database_url {
            return Ok(u.clone());
        }
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating {}", self.data_dir.display()))?;
        let path = self.data_dir.join("switchboard.sqlite");
        let abs = std::path::absolute(&path).unwrap_or(path);
        Ok(format!("sqlite://{}", abs.display()))
    }

    /// Opens the store. `pool_size` overrides the pool's size; `server` turns on the
    /// background WAL checkpoint for SQLite (long-running processes only).
    fn open(&self, pool_size: Option<u32>, server: bool) -> Result<(DieselStore, Vec<String>)> {
        let url = self.url()?;
        let kind = switchboard_storage::DatabaseUrl::parse(&url)
            .map(|u| u.kind())
            .unwrap_or(switchboard_storage::BackendKind::Sqlite);
        let defaults = switchboard_storage::PoolConfig::default_for(kind);
        let config = switchboard_storage::PoolConfig {
            max_size: pool_size.map_or(defaults.max_size, |n| n.max(1)),
            min_idle: pool_size.map_or(defaults.min_idle, |n| n.max(1)),
            background_checkpoint: server.then(|| Duration::from_secs(1)),
            ..defaults
        };
        DieselStore::open(&url, Some(config)).with_context(|| "opening the database")
    }
}

fn print(v: Value) {
    println!("{v}");
}

fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> Result<T> {
    s.parse()
        .map_err(|_| anyhow::anyhow!("--{what}: not a UUID: {s}"))
}

fn key_json(k: &switchboard_domain::api_keys::ApiKeyRecord) -> Value {
    serde_json::to_value(ApiKeyView::from(k)).unwrap_or(Value::Null)
}

fn domain(e: DomainError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve(args) => return serve(cli.db, args),
        Command::Migrate => {
            let (_, applied) = cli.db.open(Some(1), false)?;
            print(json!({ "applied": applied }));
        }
        Command::Bootstrap { org_name, email } => {
            let (store, _) = cli.db.open(Some(2), false)?;
            let b = Switchboard::new(Arc::new(store))
                .bootstrap(&org_name, &email)
                .map_err(domain)?;
            print(json!({ "org_id": b.org_id, "user_id": b.user_id, "api_key": b.api_key }));
        }
        Command::Users(UsersCommand::Create { email, name }) => {
            let (store, _) = cli.db.open(Some(2), false)?;
            let u = Switchboard::new(Arc::new(store))
                .create_user(&email, name)
                .map_err(domain)?;
            print(json!({ "user_id": u.id }));
        }
        Command::Members(MembersCommand::Add {
            org_id,
            user_id,
            role,
        }) => {
            let org: OrgId = parse_id(&org_id, "org-id")?;
            let user: UserId = parse_id(&user_id, "user-id")?;
            let Some(r) = Role::parse(&role) else {
                bail!("--role: expected owner, admin or member, got {role}")
            };
            let (store, _) = cli.db.open(Some(2), false)?;
            Switchboard::new(Arc::new(store))
                .add_member(org, user, r)
                .map_err(domain)?;
            print(json!({ "org_id": org, "user_id": user, "role": r.as_str() }));
        }
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
            let (store, _) = cli.db.open(Some(2), false)?;
            let k = Switchboard::new(Arc::new(store))
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
            let (store, _) = cli.db.open(Some(2), false)?;
            let r = Switchboard::new(Arc::new(store))
                .register_sandbox(org, user)
                .map_err(domain)?;
            print(json!({ "sandbox_id": r.sandbox_id, "session_api_key": r.session_api_key }));
        }
        Command::Keys(KeysCommand::List { user_id }) => {
            let user: UserId = parse_id(&user_id, "user-id")?;
            let (store, _) = cli.db.open(Some(2), false)?;
            let keys = Switchboard::new(Arc::new(store))
                .operator_list_keys(user)
                .map_err(domain)?;
            print(json!({ "items": keys.iter().map(key_json).collect::<Vec<_>>() }));
        }
        Command::Keys(KeysCommand::Revoke { id }) => {
            let id: ApiKeyId = parse_id(&id, "id")?;
            let (store, _) = cli.db.open(Some(2), false)?;
            Switchboard::new(Arc::new(store))
                .operator_revoke_key(id)
                .map_err(domain)?;
            print(json!({ "id": id, "revoked": true }));
        }
    }
    Ok(())
}

fn serve(db: DbArgs, args: ServeArgs) -> Result<()> {
    init_tracing(args.log_format);
    let (store, applied) = db.open(args.db_pool_size, true)?;
    if !applied.is_empty() {
        tracing::info!(migrations = ?applied, "applied migrations");
    }
    let store = Arc::new(store);
    let services = Switchboard::new(store.clone());
    if services.is_empty().map_err(domain)? {
        let b = services
            .bootstrap("default", "admin@localhost")
            .map_err(domain)?;
        print(json!({
            "event": "bootstrapped",
            "org_id": b.org_id,
            "user_id": b.user_id,
            "api_key": b.api_key,
            "note": "first start: this admin key is shown once",
        }));
    }
    let db_concurrency = store.pool_usage().max_size as usize;
    let stats_store = store.clone();
    let pool_stats: switchboard_api::PoolStatsFn = Arc::new(move || {
        let u = stats_store.pool_usage();
        PoolStats {
            connections: u.connections,
            idle: u.idle,
            max_size: u.max_size,
        }
    });
    let state = actix_web::web::Data::new(AppState::with_db_concurrency(
        services,
        Some(pool_stats),
        db_concurrency,
    ));
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    actix_web::rt::System::new().block_on(async move {
        let server = actix_web::HttpServer::new(move || create_app(state.clone()))
            .workers(workers)
            .shutdown_timeout(args.shutdown_timeout)
            .keep_alive(Duration::from_secs(75))
            // actix stops at once on SIGINT; both signals stop gracefully here instead.
            .disable_signals()
            .bind(args.bind)
            .with_context(|| format!("binding {}", args.bind))?;
        let addr = server
            .addrs()
            .first()
            .copied()
            .context("no address bound")?;
        let server = server.run();
        stop_gracefully_on_signals(&server.handle())?;
        print(json!({ "event": "listening", "address": format!("http://{addr}") }));
        tracing::info!(%addr, workers, "listening");
        server.await.context("server failed")?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// On SIGINT or SIGTERM: stop accepting connections, let requests in flight finish (up to
/// `--shutdown-timeout`), then stop. Must run inside the actix system.
fn stop_gracefully_on_signals(handle: &actix_web::dev::ServerHandle) -> Result<()> {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let mut signals = signal(kind).with_context(|| format!("listening for {name}"))?;
        let handle = handle.clone();
        actix_web::rt::spawn(async move {
            if signals.recv().await.is_some() {
                tracing::info!("{name} received; finishing requests in flight");
                handle.stop(true).await;
            }
        });
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

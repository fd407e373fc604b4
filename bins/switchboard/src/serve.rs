//! `switchboard serve`: the log, the store, the services and the sandboxes' runtimes from
//! the flags, first-start bootstrap, the HTTP servers ([`switchboard_api::server`]), the
//! supervisor of background work, and graceful shutdown on SIGINT/SIGTERM (requests in
//! flight finish, then background work stops).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use switchboard_api::extract::BodyLimits;
use switchboard_api::rate_limit::RateLimitConfig;
use switchboard_api::sandbox_proxy::url_listeners;
use switchboard_api::sandbox_proxy::url_ports::{self, UrlForm};
use switchboard_api::server::{HttpOptions, Listeners, Serving};
use switchboard_api::{AppState, Metrics};
use switchboard_domain::Switchboard;
use switchboard_domain::jobs::Job;
use switchboard_domain::llm_catalog::LlmCatalog;
use switchboard_domain::services::LlmConfig;
use switchboard_domain::skills::SkillLibrary;
use switchboard_ops::Database;
use switchboard_runtime::open_files::{ServerShape, plan_and_log};
use switchboard_runtime::{FileBudget, PoolKind, Supervisor, Wakes};
use switchboard_sandbox::wiring::{self, SandboxOptions};
use switchboard_storage::{BackendKind, DieselStore};

use crate::cli::{LogFormat, ServeArgs};
use crate::commands::print;

/// How long shutdown waits for background work once the HTTP server has stopped.
const BACKGROUND_STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// What `serve` built before the HTTP server starts: the services, sign-in, the background
/// jobs, and the extra listener on the Docker bridge gateway.
struct Built {
    services: Switchboard,
    sign_in: Option<Arc<switchboard_api::sign_in::SignIn>>,
    jobs: Vec<Job>,
    gateway: Option<std::net::TcpListener>,
}

// Long: the server's whole life in the order it happens (open, bind, build, serve, stop),
// each step one call; split, the order would be harder to read.
/// Runs the server until SIGINT or SIGTERM.
///
/// # Errors
/// The database cannot be opened, the address cannot be bound, or the server fails.
pub fn serve(db: &Database, args: ServeArgs) -> Result<()> {
    switchboard_runtime::logging::init(matches!(args.log_format, LogFormat::Json));
    let open_files = switchboard_runtime::open_files::raise_and_log();
    let (store, db_url) = db.open_for_server(args.db_pool_size)?;
    let store = Arc::new(args.storage_limits.apply(store, &db_url));
    // Bound first: the sandboxes' webhook URL defaults to the bound address.
    let listener =
        std::net::TcpListener::bind(args.bind).with_context(|| format!("binding {}", args.bind))?;
    let addr = listener.local_addr().context("no address bound")?;
    let metrics = Metrics::new();
    let sandboxes = args.sandboxes.options();
    let wakes = Wakes::default();
    let built = build(db, &args, &sandboxes, &store, addr, &metrics, &wakes)?;
    if let Some(bootstrapped) = switchboard_ops::first_start::first_start(&built.services)? {
        print(bootstrapped);
    }
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let form = args.urls.form()?;
    let shape = ServerShape {
        pool: u64::from(store.pool_usage().max_size),
        pool_kind: match store.kind() {
            BackendKind::Sqlite => PoolKind::Sqlite,
            BackendKind::Postgres => PoolKind::Postgres,
        },
        workers: workers as u64,
        url_ports: form == UrlForm::Port,
        max_subscribers: args.max_subscribers as u64,
        max_sockets_per_member: args.max_sockets_per_member as u64,
    };
    let files = plan_and_log(&open_files, &shape).map_err(anyhow::Error::msg)?;
    let mut listening = vec![addr];
    listening.extend(built.gateway.as_ref().and_then(|l| l.local_addr().ok()));
    let range = url_ports::port_range(form, args.urls.sandbox_url_ports, &listening)
        .map_err(anyhow::Error::msg)?;
    let descriptors = usize::try_from(files.url_ports).unwrap_or(usize::MAX);
    let url_ports = url_listeners::Plan::new(form, range, addr, descriptors, workers);
    let public_url = sandboxes.public_url(addr);
    let mut state = app_state(&args, &store, &built, &files, &url_ports, public_url);
    state.metrics = metrics;
    // Appends of this process wake its subscribers directly.
    store.observe_appends(state.live.hub());
    let listeners = Listeners {
        main: listener,
        gateway: built.gateway,
        metrics: switchboard_api::server::bind_metrics(args.metrics_listen, &state)?,
    };
    let options = HttpOptions {
        workers,
        max_connections_per_worker: files.connections_per_worker as usize,
        shutdown_timeout: args.shutdown_timeout,
    };
    let warm_pool = built.services.sandboxes().clone();
    let jobs = built.jobs;
    switchboard_api::server::block_on(async move {
        let (serving, url_job) =
            Serving::start(state, options, listeners, url_ports, store.clone())?;
        let hub = serving.state().live.hub();
        // On PostgreSQL, appends of other processes wake subscribers through LISTEN; settings
        // and identity writes of every replica invalidate this one's read caches, used only
        // while that listener is connected.
        let (settings, keys) = (store.settings_cache(), store.key_cache());
        let listen =
            switchboard_storage::listen::listen_for_all(db_url.clone(), hub, settings, keys);
        let listener =
            (store.kind() == BackendKind::Postgres).then(|| tokio::task::spawn_local(listen));
        let counters = serving.state().metrics.activity().jobs().clone();
        let mut supervisor = Supervisor::new().with_counters(Arc::new(counters));
        supervisor.add_all(store.jobs().into_iter().chain(jobs).chain(url_job), &wakes);
        // A stopping server stops the unclaimed warm-pool sandboxes it launched (API.md, Warm
        // pool), once its jobs (the pool's refill among them) have stopped.
        supervisor.at_shutdown("sandbox-warm-pool-stop", move || {
            warm_pool.stop_warm_pool().map(|_| ())
        });
        print(json!({ "event": "listening", "address": format!("http://{addr}") }));
        tracing::info!(%addr, workers, "listening");
        let served = serving.stopped().await;
        listener.iter().for_each(|t| t.abort());
        // Background work stops after the last request, so none runs without it.
        supervisor.shutdown(BACKGROUND_STOP_TIMEOUT).await;
        served.context("server failed")?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// The runtimes and the services from the flags, the background jobs, and the listener on
/// the Docker bridge gateway when containers need one.
fn build(
    db: &Database,
    args: &ServeArgs,
    sandboxes: &SandboxOptions,
    store: &Arc<DieselStore>,
    addr: SocketAddr,
    metrics: &Metrics,
    wakes: &Wakes,
) -> Result<Built> {
    let key_file = db.key_file(args.sandboxes.secret_key_file.as_deref());
    let key = switchboard_ops::installation::open_key(store, &key_file)?;
    let mut hidden = db.files_to_hide();
    hidden.extend(args.llm.llm_api_key_file.iter().cloned());
    hidden.extend(args.service.service_api_key_file.iter().cloned());
    let server = wiring::Server {
        data_dir: db.data_dir.clone(),
        key_file: key.key_file,
        installation: key.installation.id,
        bound: addr,
        hidden,
    };
    let observer = Arc::new(metrics.clone());
    let configured = wiring::configure(sandboxes, server, key.sealer, observer, wakes.waker())?;
    // An LLM base URL written for the containers (`host.docker.internal`) is called by the
    // LLM pass-through from this host: resolve it as the containers do.
    if let Some(gateway) = configured.docker_gateway {
        switchboard_api::llm_relay::client::alias_host("host.docker.internal", gateway.into());
    }
    let timeouts = switchboard_domain::services::StartTimeouts {
        sandbox: Duration::from_secs(args.sandboxes.sandbox_start_timeout.max(1)),
        setup_script: Duration::from_secs(args.llm.setup_script_timeout.max(1)),
        ..Default::default()
    };
    let claims = switchboard_domain::services::StartClaims {
        replica: switchboard_ops::replica::load_or_create(&db.data_dir)?,
        lease: Duration::from_secs(args.llm.start_claim_lease),
        workers: usize::try_from(args.llm.start_workers).unwrap_or(1),
    };
    let l = &args.llm;
    let api_key = switchboard_ops::key_files::llm_api_key(l.llm_api_key_file.as_deref())?;
    let llm = LlmConfig::operator(
        l.llm_model.clone(),
        l.llm_base_url.clone(),
        api_key,
        l.llm_stream,
    );
    let allow = switchboard_domain::llm_allow::ModelAllowList::new(args.llm_model_allow.clone());
    allow
        .check_operator_default(llm.model.as_deref())
        .map_err(anyhow::Error::msg)?;
    let mut services = Switchboard::new(store.clone())
        .with_managed_sandboxes(configured.managed)
        .with_llm(llm)
        .with_model_allow(allow)
        .with_start_timeouts(timeouts)
        .with_start_claims(claims)
        .with_max_api_keys_per_member(args.max_api_keys_per_member);
    let service_key = args.service.service_api_key_file.as_deref();
    if let Some(key) = switchboard_ops::key_files::service_key(service_key)? {
        services = services.with_service_key(key);
    }
    let (services, sign_in) = args.sign_in.load(services)?;
    let jobs = (configured.upkeep.jobs(services.sandboxes()).into_iter())
        .chain(services.conversation_start().jobs())
        .chain(services.budget_jobs())
        .collect();
    Ok(Built {
        services,
        sign_in,
        jobs,
        gateway: configured.docker_listener,
    })
}

/// The HTTP server's state: the services, the pool's statistics, the body and rate limits,
/// the live-delivery caps and the sandbox proxy's share the open-files budget leaves room for,
/// the proxy (shown under `public_url`, the URL plan's form and ports), CORS, and what it
/// offers browser clients: the LLM catalog (`--llm-model-allow`), the skills directory
/// (`--skills-dir`), the client served at `/` (`--web-client`) and sign-in (`--oidc-*`).
fn app_state(
    args: &ServeArgs,
    store: &Arc<DieselStore>,
    built: &Built,
    files: &FileBudget,
    urls: &url_listeners::Plan,
    public_url: String,
) -> AppState {
    let db_concurrency = store.pool_usage().max_size as usize;
    let stats_store = store.clone();
    let pool_stats: switchboard_api::PoolStatsFn = Arc::new(move || stats_store.pool_usage());
    let disk_store = store.clone();
    let disk_stats: switchboard_api::DiskStatsFn = Arc::new(move || {
        disk_store
            .disk_free()
            .map(|(free, reserve)| switchboard_api::DiskStats { free, reserve })
    });
    let services = built.services.clone();
    let mut state = AppState::with_db_concurrency(services, Some(pool_stats), db_concurrency)
        .with_disk_stats(disk_stats)
        .with_body_limits(BodyLimits {
            max_in_flight: args.max_body_bytes_in_flight,
            read_timeout: Duration::from_secs(args.body_read_timeout),
            min_rate: args.body_min_rate,
        })
        .with_rate_limits(RateLimitConfig {
            per_key: args.rate_limit_per_key,
            per_ip: args.rate_limit_per_ip,
        })
        .with_live(switchboard_api::live::LiveConfig {
            max_subscribers: args.max_subscribers.min(files.subscribers as usize),
            max_sockets_per_member: args.max_sockets_per_member,
            max_sockets_per_org: args.max_sockets_per_org,
            max_relays: files.relays as usize,
            ..Default::default()
        })
        .with_proxy(switchboard_api::sandbox_proxy::ProxyConfig {
            public_url: Some(public_url),
            host_pattern: args.urls.sandbox_host_pattern.clone(),
            url_form: urls.form,
            bound_ports: urls.bound.clone(),
            max_body: args.proxy_max_body_bytes,
            read_timeout: Duration::from_secs(args.proxy_read_timeout),
            ws_queue: args.proxy_ws_queue,
            max_upstream_sockets: usize::try_from(files.proxy).unwrap_or(usize::MAX),
            max_sockets_per_member: args.max_sockets_per_member,
            max_sockets_per_org: args.max_sockets_per_org,
            ..Default::default()
        })
        .with_cors_origins(args.cors_allowed_origin.clone())
        .with_llm_catalog(LlmCatalog::shipped(&args.llm_model_allow))
        .with_skills(SkillLibrary::new(args.skills_dir.clone()));
    if let Some(client) = &args.web_client {
        tracing::info!(dir = %client.root().display(), "serving the web client at /");
        state = state.with_web_client(client.clone());
    }
    if let Some(sign_in) = built.sign_in.clone() {
        state = state.with_sign_in(sign_in);
    }
    if !args.llm_model_allow.is_empty() {
        tracing::info!(
            models = state.llm_catalog.model_count(),
            "LLM catalog narrowed by --llm-model-allow"
        );
    }
    state
}

//! `switchboard serve`: tracing, the store, first-start bootstrap, the HTTP server, the
//! supervisor of background work, and graceful shutdown on SIGINT/SIGTERM (requests in
//! flight finish, then background work stops).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;
use switchboard_api::sandbox_proxy::url_listeners;
use switchboard_api::{AppState, Metrics, PoolStats, create_app};
use switchboard_domain::Switchboard;
use switchboard_domain::llm_catalog::LlmCatalog;
use switchboard_domain::skills::SkillLibrary;
use switchboard_storage::BackendKind;

use switchboard_domain::jobs::Job;
use switchboard_ops::{Database, domain};
use switchboard_storage::DieselStore;

use crate::cli::{LogFormat, ServeArgs};
use crate::output::print;
use crate::sandboxes;
use switchboard_runtime::FileBudget;
use switchboard_runtime::{Supervisor, Wakes};

/// How long shutdown waits for background work once the HTTP server has stopped.
const BACKGROUND_STOP_TIMEOUT: Duration = Duration::from_secs(10);

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

/// What `serve` built before the HTTP server starts: the services, the background jobs and
/// the extra listener on the Docker bridge gateway.
struct Built {
    services: Switchboard,
    sign_in: Option<std::sync::Arc<switchboard_api::sign_in::SignIn>>,
    jobs: Vec<Job>,
    wakes: Wakes,
    gateway_listener: Option<std::net::TcpListener>,
}

// Long: the server's whole life in the order it happens (open, bind, build, serve, stop),
// each step one call; split, the order would be harder to read.
/// Runs the server until SIGINT or SIGTERM.
///
/// # Errors
/// The database cannot be opened, the address cannot be bound, or the server fails.
pub fn serve(db: &Database, args: ServeArgs) -> Result<()> {
    init_tracing(args.log_format);
    let open_files = switchboard_runtime::open_files::raise_and_log();
    db.warn_if_password_on_command_line();
    let (store, applied) = db.open(args.db_pool_size, true)?;
    let db_url = db.url()?;
    if !applied.is_empty() {
        tracing::info!(migrations = ?applied, "applied migrations");
    }
    let store = Arc::new(args.storage_limits.apply(store, &db_url));
    // Bound first: the sandboxes' webhook URL defaults to the bound address.
    let listener =
        std::net::TcpListener::bind(args.bind).with_context(|| format!("binding {}", args.bind))?;
    let addr = listener.local_addr().context("no address bound")?;
    let metrics = Metrics::new();
    let built = build(db, &args, &store, addr, &metrics)?;
    first_start(&built.services)?;
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let files = crate::open_files::budget(&open_files, &store, workers, &args)?;
    let url_ports = {
        let mut listening = vec![addr];
        listening.extend(
            built
                .gateway_listener
                .as_ref()
                .and_then(|l| l.local_addr().ok()),
        );
        let descriptors = usize::try_from(files.url_ports).unwrap_or(usize::MAX);
        let range = args.urls.ports(&listening)?;
        url_listeners::Plan::new(args.urls.form()?, range, addr, descriptors, workers)
    };
    let mut state = app_state(&args, &store, built.services.clone(), &files)
        .with_proxy(proxy_config(&args, addr, &files, &url_ports))
        .with_cors_origins(args.cors_allowed_origin.clone());
    state = client_facing(state, &args, built.sign_in.clone());
    state.metrics = metrics;
    // Appends of this process wake its subscribers directly.
    store.observe_appends(state.live.hub());
    let live = state.live.clone();
    let metrics_listener = crate::metrics_listener::bind(args.metrics_listen, &state)?;
    let state = actix_web::web::Data::new(state);
    let warm_pool = built.services.sandboxes().clone();
    let Built {
        jobs,
        wakes,
        gateway_listener,
        ..
    } = built;
    let port_state = state.clone();
    actix_web::rt::System::new().block_on(async move {
        let mut server = actix_web::HttpServer::new(move || create_app(state.clone()))
            .workers(workers)
            .max_connections(files.connections_per_worker as usize)
            .shutdown_timeout(args.shutdown_timeout)
            .keep_alive(Duration::from_secs(75))
            // actix stops at once on SIGINT; both signals stop gracefully here instead.
            .disable_signals()
            .listen(listener)
            .with_context(|| format!("listening on {addr}"))?;
        if let Some(extra) = gateway_listener {
            let extra_addr = extra.local_addr().context("no address bound")?;
            server = server
                .listen(extra)
                .with_context(|| format!("listening on {extra_addr}"))?;
            tracing::info!(addr = %extra_addr, "also listening on the Docker bridge gateway, for containers");
        }
        let server = server.run();
        stop_gracefully_on_signals(&server.handle(), live.clone())?;
        let metrics_server = crate::metrics_listener::start(metrics_listener, &port_state)?;
        // On PostgreSQL, appends of other processes wake subscribers through LISTEN.
        let listener_task = (store.kind() == BackendKind::Postgres).then(|| {
            actix_web::rt::spawn(switchboard_storage::listen::listen_for_appends(
                db_url.clone(),
                live.hub(),
            ))
        });
        // On PostgreSQL, settings and identity writes of every replica invalidate this one's
        // read caches; they are used only while this listener is connected.
        let settings_task = (store.kind() == BackendKind::Postgres).then(|| {
            actix_web::rt::spawn(switchboard_storage::listen::listen_for_caches(
                db_url.clone(),
                store.settings_cache(),
                store.key_cache(),
            ))
        });
        let mut supervisor = Supervisor::new()
            .with_counters(std::sync::Arc::new(port_state.metrics.activity().jobs().clone()));
        for job in store.jobs().into_iter().chain(jobs) {
            supervisor.add(job, &wakes);
        }
        // A stopping server stops the unclaimed warm-pool sandboxes it launched (API.md, Warm
        // pool), once its jobs (the pool's refill among them) have stopped.
        supervisor.at_shutdown("sandbox-warm-pool-stop", move || {
            warm_pool.stop_warm_pool().map(|_| ())
        });
        let url_listeners = url_ports.start(port_state, store.clone()).map(|(listeners, job)| {
            supervisor.add(job, &wakes);
            listeners
        });
        print(json!({ "event": "listening", "address": format!("http://{addr}") }));
        tracing::info!(%addr, workers, "listening");
        let served = server.await;
        live.shutdown();
        crate::metrics_listener::stop(metrics_server).await;
        // The sandboxes' own ports close with the main listener.
        url_listeners.iter().for_each(|l| l.close_all());
        for t in [listener_task, settings_task].into_iter().flatten() {
            t.abort();
        }
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
    store: &Arc<DieselStore>,
    addr: std::net::SocketAddr,
    metrics: &Metrics,
) -> Result<Built> {
    let wakes = Wakes::default();
    let key_file = db.key_file(args.sandboxes.secret_key_file.as_deref());
    let key = switchboard_ops::installation::open_key(store, &key_file)?;
    let configured = sandboxes::configure(
        &args.sandboxes,
        &db.data_dir,
        key,
        addr,
        Arc::new(metrics.clone()),
        &wakes,
        {
            let mut hide = db.files_to_hide();
            hide.extend(args.llm.llm_api_key_file.iter().cloned());
            hide.extend(args.service.service_api_key_file.iter().cloned());
            hide
        },
    )?;
    let managed = configured.managed;
    // Containers on Docker's bridge reach the host only through the bridge gateway.
    let gateway_listener = match configured.docker.as_ref().and_then(|d| d.extra_listen) {
        Some(extra) => Some(std::net::TcpListener::bind(extra).with_context(|| {
            format!(
                "binding {extra}, the Docker bridge gateway, so that containers reach \
                 Switchboard (or bind 0.0.0.0, or set --docker-public-url / --docker-network host)"
            )
        })?),
        None => None,
    };
    let warm = managed.settings.warm_sandboxes > 0;
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
    let llm = args.llm.config()?;
    let allow = switchboard_domain::llm_allow::ModelAllowList::new(args.llm_model_allow.clone());
    if let Some(why) = llm.model.as_deref().and_then(|m| allow.refusal(m)) {
        anyhow::bail!(
            "--llm-model: {why}: the operator's default model must be one members may use"
        );
    }
    let mut services = Switchboard::new(store.clone())
        .with_managed_sandboxes(managed)
        .with_llm(llm)
        .with_model_allow(allow)
        .with_start_timeouts(timeouts)
        .with_start_claims(claims)
        .with_max_api_keys_per_member(args.max_api_keys_per_member);
    if let Some(key) = args.service.load()? {
        services = services.with_service_key(key);
    }
    let (services, sign_in) = args.sign_in.load(services)?;
    let jobs = sandboxes::jobs(
        &services,
        warm,
        configured
            .docker
            .as_ref()
            .map(|d| (d, configured.docker_images.clone())),
        Duration::from_secs(args.sandboxes.docker.docker_orphan_grace),
        configured.log_cap,
        configured.kube.map(|k| {
            (
                k,
                Duration::from_secs(args.sandboxes.kube.kube_orphan_grace),
            )
        }),
    )
    .into_iter()
    .chain(services.conversation_start().jobs())
    .chain(services.budget_jobs())
    .collect();
    Ok(Built {
        services,
        sign_in,
        jobs,
        wakes,
        gateway_listener,
    })
}

/// The sandbox proxy's configuration from the flags, the bound address, the open-files
/// budget and the URL plan.
fn proxy_config(
    args: &ServeArgs,
    addr: std::net::SocketAddr,
    files: &FileBudget,
    urls: &url_listeners::Plan,
) -> switchboard_api::sandbox_proxy::ProxyConfig {
    switchboard_api::sandbox_proxy::ProxyConfig {
        public_url: Some(crate::sandboxes::public_url(&args.sandboxes, addr)),
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
    }
}

/// What a start does once: start tasks cut off by this replica's previous run (or whose
/// claim lapsed) set to `ERROR` (the restart rule, issue 20), and on an empty database the
/// first organization and its admin key (printed once).
fn first_start(services: &Switchboard) -> Result<()> {
    // Starts cut off by the previous run's end never finish: say so on their tasks.
    let closed = services
        .conversation_start()
        .recover_unfinished()
        .map_err(domain)?;
    if closed > 0 {
        tracing::warn!(
            closed,
            "start tasks left unfinished by the previous run set to ERROR"
        );
    }
    if services.operator().is_empty().map_err(domain)? {
        let b = services
            .operator()
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
    Ok(())
}

/// The HTTP server's state: the services, the pool's statistics, the body and rate limits
/// and the live-delivery caps the open-files budget leaves room for.
fn app_state(
    args: &ServeArgs,
    store: &Arc<DieselStore>,
    services: Switchboard,
    files: &FileBudget,
) -> AppState {
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
    let disk_store = store.clone();
    let disk_stats: switchboard_api::DiskStatsFn = Arc::new(move || {
        disk_store
            .disk_free()
            .map(|(free, reserve)| switchboard_api::DiskStats { free, reserve })
    });
    AppState::with_db_concurrency(services, Some(pool_stats), db_concurrency)
        .with_disk_stats(disk_stats)
        .with_body_limits(args.body_limits())
        .with_rate_limits(args.rate_limits())
        .with_live(switchboard_api::live::LiveConfig {
            max_subscribers: args.max_subscribers.min(files.subscribers as usize),
            max_sockets_per_member: args.max_sockets_per_member,
            max_sockets_per_org: args.max_sockets_per_org,
            max_relays: files.relays as usize,
            ..Default::default()
        })
}

/// What the state offers browser clients: the LLM catalog (`--llm-model-allow`), the skills
/// directory (`--skills-dir`), the client served at `/` (`--web-client`) and sign-in
/// (`--oidc-*`).
fn client_facing(
    state: AppState,
    args: &ServeArgs,
    sign_in: Option<std::sync::Arc<switchboard_api::sign_in::SignIn>>,
) -> AppState {
    let mut state = state
        .with_llm_catalog(LlmCatalog::shipped(&args.llm_model_allow))
        .with_skills(SkillLibrary::new(args.skills_dir.clone()));
    if let Some(client) = &args.web_client {
        tracing::info!(dir = %client.root().display(), "serving the web client at /");
        state = state.with_web_client(client.clone());
    }
    if let Some(sign_in) = sign_in {
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

/// On SIGINT or SIGTERM: stop accepting connections, let requests in flight finish (up to
/// `--shutdown-timeout`), then stop. Must run inside the actix system.
fn stop_gracefully_on_signals(
    handle: &actix_web::dev::ServerHandle,
    live: Arc<switchboard_api::live::Live>,
) -> Result<()> {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let mut signals = signal(kind).with_context(|| format!("listening for {name}"))?;
        let handle = handle.clone();
        let live = live.clone();
        actix_web::rt::spawn(async move {
            if signals.recv().await.is_some() {
                tracing::info!("{name} received; finishing requests in flight");
                // Websockets close at once (1001) rather than hold the shutdown.
                live.shutdown();
                handle.stop(true).await;
            }
        });
    }
    Ok(())
}

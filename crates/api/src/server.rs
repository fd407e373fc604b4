//! `serve`'s HTTP servers, run: the app on its listeners (the main one and, for Docker
//! containers, the bridge gateway's), `/metrics` on a listener of its own when asked
//! (`--metrics-listen`: then no longer on the API's address, 404 there), the sandboxes' own
//! ports in the port form ([`url_listeners`]), and a graceful stop on SIGINT or SIGTERM:
//! websockets close at once (1001), requests in flight finish within the shutdown timeout.
//! Everything here runs in the actix system of [`block_on`].

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::web::Data;
use switchboard_domain::jobs::Job;
use switchboard_domain::ports::UrlPortStore;

use crate::live::Live;
use crate::metrics::exposition::metrics_app;
use crate::sandbox_proxy::url_listeners::{self, UrlListeners};
use crate::state::AppState;

/// The keep-alive of a client connection.
const KEEP_ALIVE: Duration = Duration::from_secs(75);

/// Runs `f` to its end in an actix system, the runtime every part of the server runs on.
pub fn block_on<F: Future>(f: F) -> F::Output {
    actix_web::rt::System::new().block_on(f)
}

/// How the app's server runs.
#[derive(Debug, Clone, Copy)]
pub struct HttpOptions {
    /// Worker threads.
    pub workers: usize,
    /// Client connections each worker holds at most (its share of the open-files budget).
    pub max_connections_per_worker: usize,
    /// How long requests in flight may take to finish once a stop is asked, in seconds
    /// (`--shutdown-timeout`).
    pub shutdown_timeout: u64,
}

/// The listeners of the servers, bound before anything starts.
pub struct Listeners {
    /// The API's address (`--bind`).
    pub main: TcpListener,
    /// The Docker bridge gateway's, when containers reach the server through it.
    pub gateway: Option<TcpListener>,
    /// `/metrics`' own ([`bind_metrics`]).
    pub metrics: Option<TcpListener>,
}

/// An I/O error with what was being done first (`"{what}: {e}"`).
fn context(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Binds `addr` (when given) for `/metrics` alone, before any server starts, and from then on
/// keeps `/metrics` off the API's address.
///
/// # Errors
/// The address cannot be bound.
pub fn bind_metrics(addr: Option<SocketAddr>, state: &AppState) -> io::Result<Option<TcpListener>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr)
        .map_err(|e| context(e, format!("binding {addr} (--metrics-listen)")))?;
    state.metrics.activity().own_listener().set();
    Ok(Some(listener))
}

/// The servers, running.
pub struct Serving {
    /// The app's server.
    server: Server,
    /// The metrics' own server, if any.
    metrics: Option<ServerHandle>,
    /// The sandboxes' own listeners, in the port form.
    url_listeners: Option<Arc<UrlListeners>>,
    /// The state every server shares.
    state: Data<AppState>,
}

impl Serving {
    /// Starts the app on `listeners` (main and gateway) with `options`, `/metrics` on its own
    /// listener when bound (one worker: scrapes are rare), and in the port form the sandboxes'
    /// listeners of `urls`, whose `url-ports` job over `store` is returned for the server's
    /// supervisor; SIGINT and SIGTERM then stop them gracefully. Must be called inside
    /// [`block_on`].
    ///
    /// # Errors
    /// A listener cannot be used, or the signals cannot be listened for.
    pub fn start(
        state: AppState,
        options: HttpOptions,
        listeners: Listeners,
        urls: url_listeners::Plan,
        store: Arc<dyn UrlPortStore>,
    ) -> io::Result<(Serving, Option<Job>)> {
        let state = Data::new(state);
        let app_state = state.clone();
        let main = listeners.main.local_addr();
        let main = main.map_err(|e| context(e, "no address bound"))?;
        let mut server = actix_web::HttpServer::new(move || crate::create_app(app_state.clone()))
            .workers(options.workers)
            .max_connections(options.max_connections_per_worker)
            .shutdown_timeout(options.shutdown_timeout)
            .keep_alive(KEEP_ALIVE)
            // actix stops at once on SIGINT; both signals stop gracefully here instead.
            .disable_signals()
            .listen(listeners.main)
            .map_err(|e| context(e, format!("listening on {main}")))?;
        if let Some(extra) = listeners.gateway {
            let addr = extra
                .local_addr()
                .map_err(|e| context(e, "no address bound"))?;
            server = server
                .listen(extra)
                .map_err(|e| context(e, format!("listening on {addr}")))?;
            tracing::info!(addr = %addr, "also listening on the Docker bridge gateway, for containers");
        }
        let server = server.run();
        stop_gracefully_on_signals(&server.handle(), state.live.clone())?;
        let metrics = match listeners.metrics {
            Some(listener) => Some(start_metrics(listener, &state)?),
            None => None,
        };
        let (url_listeners, job) = match urls.start(state.clone(), store) {
            Some((listeners, job)) => (Some(listeners), Some(job)),
            None => (None, None),
        };
        let serving = Serving {
            server,
            metrics,
            url_listeners,
            state,
        };
        Ok((serving, job))
    }

    /// The state the servers share (the sandboxes' own listeners serve it too).
    pub fn state(&self) -> &Data<AppState> {
        &self.state
    }

    /// Waits until the app's server has stopped (after a signal), then closes the websockets,
    /// stops the metrics' server (scrapes in flight finish) and closes the sandboxes' own
    /// ports. Returns how the app's server ended.
    ///
    /// # Errors
    /// The app's server failed.
    pub async fn stopped(self) -> io::Result<()> {
        let served = self.server.await;
        self.state.live.shutdown();
        if let Some(h) = self.metrics {
            h.stop(true).await;
        }
        if let Some(l) = self.url_listeners {
            l.close_all();
        }
        served
    }
}

/// Serves `/metrics` on `listener` with one worker until stopped.
fn start_metrics(listener: TcpListener, state: &Data<AppState>) -> io::Result<ServerHandle> {
    let addr = listener
        .local_addr()
        .map_err(|e| context(e, "no address bound"))?;
    let state = state.clone();
    let server = actix_web::HttpServer::new(move || metrics_app(state.clone()))
        .workers(1)
        .disable_signals()
        .listen(listener)
        .map_err(|e| context(e, format!("listening on {addr} (--metrics-listen)")))?
        .run();
    let handle = server.handle();
    actix_web::rt::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "the metrics listener failed");
        }
    });
    tracing::info!(%addr, "serving /metrics on its own listener");
    Ok(handle)
}

/// On SIGINT or SIGTERM: stop accepting connections, close the websockets at once (1001)
/// rather than hold the shutdown, let requests in flight finish (up to the shutdown timeout),
/// then stop.
fn stop_gracefully_on_signals(handle: &ServerHandle, live: Arc<Live>) -> io::Result<()> {
    use actix_web::rt::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let mut signals = signal(kind).map_err(|e| context(e, format!("listening for {name}")))?;
        let handle = handle.clone();
        let live = live.clone();
        actix_web::rt::spawn(async move {
            if signals.recv().await.is_some() {
                tracing::info!("{name} received; finishing requests in flight");
                live.shutdown();
                handle.stop(true).await;
            }
        });
    }
    Ok(())
}

//! `serve --metrics-listen ADDR`: `/metrics` on an address of its own (e.g. a private one,
//! while the API's address is public), and no longer on the API's address (404 there).

use std::net::{SocketAddr, TcpListener};

use actix_web::dev::ServerHandle;
use actix_web::web::Data;
use anyhow::{Context, Result};
use switchboard_api::AppState;
use switchboard_api::metrics::exposition::metrics_app;

/// Binds `addr` (when given) before any server starts, and from then on keeps `/metrics` off
/// the API's address.
///
/// # Errors
/// The address cannot be bound.
pub fn bind(addr: Option<SocketAddr>, state: &AppState) -> Result<Option<TcpListener>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener =
        TcpListener::bind(addr).with_context(|| format!("binding {addr} (--metrics-listen)"))?;
    state.metrics.activity().own_listener().set();
    Ok(Some(listener))
}

/// Serves `/metrics` on `listener`, when bound, with one worker (scrapes are rare), until
/// [`stop`]. Must be called inside the actix system.
///
/// # Errors
/// The listener cannot be used.
pub fn start(
    listener: Option<TcpListener>,
    state: &Data<AppState>,
) -> Result<Option<ServerHandle>> {
    let Some(listener) = listener else {
        return Ok(None);
    };
    let addr = listener.local_addr().context("no address bound")?;
    let state = state.clone();
    let server = actix_web::HttpServer::new(move || metrics_app(state.clone()))
        .workers(1)
        .disable_signals()
        .listen(listener)
        .with_context(|| format!("listening on {addr} (--metrics-listen)"))?
        .run();
    let handle = server.handle();
    actix_web::rt::spawn(async move {
        if let Err(e) = server.await {
            tracing::error!(error = %e, "the metrics listener failed");
        }
    });
    tracing::info!(%addr, "serving /metrics on its own listener");
    Ok(Some(handle))
}

/// Stops the metrics listener [`start`] started, if any (scrapes in flight finish).
pub async fn stop(handle: Option<ServerHandle>) {
    if let Some(h) = handle {
        h.stop(true).await;
    }
}

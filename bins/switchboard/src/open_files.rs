//! The open-files budget of `serve`, wired: the limit raised at start
//! ([`switchboard_runtime::open_files`]) sized against this server's pool, workers and flags,
//! and the caps it sets logged.

use switchboard_runtime::{FileBudget, OpenFilesLimit, PoolKind};

/// The budget of this server under `limit` (its pool, its workers), logged with the caps it
/// sets; `--max-subscribers` above the derived cap is lowered (and the log says so).
///
/// # Errors
/// The limit leaves too little for the server to run (the message says what to raise).
pub fn budget(
    limit: &OpenFilesLimit,
    store: &switchboard_storage::DieselStore,
    workers: usize,
    args: &crate::cli::ServeArgs,
) -> anyhow::Result<FileBudget> {
    let kind = match store.kind() {
        switchboard_storage::BackendKind::Sqlite => PoolKind::Sqlite,
        switchboard_storage::BackendKind::Postgres => PoolKind::Postgres,
    };
    let pool = u64::from(store.pool_usage().max_size);
    let mut b = FileBudget::plan(limit.effective(), limit.in_use, pool, kind, workers as u64)
        .map_err(anyhow::Error::msg)?;
    if args.urls.form()? == switchboard_api::sandbox_proxy::url_ports::UrlForm::Port {
        b = b.with_url_ports(workers as u64);
    }
    let subscribers = (args.max_subscribers as u64).min(b.subscribers);
    tracing::info!(
        limit = b.limit,
        process = b.process,
        database = b.database,
        sandboxes = b.sandboxes,
        max_connections = b.connections,
        max_connections_per_worker = b.connections_per_worker,
        max_subscribers = subscribers,
        max_relays = b.relays,
        max_proxy_sockets = b.proxy,
        max_url_port_descriptors = b.url_ports,
        "open files: caps derived from the limit"
    );
    if (args.max_subscribers as u64) > b.subscribers {
        tracing::warn!(
            requested = args.max_subscribers,
            max_subscribers = b.subscribers,
            limit = b.limit,
            "--max-subscribers lowered to what the open-files limit leaves for websockets; raise the hard limit to serve more"
        );
    }
    if args.max_sockets_per_member as u64 >= subscribers {
        tracing::warn!(
            max_sockets_per_member = args.max_sockets_per_member,
            max_subscribers = subscribers,
            "--max-sockets-per-member is not below the websocket cap: one member can take every socket"
        );
    }
    Ok(b)
}

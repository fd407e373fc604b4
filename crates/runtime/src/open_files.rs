//! The open-files limit of `serve` (issue 24 item 3): the soft `RLIMIT_NOFILE` is raised to
//! the hard limit at start (both are logged), and the socket caps are derived from what is
//! left once everything else Switchboard needs is reserved, so that websockets can never take
//! the descriptors the database, the sandboxes and `/health` need.
//!
//! The budget ([`FileBudget::plan`]), from the soft limit `L` after raising it:
//!
//! - **in use at start** (standard streams, what the process inherited) plus a fixed
//!   [`PROCESS_RESERVE`] (the async runtime's and the workers' epoll and event descriptors,
//!   the listening sockets, the secret key file, log files being trimmed, DNS, a margin) and
//!   [`PER_WORKER_RESERVE`] per HTTP worker;
//! - **the database pool** at its largest: 3 per SQLite connection (the database, its
//!   write-ahead log and its shared-memory index), 1 per PostgreSQL connection and 1 for the
//!   `LISTEN` connection;
//! - **sandboxes**: a quarter of what is left, at least [`MIN_SANDBOX_RESERVE`] and at most
//!   [`MAX_SANDBOX_RESERVE`] (the agent-server client's pooled connections, health probes,
//!   clone and setup calls, the relays of transient events, which get half of it, the Docker
//!   daemon's connections, sandbox log files);
//! - **the sandbox proxy's upstream sockets** (issue 22): a third of what is left
//!   ([`PROXY_DIVISOR`]): every socket the proxy opens to a sandbox (HTTP, in use or idle in
//!   its pool, and websockets) holds one of them, and past them it answers 503, so proxied
//!   traffic never takes a descriptor another part needs;
//! - **connections**: the rest. actix's connection cap is set to it (divided among workers),
//!   and the websocket cap (`--max-subscribers`) to it less a tenth ([`HEADROOM_DIVISOR`]; at
//!   least [`MIN_HEADROOM`]), so that with every socket open, `/health` and other requests
//!   still get a connection. A proxied exchange takes one of these (its client's) and one
//!   of the proxy's share (its sandbox's).
//!
//! - **the port form's listeners and connections** (issue 31, `--sandbox-url-form port`):
//!   a fifth of the connections ([`URL_PORT_DIVISOR`]), taken from them before the websocket
//!   cap is derived; every sandbox port's listener and every connection it accepted holds one
//!   (the binary's `url_listeners`).
//!
//! A cap the operator set lower is kept; a higher one is lowered and the log says so.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors kept for the process itself, besides what is open at start.
pub const PROCESS_RESERVE: u64 = 64;
/// Descriptors kept per HTTP worker (its event loop, timers, wake-ups).
pub const PER_WORKER_RESERVE: u64 = 8;
/// The least kept for sandboxes.
pub const MIN_SANDBOX_RESERVE: u64 = 32;
/// The most kept for sandboxes: their lasting descriptors are the agent-server client's pool
/// (at most 10 idle connections), the Docker client's and the relays (half of this share).
pub const MAX_SANDBOX_RESERVE: u64 = 4096;
/// The sandbox proxy's upstream sockets: one in this many of the descriptors left once the
/// process, the database and the sandboxes have theirs.
pub const PROXY_DIVISOR: u64 = 3;
/// The least number of upstream sockets the proxy gets.
pub const MIN_PROXY_SOCKETS: u64 = 8;
/// The port form's share of the connections: one in this many.
pub const URL_PORT_DIVISOR: u64 = 5;
/// The share of connections kept from websockets: one in this many.
pub const HEADROOM_DIVISOR: u64 = 10;
/// The least number of connections kept from websockets.
pub const MIN_HEADROOM: u64 = 16;
/// The fewest websockets a budget must allow; below it `serve` refuses to start.
pub const MIN_SUBSCRIBERS: u64 = 16;
/// actix's own per-worker connection cap (its default), never raised.
pub const ACTIX_MAX_CONNECTIONS_PER_WORKER: u64 = 25_000;

/// The limit before and after raising it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFilesLimit {
    /// The soft limit found at start (`None`: unlimited).
    pub soft_before: Option<u64>,
    /// The soft limit now.
    pub soft: Option<u64>,
    /// The hard limit.
    pub hard: Option<u64>,
    /// Descriptors open when the limit was read.
    pub in_use: u64,
}

impl OpenFilesLimit {
    /// The soft limit as a number (unlimited counts as `u64::MAX`).
    pub fn effective(&self) -> u64 {
        self.soft.unwrap_or(u64::MAX)
    }
}

/// Raises the soft open-files limit to the hard limit and reports both (a failure to raise
/// leaves the soft limit as it was, and is returned with the limits for the log).
pub fn raise_to_hard() -> (OpenFilesLimit, Option<std::io::Error>) {
    let before = getrlimit(Resource::Nofile);
    let mut error = None;
    if before.current != before.maximum {
        let raised = Rlimit {
            current: before.maximum,
            maximum: before.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            error = Some(std::io::Error::from(e));
        }
    }
    let after = getrlimit(Resource::Nofile);
    let in_use = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    (
        OpenFilesLimit {
            soft_before: before.current,
            soft: after.current,
            hard: after.maximum,
            in_use,
        },
        error,
    )
}

/// How the descriptors under the limit are shared out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileBudget {
    /// The soft limit planned for.
    pub limit: u64,
    /// Kept for the process (in use at start, the fixed and per-worker reserves).
    pub process: u64,
    /// Kept for the database pool at its largest.
    pub database: u64,
    /// Kept for sandboxes.
    pub sandboxes: u64,
    /// Client connections at once, every listener and worker together.
    pub connections: u64,
    /// actix's cap per worker: `connections` divided among the workers.
    pub connections_per_worker: u64,
    /// Websockets at once (before the operator's `--max-subscribers`).
    pub subscribers: u64,
    /// Upstream sockets of transient-event relays at once (half the sandboxes' share).
    pub relays: u64,
    /// Sockets of the sandbox proxy to sandboxes at once (`ProxyConfig::max_upstream_sockets`).
    pub proxy: u64,
    /// The sandboxes' own listeners and their connections at once (0 without the port form).
    pub url_ports: u64,
}

/// The database a budget reserves for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// SQLite: three descriptors per connection.
    Sqlite,
    /// PostgreSQL: one per connection, and the `LISTEN` connection.
    Postgres,
}

impl FileBudget {
    /// The budget under `limit` for a process with `in_use` descriptors at start, a pool of
    /// at most `pool` connections of `kind`, and `workers` HTTP workers.
    ///
    /// # Errors
    /// A message saying how far the limit falls short when it leaves fewer than
    /// [`MIN_SUBSCRIBERS`] websockets.
    pub fn plan(
        limit: u64,
        in_use: u64,
        pool: u64,
        kind: PoolKind,
        workers: u64,
    ) -> Result<FileBudget, String> {
        let workers = workers.max(1);
        let process = in_use + PROCESS_RESERVE + PER_WORKER_RESERVE * workers;
        let database = match kind {
            PoolKind::Sqlite => 3 * pool,
            PoolKind::Postgres => pool + 1,
        };
        let rest = limit.saturating_sub(process + database);
        let sandboxes = (rest / 4).clamp(MIN_SANDBOX_RESERVE, MAX_SANDBOX_RESERVE);
        let shared = rest.saturating_sub(sandboxes);
        let proxy = (shared / PROXY_DIVISOR).max(MIN_PROXY_SOCKETS);
        let connections = shared.saturating_sub(proxy);
        let headroom = (connections / HEADROOM_DIVISOR).max(MIN_HEADROOM);
        let subscribers = connections.saturating_sub(headroom);
        if subscribers < MIN_SUBSCRIBERS {
            let least = MIN_HEADROOM + MIN_SUBSCRIBERS;
            let least_proxy = (least / (PROXY_DIVISOR - 1)).max(MIN_PROXY_SOCKETS);
            let needed = process + database + MIN_SANDBOX_RESERVE + least + least_proxy;
            return Err(format!(
                "the open-files limit ({limit}) is too low: at least {needed} are needed \
                 ({process} for the process, {database} for the database pool, \
                 {MIN_SANDBOX_RESERVE} for sandboxes, {least_proxy} for the sandbox proxy, \
                 {least} for connections); raise the hard limit (ulimit -Hn, systemd \
                 LimitNOFILE=, docker --ulimit nofile=)"
            ));
        }
        Ok(FileBudget {
            limit,
            process,
            database,
            sandboxes,
            connections,
            connections_per_worker: connections
                .div_ceil(workers)
                .min(ACTIX_MAX_CONNECTIONS_PER_WORKER),
            subscribers,
            relays: sandboxes / 2,
            proxy,
            url_ports: 0,
        })
    }

    /// The same budget with the port form's share ([`URL_PORT_DIVISOR`] of the connections)
    /// taken from the connections of `workers` workers, and the websocket cap derived again;
    /// never below the least websockets and headroom a budget must leave (the share is then
    /// smaller, possibly 0: every sandbox URL stays in the path form).
    pub fn with_url_ports(mut self, workers: u64) -> FileBudget {
        let spare = self
            .connections
            .saturating_sub(MIN_HEADROOM + MIN_SUBSCRIBERS);
        let share = (self.connections / URL_PORT_DIVISOR).min(spare);
        self.connections -= share;
        self.connections_per_worker = self
            .connections
            .div_ceil(workers.max(1))
            .min(ACTIX_MAX_CONNECTIONS_PER_WORKER);
        let headroom = (self.connections / HEADROOM_DIVISOR).max(MIN_HEADROOM);
        self.subscribers = self.connections.saturating_sub(headroom);
        self.url_ports = share;
        self
    }
}

/// A limit as logged: its number, or `unlimited`.
fn shown(limit: Option<u64>) -> String {
    limit.map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
}

/// Raises the soft limit ([`raise_to_hard`]) and logs both limits.
pub fn raise_and_log() -> OpenFilesLimit {
    let (limit, error) = raise_to_hard();
    match error {
        None if limit.soft_before == limit.soft => tracing::info!(
            soft_before = %shown(limit.soft_before),
            soft = %shown(limit.soft),
            hard = %shown(limit.hard),
            in_use = limit.in_use,
            "open files: the soft limit is the hard limit already"
        ),
        None => tracing::info!(
            soft_before = %shown(limit.soft_before),
            soft = %shown(limit.soft),
            hard = %shown(limit.hard),
            in_use = limit.in_use,
            "open files: soft limit raised to the hard limit"
        ),
        Some(e) => tracing::warn!(
            soft_before = %shown(limit.soft_before),
            soft = %shown(limit.soft),
            hard = %shown(limit.hard),
            error = %e,
            "open files: the soft limit could not be raised to the hard limit"
        ),
    }
    limit
}

/// What sizes a server's budget besides its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerShape {
    /// The database pool's connections at most.
    pub pool: u64,
    /// The pool's database.
    pub pool_kind: PoolKind,
    /// HTTP workers.
    pub workers: u64,
    /// Whether sandbox URLs are in the port form (the sandboxes' own listeners get a share).
    pub url_ports: bool,
    /// Websockets the operator asked for (`--max-subscribers`).
    pub max_subscribers: u64,
    /// Websockets per member (`--max-sockets-per-member`).
    pub max_sockets_per_member: u64,
}

/// The budget of a server of `shape` under `limit` ([`FileBudget::plan`], and
/// [`FileBudget::with_url_ports`] in the port form), logged with the caps it sets; warns when
/// `--max-subscribers` is above the derived websocket cap (it is lowered to it) and when
/// `--max-sockets-per-member` is not below the websocket cap (one member could take every
/// socket).
///
/// # Errors
/// As [`FileBudget::plan`]: the limit leaves too little for the server to run (the message
/// says what to raise).
pub fn plan_and_log(limit: &OpenFilesLimit, shape: &ServerShape) -> Result<FileBudget, String> {
    let workers = shape.workers;
    let mut b = FileBudget::plan(
        limit.effective(),
        limit.in_use,
        shape.pool,
        shape.pool_kind,
        workers,
    )?;
    if shape.url_ports {
        b = b.with_url_ports(workers);
    }
    let subscribers = shape.max_subscribers.min(b.subscribers);
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
    if shape.max_subscribers > b.subscribers {
        tracing::warn!(
            requested = shape.max_subscribers,
            max_subscribers = b.subscribers,
            limit = b.limit,
            "--max-subscribers lowered to what the open-files limit leaves for websockets; raise the hard limit to serve more"
        );
    }
    if shape.max_sockets_per_member >= subscribers {
        tracing::warn!(
            max_sockets_per_member = shape.max_sockets_per_member,
            max_subscribers = subscribers,
            "--max-sockets-per-member is not below the websocket cap: one member can take every socket"
        );
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_common_soft_limit_leaves_room_for_everything() {
        let b = FileBudget::plan(1024, 10, 8, PoolKind::Sqlite, 2).unwrap();
        assert_eq!(b.process, 10 + 64 + 16);
        assert_eq!(b.database, 24);
        assert_eq!(b.sandboxes, (1024 - 90 - 24) / 4);
        let shared = 1024 - 90 - 24 - b.sandboxes;
        assert_eq!(b.proxy, shared / 3);
        assert_eq!(b.connections, shared - b.proxy);
        assert_eq!(b.subscribers, b.connections - b.connections / 10);
        assert_eq!(b.connections_per_worker, b.connections.div_ceil(2));
        // Everything adds up to the limit at most.
        assert!(b.process + b.database + b.sandboxes + b.proxy + b.connections <= 1024);
        assert!(b.subscribers + MIN_HEADROOM <= b.connections);
    }

    #[test]
    fn the_port_form_takes_a_fifth_of_the_connections() {
        let b = FileBudget::plan(1024, 10, 8, PoolKind::Sqlite, 2).unwrap();
        let p = b.with_url_ports(2);
        assert_eq!(p.url_ports, b.connections / URL_PORT_DIVISOR);
        assert_eq!(p.connections + p.url_ports, b.connections);
        assert_eq!(p.connections_per_worker, p.connections.div_ceil(2));
        assert!(p.subscribers + MIN_HEADROOM <= p.connections);
        // A budget at its least keeps its websockets; the share shrinks instead.
        let least = FileBudget::plan(300, 10, 8, PoolKind::Sqlite, 2).unwrap();
        let p = least.with_url_ports(2);
        assert!(p.subscribers >= MIN_SUBSCRIBERS, "{p:?}");
        assert_eq!(p.connections + p.url_ports, least.connections);
    }

    #[test]
    fn a_high_limit_keeps_actix_default_per_worker() {
        let b = FileBudget::plan(1 << 20, 12, 16, PoolKind::Postgres, 2).unwrap();
        assert_eq!(b.database, 17);
        assert_eq!(b.sandboxes, MAX_SANDBOX_RESERVE);
        assert_eq!(b.relays, MAX_SANDBOX_RESERVE / 2);
        assert_eq!(b.connections_per_worker, ACTIX_MAX_CONNECTIONS_PER_WORKER);
        assert!(b.subscribers > 20_000);
    }

    #[test]
    fn a_limit_too_low_is_refused_with_what_is_needed() {
        let e = FileBudget::plan(128, 10, 8, PoolKind::Sqlite, 2).unwrap_err();
        assert!(e.contains("open-files limit (128) is too low"), "{e}");
        assert!(e.contains("ulimit -Hn"), "{e}");
        assert!(FileBudget::plan(300, 10, 8, PoolKind::Sqlite, 2).is_ok());
    }
}

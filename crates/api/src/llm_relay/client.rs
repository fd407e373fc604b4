//! The pass-through's HTTP client: one per process, pooled, TLS through the system's OpenSSL,
//! never following a redirect (a redirect could carry the key to another host). Host names
//! only sandboxes resolve (`host.docker.internal`, which Docker maps to its bridge gateway in
//! every container) resolve here as the sandboxes resolve them ([`alias_host`]), so a base URL
//! written for the sandboxes still works once the pass-through makes the call.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// Host names resolved by the client itself, set by the binary before the first request.
static ALIASES: Mutex<Vec<(String, IpAddr)>> = Mutex::new(Vec::new());

/// Resolves `name` to `ip` in the pass-through's requests (e.g. `host.docker.internal` to the
/// Docker bridge's gateway). Takes effect only before the first request (the client is made
/// once); answers whether it did.
pub fn alias_host(name: &str, ip: IpAddr) -> bool {
    if CLIENT.get().is_some() {
        return false;
    }
    ALIASES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((name.to_owned(), ip));
    true
}

static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();

/// How long connecting to an upstream may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest wait for the upstream's answer or its next bytes (a model thinking before it
/// streams its first token can take minutes).
pub const READ_TIMEOUT: Duration = Duration::from_secs(600);

/// The process's client, made on first use.
///
/// # Panics
/// When the TLS backend cannot be initialized (nothing sensible can continue).
pub fn client() -> &'static reqwest::Client {
    CLIENT.get_or_init(|| {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90));
        for (name, ip) in ALIASES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            // The port is the URL's (reqwest ignores this one).
            builder = builder.resolve(name, SocketAddr::new(*ip, 0));
        }
        builder.build().expect("the TLS backend initializes")
    })
}

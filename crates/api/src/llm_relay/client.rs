//! The pass-through's HTTP client: one per process, pooled, TLS through the system's OpenSSL,
//! never following a redirect (a redirect could carry the key to another host).

use std::sync::OnceLock;
use std::time::Duration;

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
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90))
            .build()
            .expect("the TLS backend initializes")
    })
}

//! The proxy's configuration and its upstream HTTP client ([`Proxy`]), as `switchboard serve`
//! builds them from its flags (API.md, Sandbox proxy).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::UnsyncBoxBody;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::hosts::HostPattern;
use super::public::PublicUrls;
use super::upstream::{CountedConnector, UpstreamSockets};
use super::url_ports::{BoundPorts, UrlForm};
use crate::extract::DEFAULT_BODY_LIMIT;
use crate::member_sockets::MemberSockets;

/// How the proxy behaves (`switchboard serve` flags; API.md, Sandbox proxy).
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Switchboard's URL as clients reach it (`--public-url`), without a trailing `/`:
    /// `exposed_urls`, `conversation_url` and `agent_server_url` point under it. `None`
    /// shows the sandboxes' own URLs (the app as tests build it in-process).
    pub public_url: Option<String>,
    /// Host-based routing (`--sandbox-host-pattern`): services at the root of their own host
    /// under the public URL's scheme and port, for clients that need a bare host.
    pub host_pattern: Option<HostPattern>,
    /// The form of the sandbox URLs shown (`--sandbox-url-form`; [`super::url_ports`]).
    pub url_form: UrlForm,
    /// The sandboxes' ports this replica listens on (shared with the binary's `url-ports`
    /// job, which binds and closes them).
    pub bound_ports: BoundPorts,
    /// The largest request body forwarded, bytes (as the API's routes: 1 MiB); a larger
    /// declared one is 413 before the sandbox is called, and one that grows past it is cut.
    pub max_body: usize,
    /// Upstream connect timeout.
    pub connect_timeout: Duration,
    /// The longest an upstream read may wait (headers or the next body chunk) before 504 (or
    /// the end of the answer); long enough for the agent server's bash calls.
    pub read_timeout: Duration,
    /// Frames from the sandbox queued for one websocket client; a client that far behind is
    /// closed (1008) once it makes no room for [`Self::ws_stall`], so it never holds up the
    /// sandbox or the other clients for longer.
    pub ws_queue: usize,
    /// How long a full queue ([`Self::ws_queue`]) waits for its client to take a frame before
    /// the client is closed as too slow (default 2 s): a reading client that is only behind a
    /// burst for a moment (a busy host) keeps its socket.
    pub ws_stall: Duration,
    /// How long a websocket client without credentials has to send its first-frame auth.
    pub ws_auth_timeout: Duration,
    /// The largest websocket message relayed either way, bytes.
    pub ws_max_message: usize,
    /// The most sockets to sandboxes open at once (HTTP, in use or idle in the pool, and
    /// websockets): the share of the open-files budget `serve` gives the proxy. Past it the
    /// proxy answers 503 with `Retry-After` ([`super::upstream`]).
    pub max_upstream_sockets: usize,
    /// The most proxied websockets one member (user) holds at once, whatever keys they use
    /// (`--max-sockets-per-member`, issue 33); one more is 503 with `Retry-After`.
    pub max_sockets_per_member: usize,
    /// The most proxied websockets the members of one organization (the sandbox's) hold
    /// together (`--max-sockets-per-org`, issue 33); `None`: no limit but the members'.
    pub max_sockets_per_org: Option<usize>,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            public_url: None,
            host_pattern: None,
            url_form: UrlForm::default(),
            bound_ports: BoundPorts::default(),
            max_body: DEFAULT_BODY_LIMIT,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(600),
            ws_queue: 1024,
            ws_stall: Duration::from_secs(2),
            ws_auth_timeout: Duration::from_secs(10),
            ws_max_message: 16 << 20,
            max_upstream_sockets: DEFAULT_MAX_UPSTREAM_SOCKETS,
            max_sockets_per_member: crate::live::DEFAULT_MAX_SOCKETS_PER_MEMBER,
            max_sockets_per_org: None,
        }
    }
}

/// [`ProxyConfig::max_upstream_sockets`] when nothing derives it from the open-files limit
/// (the app as tests build it in-process).
pub const DEFAULT_MAX_UPSTREAM_SOCKETS: usize = 1024;
/// Idle connections the pool keeps per sandbox service, at most.
const IDLE_PER_SERVICE: usize = 32;

/// A request body sent upstream.
pub(super) type UpstreamBody = UnsyncBoxBody<bytes::Bytes, std::io::Error>;

/// The proxy's configuration and its upstream HTTP client (a connection pool shared by every
/// worker, its sockets counted in [`UpstreamSockets`]).
pub struct Proxy {
    pub(super) config: ProxyConfig,
    pub(super) client: Client<CountedConnector, UpstreamBody>,
    pub(super) sockets: UpstreamSockets,
    pub(super) members: Arc<MemberSockets>,
}

impl Default for Proxy {
    fn default() -> Self {
        Proxy::new(ProxyConfig::default())
    }
}

impl Proxy {
    /// A proxy under `config`.
    pub fn new(mut config: ProxyConfig) -> Self {
        config.public_url = config
            .public_url
            .map(|u| u.trim_end_matches('/').to_owned());
        let sockets = UpstreamSockets::new(config.max_upstream_sockets);
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(config.connect_timeout));
        http.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            // An idle pooled connection is dropped before the read timeout could matter, and
            // gives its socket back (the timer closes idle connections as they expire).
            .pool_idle_timeout(Duration::from_secs(30).min(config.read_timeout / 2))
            .pool_max_idle_per_host(IDLE_PER_SERVICE)
            .pool_timer(TokioTimer::new())
            .build(CountedConnector::new(http, sockets.clone()));
        let members = MemberSockets::new(config.max_sockets_per_member, config.max_sockets_per_org);
        Proxy {
            config,
            client,
            sockets,
            members,
        }
    }

    /// The proxy's upstream sockets (their count and permits).
    pub fn sockets(&self) -> &UpstreamSockets {
        &self.sockets
    }

    /// The proxied websockets each member and organization holds
    /// ([`ProxyConfig::max_sockets_per_member`], [`ProxyConfig::max_sockets_per_org`]).
    pub fn member_sockets(&self) -> &Arc<MemberSockets> {
        &self.members
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// The public URLs the API shows.
    pub fn public(&self) -> PublicUrls<'_> {
        PublicUrls::new(self.config.public_url.as_deref())
            .with_hosts(self.config.host_pattern.as_ref())
            .with_form(self.config.url_form, Some(&self.config.bound_ports))
    }
}

//! What a proxied request addresses ([`Route`]): a sandbox, one of its services and the rest
//! of the path, under [`PREFIX`].

use switchboard_domain::{SandboxId, parse_uuid};

/// The route prefix of proxied traffic.
pub const PREFIX: &str = "/sandboxes";
/// The query parameter carrying a session key (the agent server's deprecated form).
pub const SESSION_KEY_QUERY: &str = "session_api_key";

/// One proxied request, as routed: the sandbox, the service and the raw rest of the path
/// (percent-encoding kept, with its leading `/`; empty for the service's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The sandbox, or `None` when the path segment is no UUID (answered as unknown: 404).
    pub sandbox_id: Option<SandboxId>,
    /// The service name as written.
    pub service: String,
    /// The rest of the path, e.g. `/api/conversations`, forwarded as is.
    pub tail: String,
}

impl Route {
    /// Reads `/sandboxes/{id}/{service}{tail}` from a raw request path.
    pub fn parse(path: &str) -> Option<Route> {
        let rest = path.strip_prefix(PREFIX)?.strip_prefix('/')?;
        let (id, rest) = rest.split_once('/')?;
        let (service, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if service.is_empty() {
            return None;
        }
        Some(Route {
            sandbox_id: parse_uuid(id).map(SandboxId),
            service: service.to_owned(),
            tail: tail.to_owned(),
        })
    }
}

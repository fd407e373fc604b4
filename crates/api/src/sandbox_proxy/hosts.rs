//! Host-based routing of the sandbox proxy (`--sandbox-host-pattern`, e.g.
//! `{id}-{service}.sandboxes.example.com`; API.md, Sandbox proxy): for clients that need a
//! sandbox's service at the root of a host. The SDK's `OpenHandsCloudWorkspace` is one: it
//! asserts that its HTTP client's base URL equals the agent server URL it was given, which
//! httpx breaks for any URL with a path (it adds a trailing `/`). A request whose `Host`
//! matches the pattern goes to that sandbox's service with its whole path; the answer is
//! the same as through `/sandboxes/{id}/{service}/…`. The DNS needs a wildcard record
//! (`*.sandboxes.example.com`) pointing at Switchboard.

use regex::Regex;
use switchboard_domain::{SandboxId, parse_uuid};

use super::route::Route;

/// A host pattern: literal text with `{id}` (the sandbox id, dashed) and `{service}` (the
/// service's name in lowercase with `-`, e.g. `agent-server`), each once.
#[derive(Debug, Clone)]
pub struct HostPattern {
    pattern: String,
    matcher: Regex,
}

impl HostPattern {
    /// Parses `pattern` (a host name, no scheme or port).
    ///
    /// # Errors
    /// A message when `{id}` or `{service}` is missing or repeated, or the pattern has a
    /// scheme, port or path.
    pub fn parse(pattern: &str) -> Result<HostPattern, String> {
        let pattern = pattern.trim().to_ascii_lowercase();
        for part in ["{id}", "{service}"] {
            if pattern.matches(part).count() != 1 {
                return Err(format!(
                    "the host pattern needs {part} exactly once: {pattern}"
                ));
            }
        }
        if pattern.contains(['/', ':']) {
            return Err(format!("the host pattern is a host name only: {pattern}"));
        }
        let mut re = String::from("^");
        let mut rest = pattern.as_str();
        while let Some(i) = rest.find('{') {
            re.push_str(&regex::escape(&rest[..i]));
            let tail = &rest[i..];
            if let Some(t) = tail.strip_prefix("{id}") {
                re.push_str(
                    "(?P<id>[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12})",
                );
                rest = t;
            } else if let Some(t) = tail.strip_prefix("{service}") {
                re.push_str("(?P<service>[a-z0-9][a-z0-9-]*)");
                rest = t;
            } else {
                return Err(format!(
                    "unknown placeholder in the host pattern: {pattern}"
                ));
            }
        }
        re.push_str(&regex::escape(rest));
        re.push('$');
        let matcher = Regex::new(&re).map_err(|e| e.to_string())?;
        Ok(HostPattern { pattern, matcher })
    }

    /// The host of `service` of `sandbox`.
    pub fn host(&self, sandbox: SandboxId, service: &str) -> String {
        self.pattern
            .replace("{id}", &sandbox.to_string())
            .replace("{service}", &service.to_ascii_lowercase().replace('_', "-"))
    }

    /// The sandbox and service a `Host` value (port ignored) names, if it matches.
    pub fn route(&self, host: &str, path: &str) -> Option<Route> {
        let name = host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        let name = name.to_ascii_lowercase();
        let caps = self.matcher.captures(&name)?;
        Some(Route {
            sandbox_id: parse_uuid(&caps["id"]).map(SandboxId),
            service: caps["service"].to_owned(),
            tail: path.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_round_trip() {
        let p = HostPattern::parse("{id}-{service}.sandboxes.example.com").unwrap();
        let id: SandboxId = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b".parse().unwrap();
        let host = p.host(id, "AGENT_SERVER");
        assert_eq!(
            host,
            "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b-agent-server.sandboxes.example.com"
        );
        let r = p.route(&format!("{host}:3000"), "/api/x").unwrap();
        assert_eq!(
            (r.sandbox_id, r.service.as_str(), r.tail.as_str()),
            (Some(id), "agent-server", "/api/x")
        );
        assert!(p.route("sandboxes.example.com", "/").is_none());
        assert!(
            p.route("x-agent-server.sandboxes.example.com", "/")
                .is_none()
        );
        assert!(HostPattern::parse("{id}.example.com").is_err());
        assert!(HostPattern::parse("http://{id}-{service}.example.com").is_err());
    }
}

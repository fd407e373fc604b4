//! The sandbox URL forms (issue 31; API.md, Sandbox proxy, "Sandbox URLs"): how the URLs the
//! API shows reach a sandbox's services through Switchboard.
//!
//! - The port form, [`UrlForm::Port`] (the default without `--sandbox-host-pattern`): the agent server at
//!   `<scheme>://<public host>:<port>`, no path; the port is the sandbox's own
//!   (`--sandbox-url-ports`), on which Switchboard listens for that sandbox alone
//!   ([`PortConnection`] marks its connections). The other services keep the path form.
//! - The host form, [`UrlForm::Host`] (implied by `--sandbox-host-pattern`): each service at the root of a
//!   host of its own ([`super::hosts`]).
//! - The path form, [`UrlForm::Path`]: `<public-url>/sandboxes/{id}/{service}`.
//!
//! The path form is always served too, whatever the form shown.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use switchboard_domain::SandboxId;
use switchboard_domain::sandboxes::url_ports::UrlPortRange;

/// Where the system's ephemeral port range is read.
const EPHEMERAL_RANGE_FILE: &str = "/proc/sys/net/ipv4/ip_local_port_range";

/// Which form the API's sandbox URLs take (`--sandbox-url-form`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UrlForm {
    /// The agent server on a port of the sandbox's own.
    #[default]
    Port,
    /// Every service on a host of its own (`--sandbox-host-pattern`).
    Host,
    /// Every service under `/sandboxes/{id}/{service}`.
    Path,
}

impl UrlForm {
    /// The form shown: `asked` (`--sandbox-url-form`), else [`UrlForm::Host`] when there is a
    /// host pattern (`--sandbox-host-pattern`), else [`UrlForm::Port`].
    ///
    /// # Errors
    /// The host form asked for without a host pattern.
    pub fn chosen(asked: Option<UrlForm>, host_pattern: bool) -> Result<UrlForm, String> {
        match (asked, host_pattern) {
            (Some(UrlForm::Host), false) => {
                Err("--sandbox-url-form host needs --sandbox-host-pattern".to_owned())
            }
            (Some(form), _) => Ok(form),
            (None, true) => Ok(UrlForm::Host),
            (None, false) => Ok(UrlForm::Port),
        }
    }
}

/// `range` (`--sandbox-url-ports`) when `form` is the port form, checked against the system's
/// ephemeral port range (read from `/proc`, when it can be) and the ports Switchboard listens
/// on (those of `listening`); `None` in the other forms.
///
/// # Errors
/// The range overlaps either (the message says which and what to choose).
pub fn port_range(
    form: UrlForm,
    range: UrlPortRange,
    listening: &[SocketAddr],
) -> Result<Option<UrlPortRange>, String> {
    if form != UrlForm::Port {
        return Ok(None);
    }
    let ports: Vec<u16> = listening.iter().map(SocketAddr::port).collect();
    range.check(ephemeral_range(), &ports)?;
    Ok(Some(range))
}

/// The system's ephemeral port range, when it can be read.
fn ephemeral_range() -> Option<UrlPortRange> {
    let text = std::fs::read_to_string(EPHEMERAL_RANGE_FILE).ok()?;
    let mut parts = text.split_whitespace().map(str::parse::<u16>);
    let (Some(Ok(first)), Some(Ok(last))) = (parts.next(), parts.next()) else {
        return None;
    };
    Some(UrlPortRange { first, last })
}

/// The sandboxes' ports this replica listens on (the binary's `url-ports` job keeps them):
/// a sandbox's URL takes the port form only while its port is bound here, so a URL shown is
/// always one this replica serves (otherwise the path form).
#[derive(Debug, Clone, Default)]
pub struct BoundPorts(Arc<RwLock<HashMap<SandboxId, u16>>>);

impl BoundPorts {
    /// The port bound for `sandbox`, if any.
    pub fn port(&self, sandbox: SandboxId) -> Option<u16> {
        self.0.read().map_or(None, |m| m.get(&sandbox).copied())
    }

    /// Records `port` as bound for `sandbox`.
    pub fn insert(&self, sandbox: SandboxId, port: u16) {
        if let Ok(mut m) = self.0.write() {
            m.insert(sandbox, port);
        }
    }

    /// Forgets `sandbox`'s port (its listener was closed).
    pub fn remove(&self, sandbox: SandboxId) {
        if let Ok(mut m) = self.0.write() {
            m.remove(&sandbox);
        }
    }

    /// How many ports are bound.
    pub fn len(&self) -> usize {
        self.0.read().map_or(0, |m| m.len())
    }

    /// Whether no port is bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Connection data of a connection accepted on a sandbox's own port: every request on it
/// goes to that sandbox's agent server with its whole path (never to Switchboard's API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConnection {
    /// The sandbox whose port accepted the connection.
    pub sandbox: SandboxId,
}

/// The scheme and host (without port) of an absolute URL: `https://sb.example.com:8443/x` →
/// (`https`, `sb.example.com`); an IPv6 literal keeps its brackets.
pub fn scheme_and_host(url: &str) -> (&str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => h,
        Some((_, "")) => authority.trim_end_matches(':'),
        _ => authority,
    };
    (scheme, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_public_urls() {
        assert_eq!(
            scheme_and_host("https://sb.example.com:8443/x"),
            ("https", "sb.example.com")
        );
        assert_eq!(scheme_and_host("http://127.0.0.1"), ("http", "127.0.0.1"));
        assert_eq!(scheme_and_host("http://[::1]:3000"), ("http", "[::1]"));
        assert_eq!(scheme_and_host("http://[::1]"), ("http", "[::1]"));
    }

    #[test]
    fn the_form_shown() {
        let chosen = UrlForm::chosen;
        assert_eq!(chosen(None, false), Ok(UrlForm::Port));
        assert_eq!(chosen(None, true), Ok(UrlForm::Host));
        assert_eq!(chosen(Some(UrlForm::Path), true), Ok(UrlForm::Path));
        assert_eq!(chosen(Some(UrlForm::Port), true), Ok(UrlForm::Port));
        assert_eq!(chosen(Some(UrlForm::Host), true), Ok(UrlForm::Host));
        assert!(chosen(Some(UrlForm::Host), false).is_err());
    }

    #[test]
    fn bound_ports_are_per_sandbox() {
        let b = BoundPorts::default();
        let id: SandboxId = "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b".parse().unwrap();
        assert_eq!(b.port(id), None);
        b.insert(id, 20001);
        assert_eq!((b.port(id), b.len()), (Some(20001), 1));
        b.remove(id);
        assert!(b.is_empty());
    }
}

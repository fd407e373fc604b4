//! The URLs clients are shown for a sandbox's services (API.md, Sandbox proxy, "Sandbox
//! URLs"): with a public URL configured, the form chosen ([`UrlForm`]: the agent server on the
//! sandbox's own port, a host of its own, or `<public-url>/sandboxes/{sandbox_id}/{service}`)
//! plus whatever path the sandbox's own URL had after its address; without one, the sandbox's
//! own URL. Only the presentation changes: the store and the domain keep the URLs Switchboard
//! reaches.

use switchboard_domain::SandboxId;

use super::url_ports::{BoundPorts, UrlForm, scheme_and_host};

/// The service name of the agent server in proxied paths (OpenHands' `AGENT_SERVER`,
/// lowercased).
pub const AGENT_SERVER_SERVICE: &str = "agent_server";

/// Writes public URLs under an optional public base.
#[derive(Debug, Clone, Copy)]
pub struct PublicUrls<'a> {
    base: Option<&'a str>,
    hosts: Option<&'a super::hosts::HostPattern>,
    ports: Option<&'a BoundPorts>,
    form: UrlForm,
}

impl<'a> PublicUrls<'a> {
    /// Under `base` (no trailing `/`), in the path form; `None` leaves URLs as they are.
    pub fn new(base: Option<&'a str>) -> Self {
        PublicUrls {
            base,
            hosts: None,
            ports: None,
            form: UrlForm::Path,
        }
    }

    /// With host-based routing: `<scheme>://<host from the pattern>[:<port>]`, the scheme and
    /// port of the public URL (the host form, unless [`PublicUrls::with_form`] follows).
    pub fn with_hosts(mut self, hosts: Option<&'a super::hosts::HostPattern>) -> Self {
        self.hosts = hosts;
        if hosts.is_some() {
            self.form = UrlForm::Host;
        }
        self
    }

    /// In `form`, the sandboxes' ports as bound by this replica (the port form:
    /// `<scheme>://<public host>:<port>` for the agent server of a sandbox whose port is
    /// bound; the host form where a pattern is set, else the path form, for the rest).
    pub fn with_form(mut self, form: UrlForm, ports: Option<&'a BoundPorts>) -> Self {
        self.form = form;
        self.ports = ports;
        self
    }

    /// The public form of `url`, a URL of service `service` (as OpenHands names it, e.g.
    /// `AGENT_SERVER`) of sandbox `sandbox`: the proxy's base for it followed by `url`'s path
    /// and query (`http://127.0.0.1:4242/api/conversations/ab` →
    /// `<base>/sandboxes/<id>/agent_server/api/conversations/ab`).
    pub fn rewrite(&self, url: &str, sandbox: SandboxId, service: &str) -> String {
        let Some(base) = self.base else {
            return url.to_owned();
        };
        let rest = path_and_query(url);
        let rest = if rest == "/" { "" } else { rest };
        let agent = service
            .replace('-', "_")
            .eq_ignore_ascii_case(AGENT_SERVER_SERVICE);
        let port = self.ports.and_then(|p| p.port(sandbox));
        if let (UrlForm::Port, true, Some(port)) = (self.form, agent, port) {
            let (scheme, host) = scheme_and_host(base);
            return format!("{scheme}://{host}:{port}{rest}");
        }
        if let (Some(hosts), UrlForm::Host | UrlForm::Port) = (self.hosts, self.form) {
            let (scheme, authority) = base.split_once("://").unwrap_or(("http", base));
            let authority = authority.split('/').next().unwrap_or(authority);
            let port = authority
                .rsplit_once(':')
                .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
                .map_or(String::new(), |(_, p)| format!(":{p}"));
            return format!("{scheme}://{}{port}{rest}", hosts.host(sandbox, service));
        }
        format!(
            "{base}{}/{sandbox}/{}{rest}",
            super::route::PREFIX,
            service.to_ascii_lowercase()
        )
    }

    /// As [`PublicUrls::rewrite`] for the agent server.
    pub fn agent_server(&self, url: &str, sandbox: SandboxId) -> String {
        self.rewrite(url, sandbox, AGENT_SERVER_SERVICE)
    }
}

/// The path and query of an absolute URL (`scheme://authority/path?query`): from the first
/// `/` after the authority; empty when there is none.
fn path_and_query(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?']) {
        Some(i) => &url[after_scheme + i..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_rewritten_under_the_base() {
        let id: SandboxId = "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b".parse().unwrap();
        let p = PublicUrls::new(Some("https://sb.example.com"));
        assert_eq!(
            p.rewrite("http://127.0.0.1:4242", id, "AGENT_SERVER"),
            "https://sb.example.com/sandboxes/0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b/agent_server"
        );
        assert_eq!(
            p.agent_server("http://127.0.0.1:4242/api/conversations/ab?x=1", id),
            "https://sb.example.com/sandboxes/0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b/agent_server/api/conversations/ab?x=1"
        );
        assert_eq!(
            PublicUrls::new(None).agent_server("http://127.0.0.1:1", id),
            "http://127.0.0.1:1"
        );
        let hosts = super::super::hosts::HostPattern::parse("{id}-{service}.sb.test").unwrap();
        assert_eq!(
            PublicUrls::new(Some("http://10.0.0.1:3000"))
                .with_hosts(Some(&hosts))
                .agent_server("http://127.0.0.1:4242/api/x", id),
            "http://0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b-agent-server.sb.test:3000/api/x"
        );
    }

    #[test]
    fn the_port_form_needs_a_bound_port() {
        let id: SandboxId = "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b".parse().unwrap();
        let bound = BoundPorts::default();
        let p = PublicUrls::new(Some("https://sb.example.com:8443"))
            .with_form(UrlForm::Port, Some(&bound));
        let path = "https://sb.example.com:8443/sandboxes/0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
        assert_eq!(
            p.agent_server("http://127.0.0.1:4242", id),
            format!("{path}/agent_server")
        );
        bound.insert(id, 20007);
        assert_eq!(
            p.agent_server("http://127.0.0.1:4242", id),
            "https://sb.example.com:20007"
        );
        assert_eq!(
            p.agent_server("http://127.0.0.1:4242/api/conversations/ab", id),
            "https://sb.example.com:20007/api/conversations/ab"
        );
        assert_eq!(
            p.rewrite("http://127.0.0.1:4300", id, "WORKER_1"),
            format!("{path}/worker_1")
        );
        let p = PublicUrls::new(Some("https://sb.example.com:8443"))
            .with_form(UrlForm::Path, Some(&bound));
        assert_eq!(
            p.agent_server("http://127.0.0.1:4242", id),
            format!("{path}/agent_server")
        );
    }
}

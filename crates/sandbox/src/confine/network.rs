//! A network of its own for each confined process sandbox (issue 33, "a network namespace per
//! process sandbox"): `bwrap --unshare-net` gives the sandbox an empty network namespace (its
//! own loopback only), and `pasta` (Debian package `passt`), a user-mode network stack run by
//! Switchboard outside the sandbox, connects it:
//!
//! - **in**: each port Switchboard gave the sandbox (its agent server's, its exposed
//!   services') is bound by `pasta` on the host's `127.0.0.1` and spliced to the same port on
//!   the sandbox's own loopback, where the agent server listens. No sandbox can bind a host
//!   port (its listeners are in its own namespace), so none can take another's;
//! - **out to the host**: only the host loopback ports named here ([`Pasta::host_ports`]) and
//!   the port of the sandbox's webhook URL when that URL is on loopback, spliced from the
//!   sandbox's loopback to the host's. Every other host loopback service (PostgreSQL, Redis,
//!   other sandboxes' agent servers) is out of reach: inside, `127.0.0.1` is the sandbox's own;
//! - **out to the network**: through `pasta`'s sockets, as connections of Switchboard's host.
//!   The namespace's interface has the host's own address (`pasta` copies it), so the host's
//!   address reaches the sandbox itself, not the host's services; the gateway is not mapped to
//!   the host (`--no-map-gw`).
//!
//! `pasta` is started once the sandbox's namespaces exist, as a daemon; its pid and start
//! time are kept in the sandbox's handle, and it is ended with the sandbox. Before it connects
//! the namespace, the sandbox's egress rules are loaded into it ([`super::egress`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::egress::{Destination, Egress};
use super::{Unconfinable, stderr_of, url_host_port, wait_within, which};

/// How long `pasta` may take to join a sandbox's namespace and bind its ports.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// The user-mode network stack connecting each confined sandbox's network namespace
/// ([`Pasta::detect`]); `None` in [`super::Bwrap::network`]: sandboxes share the host's
/// network (`--sandbox-network host`).
#[derive(Debug, Clone)]
pub struct Pasta {
    /// The `pasta` program.
    pub program: PathBuf,
    /// Host loopback ports every sandbox may reach at `127.0.0.1:<port>` from inside
    /// (`--sandbox-host-port`: an LLM gateway or a git server on the host's loopback),
    /// besides its webhook URL's.
    pub host_ports: Vec<u16>,
    /// The egress rules loaded into each sandbox's namespace before `pasta` connects it.
    pub egress: Egress,
}

/// What the operator says of sandboxes' networks: the host loopback ports they may reach
/// (`--sandbox-host-port`) and the ranges they may or may not reach beyond
/// (`--sandbox-egress-allow`, `--sandbox-egress-deny`; [`super::egress`]).
#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    /// `--sandbox-host-port`.
    pub host_ports: Vec<u16>,
    /// `--sandbox-egress-allow`.
    pub egress_allow: Vec<Destination>,
    /// `--sandbox-egress-deny`.
    pub egress_deny: Vec<Destination>,
}

/// How `pasta` is to connect one sandbox: the namespaces' owner process and the ports.
#[derive(Debug, Clone)]
pub struct Attach<'a> {
    /// A process inside the sandbox's network (and, unprivileged, user) namespace, by host
    /// pid: the namespace's init.
    pub init_pid: u32,
    /// Whether the sandbox has a user namespace of its own (Switchboard is not root):
    /// `pasta` joins it to enter the network namespace.
    pub user_namespace: bool,
    /// Ports bound on the host's `127.0.0.1` and spliced to the same port inside.
    pub inbound: &'a [u16],
    /// The sandbox's webhook URL: its port is reachable from inside when its host is loopback.
    pub webhook_url: &'a str,
    /// The spec's own egress lists, added to the operator's.
    pub egress: &'a super::egress::EgressLists,
    /// Where `pasta` writes its pid (a file only Switchboard can reach; removed after).
    pub pid_file: &'a Path,
}

impl Pasta {
    /// Finds `pasta` on `PATH`, and what loads the egress rules ([`Egress::detect`]).
    ///
    /// # Errors
    /// [`Unconfinable`] when one is not installed, saying what to do.
    pub fn detect(policy: NetworkPolicy) -> Result<Self, Unconfinable> {
        let program = which("pasta").ok_or_else(|| {
            Unconfinable(
                "`pasta` is not installed (Debian package passt); each confined process \
                 sandbox gets a network of its own through it. Install it, or pass \
                 --sandbox-network host (sandboxes then reach every service on the host's \
                 loopback, such as its database, and can bind ports other sandboxes are given)"
                    .into(),
            )
        })?;
        Ok(Pasta {
            program,
            host_ports: policy.host_ports,
            egress: Egress::detect(policy.egress_allow, policy.egress_deny)?,
        })
    }

    /// The host loopback ports a sandbox whose webhook URL is `webhook_url` may reach:
    /// [`Pasta::host_ports`] and the webhook URL's port when its host is loopback, sorted.
    pub fn outbound(&self, webhook_url: &str) -> Vec<u16> {
        let mut ports = self.host_ports.clone();
        ports.extend(loopback_url_port(webhook_url));
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The arguments of `pasta` for `attach`. The network namespace is its standard input,
    /// opened by Switchboard (`/proc/self/fd/0`): `pasta` drops its capabilities before it
    /// opens the namespace, and may not open another process's `ns/net` while that process
    /// is not dumpable (as `bwrap`'s are at moments of their set-up).
    fn args(&self, attach: &Attach<'_>) -> Vec<String> {
        let mut args = vec!["--quiet".to_owned()];
        if rustix::process::geteuid().is_root() {
            // As root it would become `nobody`.
            args.extend(["--runas".into(), "0".into()]);
        }
        if attach.user_namespace {
            args.extend([
                "--userns".into(),
                format!("/proc/{}/ns/user", attach.init_pid),
            ]);
        }
        args.extend(["--netns".into(), "/proc/self/fd/0".into()]);
        args.extend(["--config-net".into(), "--no-map-gw".into()]);
        for port in attach.inbound {
            args.extend(["-t".into(), format!("127.0.0.1/{port}")]);
        }
        if attach.inbound.is_empty() {
            args.extend(["-t".into(), "none".into()]);
        }
        let outbound = self.outbound(attach.webhook_url);
        let joined: Vec<String> = outbound.iter().map(u16::to_string).collect();
        let out = if joined.is_empty() {
            "none".to_owned()
        } else {
            joined.join(",")
        };
        args.extend(["-T".into(), out]);
        // No UDP either way: DNS goes to the resolver through the tap, as other traffic.
        args.extend(["-u".into(), "none".into(), "-U".into(), "none".into()]);
        args.extend(["--pid".into(), attach.pid_file.display().to_string()]);
        args
    }

    /// Loads the sandbox's egress rules, then starts `pasta` for one sandbox and waits until
    /// it has joined the namespace, configured
    /// its interface and bound the inbound ports (its launcher exits then, leaving the daemon).
    /// Returns the daemon's pid.
    ///
    /// # Errors
    /// What `pasta` said when it failed (a port already bound on the host, a namespace it
    /// could not join), or that it did not finish within 10 s.
    pub fn attach(&self, attach: &Attach<'_>) -> Result<u32, String> {
        // Before any packet can leave: the namespace has no way out until pasta connects it.
        self.egress
            .apply(attach.init_pid, attach.webhook_url, attach.egress)?;
        let _ = std::fs::remove_file(attach.pid_file);
        let ns = format!("/proc/{}/ns/net", attach.init_pid);
        let netns = std::fs::File::open(&ns).map_err(|e| format!("cannot open {ns}: {e}"))?;
        let mut child = Command::new(&self.program)
            .args(self.args(attach))
            .env_clear()
            .stdin(netns)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let Some(status) = wait_within(&mut child, ATTACH_TIMEOUT) else {
            return Err(format!(
                "pasta did not connect the sandbox's network within {ATTACH_TIMEOUT:?}"
            ));
        };
        let pid = std::fs::read_to_string(attach.pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        let _ = std::fs::remove_file(attach.pid_file);
        match pid {
            Some(pid) if status.success() => Ok(pid),
            _ => Err(format!(
                "pasta could not connect the sandbox's network ({status}): {}",
                stderr_of(&mut child).trim()
            )),
        }
    }
}

/// The port of a `http://host:port/…` URL whose host is loopback (`127.0.0.1`, `localhost`,
/// `[::1]`); `None` otherwise (a URL the sandbox reaches through the network, or without a
/// port).
pub fn loopback_url_port(url: &str) -> Option<u16> {
    let (host, port) = url_host_port(url)?;
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then_some(())?;
    port?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_webhook_urls_open_a_host_port() {
        assert_eq!(loopback_url_port("http://127.0.0.1:8000/api"), Some(8000));
        assert_eq!(loopback_url_port("http://localhost:9/x"), Some(9));
        assert_eq!(loopback_url_port("http://[::1]:10"), Some(10));
        assert_eq!(loopback_url_port("http://u:p@127.0.0.2:11/"), Some(11));
        assert_eq!(loopback_url_port("https://switchboard.example:443/"), None);
        assert_eq!(loopback_url_port("http://192.0.2.2:8000/"), None);
        assert_eq!(loopback_url_port("http://127.0.0.1/"), None);
    }

    #[test]
    fn pasta_is_told_each_port_and_nothing_else() {
        let pasta = Pasta {
            program: "pasta".into(),
            host_ports: vec![4000, 8000],
            egress: Egress {
                nft: "nft".into(),
                nsenter: "nsenter".into(),
                allow: vec![],
                deny: vec![],
            },
        };
        let pid_file = PathBuf::from("/x/p.pid");
        let attach = Attach {
            init_pid: 42,
            user_namespace: true,
            inbound: &[30001, 30002],
            webhook_url: "http://127.0.0.1:8000/api/v1/webhooks",
            egress: &Default::default(),
            pid_file: &pid_file,
        };
        let args = pasta.args(&attach).join(" ");
        assert!(args.contains("--userns /proc/42/ns/user --netns /proc/self/fd/0"));
        assert!(args.contains("-t 127.0.0.1/30001 -t 127.0.0.1/30002"));
        assert!(args.contains("-T 4000,8000 -u none -U none"), "{args}");
        assert!(args.contains("--no-map-gw"));
        let closed = Attach {
            inbound: &[],
            webhook_url: "https://sb.example/api/v1/webhooks",
            user_namespace: false,
            ..attach
        };
        let none = Pasta {
            host_ports: vec![],
            ..pasta
        };
        let args = none.args(&closed).join(" ");
        assert!(
            args.contains("-t none") && args.contains("-T none"),
            "{args}"
        );
        assert!(!args.contains("--userns"));
    }
}

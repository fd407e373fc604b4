//! Egress rules of a process sandbox with a network of its own (issue 33, "Egress rules"): by
//! default it reaches the internet, but not private ranges, link-local addresses (a cloud's
//! metadata service at `169.254.169.254`) or other reserved ones; the operator allows or denies
//! more (`--sandbox-egress-allow`, `--sandbox-egress-deny`): ranges, addresses or host names
//! ([`Destination`]; a host name stands for the addresses it resolves to when a sandbox starts).
//! The Docker runtime loads the same verdicts on the Docker host for its bridge
//! ([`crate::docker::DockerEgress`]).
//!
//! The rules are an nftables table in the sandbox's own network namespace (`nft`, Debian
//! package `nftables`, run through `nsenter` as root), loaded before `pasta` connects the
//! namespace, so no packet leaves before they hold. The sandbox cannot change them: it holds
//! no capability in that namespace (it belongs to the host's user namespace). In order:
//!
//! 1. the sandbox's own loopback (its agent server, and the host ports `pasta` splices in);
//! 2. the `--sandbox-egress-deny` ranges: rejected;
//! 3. the `--sandbox-egress-allow` ranges, the host's DNS servers (port 53, from
//!    `/etc/resolv.conf`, which the sandbox reads too) and the webhook URL's address when it is
//!    an IP literal: accepted;
//! 4. [`BLOCKED`]: rejected (an immediate "connection refused", not a timeout);
//! 5. everything else: accepted.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub use switchboard_domain::sandboxes::egress::{Destination, EgressLists, IpNet, parse_range};

use super::{Unconfinable, url_host_port, which_system};

/// What no sandbox reaches unless allowed: private (RFC 1918, RFC 4193), shared (RFC 6598),
/// link-local (RFC 3927: cloud metadata services; RFC 4291), "this network", multicast and
/// reserved ranges.
pub const BLOCKED: [&str; 11] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// The rules and the programs that load them ([`Egress::detect`]).
#[derive(Debug, Clone)]
pub struct Egress {
    /// `nft`.
    pub nft: PathBuf,
    /// `nsenter` (util-linux).
    pub nsenter: PathBuf,
    /// `--sandbox-egress-allow`.
    pub allow: Vec<Destination>,
    /// `--sandbox-egress-deny`.
    pub deny: Vec<Destination>,
}

/// The ranges allowed and denied: the operator's lists (`allow`, `deny`) and the spec's
/// (`spec`), resolved now ([`resolve`]).
pub(crate) fn joined(
    allow: &[Destination],
    deny: &[Destination],
    spec: &EgressLists,
) -> (Vec<IpNet>, Vec<IpNet>) {
    let both = |a: &[Destination], b: &[Destination]| -> Vec<Destination> {
        a.iter().chain(b).cloned().collect()
    };
    (
        resolve(&both(allow, &spec.allow)),
        resolve(&both(deny, &spec.deny)),
    )
}

/// The ranges `list` stands for now: its ranges, and the addresses its host names resolve to
/// (each as a `/32` or `/128`). A name that does not resolve stands for nothing, with a
/// warning naming it.
pub fn resolve(list: &[Destination]) -> Vec<IpNet> {
    let mut nets = Vec::with_capacity(list.len());
    for destination in list {
        match destination {
            Destination::Range(net) => nets.push(*net),
            Destination::Host(name) => match (name.as_str(), 0).to_socket_addrs() {
                Ok(addrs) => nets.extend(addrs.map(|a| IpNet::from(a.ip()))),
                Err(e) => {
                    tracing::warn!(host = %name, error = %e, "an egress list's host name does not resolve: it stands for no address");
                }
            },
        }
    }
    nets.sort_unstable();
    nets.dedup();
    nets
}

impl Egress {
    /// Finds `nft` and `nsenter`.
    ///
    /// # Errors
    /// [`Unconfinable`] when one is missing, saying what to do.
    pub fn detect(allow: Vec<Destination>, deny: Vec<Destination>) -> Result<Self, Unconfinable> {
        let find = |name: &str, package: &str| {
            which_system(name).ok_or_else(|| {
                Unconfinable(format!(
                    "`{name}` is not installed (Debian package {package}); it loads the \
                         egress rules of each process sandbox's network. Install it, or pass \
                         --sandbox-network host"
                ))
            })
        };
        Ok(Egress {
            nft: find("nft", "nftables")?,
            nsenter: find("nsenter", "util-linux")?,
            allow,
            deny,
        })
    }

    /// The nftables rules of a sandbox whose webhook URL is `webhook_url`, the host's DNS
    /// servers being `nameservers`, the egress lists resolved to `allow` and `deny`
    /// ([`resolve`]).
    pub fn ruleset(
        &self,
        webhook_url: &str,
        nameservers: &[IpAddr],
        allow: &[IpNet],
        deny: &[IpNet],
    ) -> String {
        let mut allow = allow.to_vec();
        allow.extend(webhook_ip(webhook_url).map(IpNet::from));
        let mut rules = vec!["oif \"lo\" accept".to_owned()];
        rules.extend(destination_rules("", deny, &allow, nameservers));
        let body: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        format!(
            "table inet switchboard_egress {{\n  chain output {{\n    type filter hook output \
             priority 0; policy accept;\n{body}  }}\n}}\n"
        )
    }

    /// Loads the rules into the network namespace of process `init_pid` (the sandbox's, before
    /// `pasta` connects it), the spec's own lists (`spec`) added to the operator's, host names
    /// resolved now.
    ///
    /// # Errors
    /// What `nft` said, or that it could not run.
    pub fn apply(
        &self,
        init_pid: u32,
        webhook_url: &str,
        spec: &EgressLists,
    ) -> Result<(), String> {
        let (allow, deny) = joined(&self.allow, &self.deny, spec);
        let rules = self.ruleset(webhook_url, &nameservers(), &allow, &deny);
        let mut nsenter = Command::new(&self.nsenter);
        nsenter
            .arg(format!("--net=/proc/{init_pid}/ns/net"))
            .arg("--")
            .arg(&self.nft);
        load(nsenter, &rules, "the sandbox's egress rules")
    }
}

/// Runs `command` (`nft`, or what runs it) with `-f -` and `rules` on its standard input, in
/// an empty environment.
///
/// # Errors
/// That it could not run, or what `nft` said of `what` (e.g. "the sandbox's egress rules").
pub(crate) fn load(mut command: Command, rules: &str, what: &str) -> Result<(), String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command
        .args(["-f", "-"])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                std::io::Write::write_all(&mut stdin, rules.as_bytes())?;
            }
            child.wait_with_output()
        })
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft could not load {what} ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The verdicts on a new connection's destination, in order, each rule starting with
/// `matching` (empty, or e.g. `iifname "br-…" ` for the Docker host's bridge): `deny`
/// rejected, `allow` accepted, `nameservers` accepted on port 53 ([`dns_rules`]), [`BLOCKED`]
/// rejected (an immediate "connection refused", not a timeout). Anything else falls through
/// (accepted by the chain's policy).
pub(crate) fn destination_rules(
    matching: &str,
    deny: &[IpNet],
    allow: &[IpNet],
    nameservers: &[IpAddr],
) -> Vec<String> {
    let blocked: Vec<IpNet> = BLOCKED.iter().map(|b| b.parse().expect("a CIDR")).collect();
    let mut rules = verdicts(matching, &[(deny, " reject"), (allow, " accept")]);
    rules.extend(dns_rules(matching, nameservers));
    rules.extend(verdicts(matching, &[(&blocked, " reject")]));
    rules
}

/// `nameservers` accepted on port 53, UDP then TCP, each rule starting with `matching`.
pub(crate) fn dns_rules(matching: &str, nameservers: &[IpAddr]) -> Vec<String> {
    let dns: Vec<IpNet> = nameservers.iter().copied().map(IpNet::from).collect();
    verdicts(
        matching,
        &[
            (&dns, " udp dport 53 accept"),
            (&dns, " tcp dport 53 accept"),
        ],
    )
}

/// For each `(ranges, verdict)` in order, a rule per address family that has ranges:
/// `<matching>ip daddr { … }<verdict>`, then the same for `ip6`.
fn verdicts(matching: &str, pairs: &[(&[IpNet], &str)]) -> Vec<String> {
    let mut rules = Vec::new();
    for (nets, verdict) in pairs {
        for (family, v6) in [("ip", false), ("ip6", true)] {
            let items: Vec<String> = nets
                .iter()
                .filter(|n| matches!(n, IpNet::V6(_)) == v6)
                .map(|n| n.to_string())
                .collect();
            if !items.is_empty() {
                rules.push(format!(
                    "{matching}{family} daddr {{ {} }}{verdict}",
                    items.join(", ")
                ));
            }
        }
    }
    rules
}

/// The address of a webhook URL whose host is an IP literal (not loopback: the sandbox's
/// loopback is its own, and `pasta` splices a loopback webhook's port in).
pub(crate) fn webhook_ip(url: &str) -> Option<IpAddr> {
    let (host, _) = url_host_port(url)?;
    host.parse::<IpAddr>().ok().filter(|ip| !ip.is_loopback())
}

/// The host's DNS servers (`nameserver` lines of `/etc/resolv.conf`), not loopback ones
/// (unreachable from a sandbox's own loopback anyway).
pub(crate) fn nameservers() -> Vec<IpAddr> {
    std::fs::read_to_string("/etc/resolv.conf")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|ip| ip.trim().parse::<IpAddr>().ok())
        .filter(|ip| !ip.is_loopback())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(v: &[&str]) -> Vec<IpNet> {
        v.iter().map(|s| parse_range(s).unwrap()).collect()
    }

    fn egress() -> Egress {
        Egress {
            nft: "nft".into(),
            nsenter: "nsenter".into(),
            allow: vec![],
            deny: vec![],
        }
    }

    #[test]
    fn host_names_stand_for_what_they_resolve_to() {
        let list = vec![
            "localhost".parse().unwrap(),
            "192.0.2.0/24".parse().unwrap(),
            "no-such-host.invalid".parse().unwrap(),
        ];
        let resolved = resolve(&list);
        assert!(
            resolved.contains(&parse_range("127.0.0.1").unwrap()),
            "{resolved:?}"
        );
        assert!(
            resolved.contains(&parse_range("192.0.2.0/24").unwrap()),
            "{resolved:?}"
        );
        // The name that does not resolve stands for nothing.
        assert!(
            resolved
                .iter()
                .all(|n| n.prefix_len() == 24 || n.addr().is_loopback())
        );
    }

    #[test]
    fn deny_then_allow_then_the_blocked_ranges() {
        let rules = egress().ruleset(
            "http://192.168.1.5:3000/api/v1/webhooks",
            &["10.255.255.53".parse().unwrap()],
            &nets(&["10.20.0.0/16"]),
            &nets(&["203.0.113.0/24"]),
        );
        let at = |needle: &str| {
            rules
                .find(needle)
                .unwrap_or_else(|| panic!("{needle} not in {rules}"))
        };
        let lo = at("oif \"lo\" accept");
        let deny = at("ip daddr { 203.0.113.0/24 } reject");
        let allow = at("ip daddr { 10.20.0.0/16, 192.168.1.5/32 } accept");
        let dns = at("ip daddr { 10.255.255.53/32 } udp dport 53 accept");
        let blocked = at("169.254.0.0/16");
        assert!(
            lo < deny && deny < allow && allow < dns && dns < blocked,
            "{rules}"
        );
        assert!(rules.contains("ip6 daddr { fc00::/7, fe80::/10, ff00::/8 } reject"));
        // A loopback webhook is the sandbox's own loopback (spliced by pasta): no rule.
        let plain = egress().ruleset("http://127.0.0.1:3000/x", &[], &[], &[]);
        assert!(!plain.contains("127.0.0.1"), "{plain}");
        assert_eq!(plain.matches("accept\n").count(), 1, "{plain}");
    }

    #[test]
    fn a_matching_prefix_starts_every_verdict() {
        let rules = destination_rules("iifname \"br-1\" ", &[], &nets(&["10.9.0.0/16"]), &[]);
        assert!(
            rules.iter().all(|r| r.starts_with("iifname \"br-1\" ip")),
            "{rules:?}"
        );
        assert_eq!(rules.len(), 3, "{rules:?}");
    }
}

//! Egress rules of a process sandbox with a network of its own (issue 33, "Egress rules"): by
//! default it reaches the internet, but not private ranges, link-local addresses (a cloud's
//! metadata service at `169.254.169.254`) or other reserved ones; the operator allows or denies
//! more (`--sandbox-egress-allow`, `--sandbox-egress-deny`).
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

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub use ipnet::IpNet;

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
    pub allow: Vec<IpNet>,
    /// `--sandbox-egress-deny`.
    pub deny: Vec<IpNet>,
}

/// A range as the operator writes it: a CIDR (`10.1.0.0/16`, `fd00::/8`) or one address;
/// host bits are cleared (`10.1.2.3/16` is `10.1.0.0/16`).
///
/// # Errors
/// A message naming what was expected.
pub fn parse_range(s: &str) -> Result<IpNet, String> {
    let net = match s.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => s.parse::<IpAddr>().map(IpNet::from).map_err(|_| {
            format!("{s:?}: expected an IP address or a CIDR range (10.1.0.0/16, fd00::/8)")
        })?,
    };
    Ok(net.trunc())
}

impl Egress {
    /// Finds `nft` and `nsenter`.
    ///
    /// # Errors
    /// [`Unconfinable`] when one is missing, saying what to do.
    pub fn detect(allow: Vec<IpNet>, deny: Vec<IpNet>) -> Result<Self, Unconfinable> {
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
    /// servers being `nameservers`.
    pub fn ruleset(&self, webhook_url: &str, nameservers: &[IpAddr]) -> String {
        let set = |nets: &mut dyn Iterator<Item = IpNet>, v6: bool| -> Option<String> {
            let items: Vec<String> = nets
                .filter(|n| matches!(n, IpNet::V6(_)) == v6)
                .map(|n| n.to_string())
                .collect();
            (!items.is_empty()).then(|| format!("{{ {} }}", items.join(", ")))
        };
        let mut rules = vec!["oif \"lo\" accept".to_owned()];
        let webhook = webhook_ip(webhook_url).map(IpNet::from);
        for (verdict, nets) in [
            ("reject", self.deny.clone()),
            (
                "accept",
                self.allow.iter().copied().chain(webhook).collect(),
            ),
        ] {
            for (family, v6) in [("ip", false), ("ip6", true)] {
                if let Some(s) = set(&mut nets.iter().copied(), v6) {
                    rules.push(format!("{family} daddr {s} {verdict}"));
                }
            }
        }
        let dns: Vec<IpNet> = nameservers.iter().copied().map(IpNet::from).collect();
        for (family, v6) in [("ip", false), ("ip6", true)] {
            if let Some(s) = set(&mut dns.iter().copied(), v6) {
                rules.push(format!("{family} daddr {s} udp dport 53 accept"));
                rules.push(format!("{family} daddr {s} tcp dport 53 accept"));
            }
        }
        let blocked: Vec<IpNet> = BLOCKED.iter().map(|b| b.parse().expect("a CIDR")).collect();
        for (family, v6) in [("ip", false), ("ip6", true)] {
            if let Some(s) = set(&mut blocked.iter().copied(), v6) {
                rules.push(format!("{family} daddr {s} reject"));
            }
        }
        let body: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        format!(
            "table inet switchboard_egress {{\n  chain output {{\n    type filter hook output \
             priority 0; policy accept;\n{body}  }}\n}}\n"
        )
    }

    /// Loads the rules into the network namespace of process `init_pid` (the sandbox's, before
    /// `pasta` connects it).
    ///
    /// # Errors
    /// What `nft` said, or that it could not run.
    pub fn apply(&self, init_pid: u32, webhook_url: &str) -> Result<(), String> {
        let rules = self.ruleset(webhook_url, &nameservers());
        let out = Command::new(&self.nsenter)
            .arg(format!("--net=/proc/{init_pid}/ns/net"))
            .arg("--")
            .arg(&self.nft)
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
            .map_err(|e| format!("cannot run {}: {e}", self.nft.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "nft could not load the sandbox's egress rules ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

/// The address of a webhook URL whose host is an IP literal (not loopback: the sandbox's
/// loopback is its own, and `pasta` splices a loopback webhook's port in).
fn webhook_ip(url: &str) -> Option<IpAddr> {
    let (host, _) = url_host_port(url)?;
    host.parse::<IpAddr>().ok().filter(|ip| !ip.is_loopback())
}

/// The host's DNS servers (`nameserver` lines of `/etc/resolv.conf`), not loopback ones
/// (unreachable from a sandbox's own loopback anyway).
fn nameservers() -> Vec<IpAddr> {
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

    fn egress(allow: &[&str], deny: &[&str]) -> Egress {
        let nets = |v: &[&str]| v.iter().map(|s| parse_range(s).unwrap()).collect();
        Egress {
            nft: "nft".into(),
            nsenter: "nsenter".into(),
            allow: nets(allow),
            deny: nets(deny),
        }
    }

    #[test]
    fn ranges_are_cidrs_or_addresses_without_host_bits() {
        assert_eq!(
            parse_range("10.1.2.3/16").unwrap().to_string(),
            "10.1.0.0/16"
        );
        assert_eq!(parse_range("10.1.2.3").unwrap().to_string(), "10.1.2.3/32");
        assert_eq!(parse_range("fd00::1/8").unwrap().to_string(), "fd00::/8");
        assert!(parse_range("example.com").unwrap_err().contains("CIDR"));
        assert!(parse_range("10.0.0.0/33").is_err());
    }

    #[test]
    fn deny_then_allow_then_the_blocked_ranges() {
        let rules = egress(&["10.20.0.0/16"], &["203.0.113.0/24"]).ruleset(
            "http://192.168.1.5:3000/api/v1/webhooks",
            &["10.255.255.53".parse().unwrap()],
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
        let plain = egress(&[], &[]).ruleset("http://127.0.0.1:3000/x", &[]);
        assert!(!plain.contains("127.0.0.1"), "{plain}");
        assert_eq!(plain.matches("accept\n").count(), 1, "{plain}");
    }
}

//! Egress rules for bridged Docker sandboxes (issue 33, "Egress rules, both runtimes"): the
//! same verdicts as a process sandbox's ([`crate::confine::egress`]), loaded on the Docker
//! host for the bridge network containers join, as an nftables table of Switchboard's
//! (`inet switchboard_docker_<bridge>`). They hold whatever runs in the container: gVisor's
//! network stack writes its packets past any rule inside the container, but they still cross
//! the host's bridge.
//!
//! - **forward** (a container to another host): new connections to `--sandbox-egress-deny`
//!   rejected; to `--sandbox-egress-allow`, the host's DNS servers (port 53) and an IP
//!   webhook URL's address accepted; to private, link-local (cloud metadata) and reserved
//!   ranges ([`BLOCKED`](crate::confine::egress::BLOCKED)) rejected; the internet accepted.
//! - **input** (a container to the Docker host itself, at any of its addresses, such as
//!   `host.docker.internal`): only the webhook URL's port, `--sandbox-host-port`s and port 53
//!   of a DNS server at one of the host's addresses; every other service of the host is
//!   refused.
//!
//! Replies of connections Switchboard opens (to published ports or container addresses) are
//! not new connections and pass. Loading needs `nft` (Debian package `nftables`) and root on
//! the Docker host, so only a Switchboard on that host, as root, loads them.
//!
//! Every installation on one daemon shares the bridge
//! ([`SANDBOX_NETWORK`](crate::docker::SANDBOX_NETWORK)), so the table is shared too: the
//! ports of the host open to containers are a set each installation adds its own to (never
//! removed while the host runs; `nft delete table inet switchboard_docker_<bridge>` starts
//! over), and the destination verdicts are those of the installation that started a sandbox
//! last: installations sharing a daemon must share their egress lists.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Command;

use crate::confine::egress::{
    Destination, EgressLists, IpNet, destination_rules, dns_rules, joined, load, nameservers,
    webhook_ip,
};
use crate::confine::{url_host_port, which_system};

/// What a Docker runtime loads on the host for its bridge ([`DockerEgress::detect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerEgress {
    /// `nft`.
    pub nft: PathBuf,
    /// `--sandbox-egress-allow`.
    pub allow: Vec<Destination>,
    /// `--sandbox-egress-deny`.
    pub deny: Vec<Destination>,
    /// `--sandbox-host-port`: ports of the Docker host containers may reach (besides the
    /// webhook URL's).
    pub host_ports: Vec<u16>,
}

impl DockerEgress {
    /// Finds `nft`.
    ///
    /// # Errors
    /// A message saying what to install when `nft` is missing.
    pub fn detect(
        allow: Vec<Destination>,
        deny: Vec<Destination>,
        host_ports: Vec<u16>,
    ) -> Result<Self, String> {
        let nft = which_system("nft").ok_or_else(|| {
            "`nft` is not installed (Debian package nftables); it loads the egress rules of \
             Docker sandboxes on the Docker host's bridge. Install it, or pass \
             --sandbox-network host (containers then reach every service of the host and of its \
             private networks)"
                .to_owned()
        })?;
        Ok(DockerEgress {
            nft,
            allow,
            deny,
            host_ports,
        })
    }

    /// The nftables script for containers on host interface `bridge` whose webhook URL is
    /// `webhook_url`, the host's DNS servers being `nameservers`, the lists resolved to
    /// `allow` and `deny`. Atomic when loaded (`nft -f`): the chains are emptied and refilled
    /// in one transaction, the ports added to the shared set.
    pub fn script(
        &self,
        bridge: &str,
        webhook_url: &str,
        nameservers: &[IpAddr],
        allow: &[IpNet],
        deny: &[IpNet],
    ) -> String {
        let table = format!("inet {}", table_name(bridge));
        let matching = format!("iifname \"{bridge}\" ");
        let mut ports = self.host_ports.clone();
        ports.extend(
            url_host_port(webhook_url)
                .and_then(|(_, port)| port?.parse::<u16>().ok())
                .or_else(|| default_port(webhook_url)),
        );
        ports.sort_unstable();
        ports.dedup();
        let mut allow = allow.to_vec();
        allow.extend(webhook_ip(webhook_url).map(IpNet::from));

        let established = format!("{matching}ct state established,related accept");
        let mut forward = vec![established.clone()];
        forward.extend(destination_rules(&matching, deny, &allow, nameservers));
        // A DNS server on one of the host's own addresses is the host itself: its port 53.
        let mut input = vec![established];
        input.extend(dns_rules(&matching, nameservers));
        input.push(format!("{matching}tcp dport @host_ports accept"));
        input.push(format!("{matching}reject"));
        let lines =
            |rules: &[String]| -> String { rules.iter().map(|r| format!("    {r}\n")).collect() };
        let mut script = format!(
            "table {table} {{\n  set host_ports {{ type inet_service; }}\n  chain input {{ type \
             filter hook input priority 0; policy accept; }}\n  chain forward {{ type filter \
             hook forward priority 0; policy accept; }}\n}}\nflush chain {table} input\nflush \
             chain {table} forward\n"
        );
        if !ports.is_empty() {
            let list: Vec<String> = ports.iter().map(u16::to_string).collect();
            script.push_str(&format!(
                "add element {table} host_ports {{ {} }}\n",
                list.join(", ")
            ));
        }
        script.push_str(&format!(
            "table {table} {{\n  chain input {{\n{}  }}\n  chain forward {{\n{}  }}\n}}\n",
            lines(&input),
            lines(&forward)
        ));
        script
    }

    /// Loads the rules for containers on host interface `bridge` with webhook URL
    /// `webhook_url`, a spec's own lists `spec` added to the operator's, the host names of the
    /// lists resolved now.
    ///
    /// # Errors
    /// What `nft` said, or that it could not run.
    pub fn apply(&self, bridge: &str, webhook_url: &str, spec: &EgressLists) -> Result<(), String> {
        let (allow, deny) = joined(&self.allow, &self.deny, spec);
        let script = self.script(bridge, webhook_url, &nameservers(), &allow, &deny);
        load(
            Command::new(&self.nft),
            &script,
            &format!("the egress rules of bridge {bridge}"),
        )
    }
}

/// The table of bridge interface `bridge`: `switchboard_docker_` and its name, every
/// character but letters and digits as `_` (`br-1a2b…` → `switchboard_docker_br_1a2b…`).
pub fn table_name(bridge: &str) -> String {
    let safe: String = bridge
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("switchboard_docker_{safe}")
}

/// The port of a URL that names none: 80 for `http`, 443 for `https`.
fn default_port(url: &str) -> Option<u16> {
    match url.split_once("://")?.0 {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The host interface of a Docker bridge network: the driver's `bridge.name` option when set
/// (`docker0` for Docker's default bridge), else `br-` and the first 12 characters of the
/// network's id, as Docker names them.
pub fn bridge_interface(
    options: Option<&std::collections::HashMap<String, String>>,
    id: &str,
) -> String {
    options
        .and_then(|o| o.get("com.docker.network.bridge.name"))
        .filter(|n| !n.is_empty())
        .cloned()
        .unwrap_or_else(|| format!("br-{}", id.get(..12).unwrap_or(id)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::confine::egress::parse_range;

    fn egress(host_ports: Vec<u16>) -> DockerEgress {
        DockerEgress {
            nft: "nft".into(),
            allow: vec![],
            deny: vec![],
            host_ports,
        }
    }

    #[test]
    fn the_bridge_is_named_as_docker_names_it() {
        let id = "0123456789abcdef0123";
        assert_eq!(bridge_interface(None, id), "br-0123456789ab");
        let named = HashMap::from([(
            "com.docker.network.bridge.name".to_owned(),
            "docker0".to_owned(),
        )]);
        assert_eq!(bridge_interface(Some(&named), id), "docker0");
        assert_eq!(table_name("br-0123"), "switchboard_docker_br_0123");
    }

    #[test]
    fn the_host_is_closed_but_the_webhook_and_host_ports() {
        let script = egress(vec![4000]).script(
            "br-abc",
            "http://host.docker.internal:3000/api/v1/webhooks",
            &["10.255.255.53".parse().unwrap()],
            &[parse_range("10.20.0.0/16").unwrap()],
            &[],
        );
        let t = "inet switchboard_docker_br_abc";
        assert!(
            script.contains(&format!("flush chain {t} input\n")),
            "{script}"
        );
        assert!(script.contains(&format!("add element {t} host_ports {{ 3000, 4000 }}")));
        let input = script.split("chain input {\n").nth(1).unwrap();
        let input = input.split("  }").next().unwrap();
        let rules: Vec<&str> = input.lines().map(str::trim).collect();
        assert_eq!(
            rules,
            [
                "iifname \"br-abc\" ct state established,related accept",
                "iifname \"br-abc\" ip daddr { 10.255.255.53/32 } udp dport 53 accept",
                "iifname \"br-abc\" ip daddr { 10.255.255.53/32 } tcp dport 53 accept",
                "iifname \"br-abc\" tcp dport @host_ports accept",
                "iifname \"br-abc\" reject",
            ]
        );
        let forward = script.split("chain forward {\n").nth(1).unwrap();
        let allow = forward.find("ip daddr { 10.20.0.0/16 } accept").unwrap();
        let dns = forward
            .find("{ 10.255.255.53/32 } udp dport 53 accept")
            .unwrap();
        let blocked = forward.find("169.254.0.0/16").unwrap();
        assert!(allow < dns && dns < blocked, "{forward}");
        assert!(
            forward.lines().all(|l| l.trim().is_empty()
                || l.trim() == "}"
                || l.trim_start().starts_with("iifname \"br-abc\" ")),
            "{forward}"
        );
    }

    #[test]
    fn an_ip_webhook_is_reachable_and_its_default_port_open() {
        let script = egress(vec![]).script("docker0", "https://10.1.2.3/hooks", &[], &[], &[]);
        assert!(script.contains("host_ports { 443 }"), "{script}");
        assert!(
            script.contains("ip daddr { 10.1.2.3/32 } accept"),
            "{script}"
        );
    }
}

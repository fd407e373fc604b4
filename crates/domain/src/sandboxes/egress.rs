//! What a sandbox's egress lists name (issue 33, "Egress rules"): ranges, addresses and host
//! names, from the operator (`--sandbox-egress-allow`, `--sandbox-egress-deny`) and from a
//! sandbox spec (`egress_allow`, `egress_deny`). The runtimes turn them into rules (the
//! sandbox crate's `confine::egress` and `docker::egress`); this module only says what is a
//! valid entry.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

pub use ipnet::IpNet;

/// What an egress list names (`--sandbox-egress-allow`, `--sandbox-egress-deny`): a range, or
/// a host name standing for the addresses it resolves to when a sandbox starts (issue 33:
/// "allow or deny CIDRs and host names", e.g. an internal git server or an LLM gateway).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    /// A CIDR range or one address ([`parse_range`]).
    Range(IpNet),
    /// A DNS name (`git.internal.example`), lowercase, without a trailing dot.
    Host(String),
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Range(net) => net.fmt(f),
            Destination::Host(name) => f.write_str(name),
        }
    }
}

impl FromStr for Destination {
    type Err = String;

    /// A range or address ([`parse_range`]), else a host name: 1 to 253 characters, labels of
    /// 1 to 63 letters, digits and `-` (not first or last), separated by dots, not all digits.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(net) = parse_range(s) {
            return Ok(Destination::Range(net));
        }
        let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        let numeric = name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        if (1..=253).contains(&name.len()) && name.split('.').all(label_ok) && !numeric {
            Ok(Destination::Host(name))
        } else {
            Err(format!(
                "{s:?}: expected an IP address, a CIDR range (10.1.0.0/16, fd00::/8) or a host \
                 name (git.internal.example)"
            ))
        }
    }
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

/// A spec's own egress lists (`egress_allow`, `egress_deny`), on top of the operator's: what
/// its sandboxes may reach beyond the default, and what they may not reach at all (deny wins,
/// also over the operator's allow). Empty (the default): the operator's lists alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EgressLists {
    /// `egress_allow`.
    pub allow: Vec<Destination>,
    /// `egress_deny`.
    pub deny: Vec<Destination>,
}

impl EgressLists {
    /// Whether both lists are empty.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// A spec field's value as a list: absent or `null` is empty; else an array of strings,
    /// each a [`Destination`], kept in order without repeats.
    ///
    /// # Errors
    /// A message naming the entry at fault (`[2]: "x y": expected …`), or that the value is
    /// not an array of strings.
    pub fn parse_list(value: Option<&serde_json::Value>) -> Result<Vec<Destination>, String> {
        let items = match value {
            None | Some(serde_json::Value::Null) => return Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items,
            Some(_) => {
                return Err(
                    "expected an array of IP addresses, CIDR ranges or host names".to_owned(),
                );
            }
        };
        let mut list: Vec<Destination> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let text = item.as_str().ok_or_else(|| {
                format!("[{i}]: expected a string (an IP address, a CIDR range or a host name)")
            })?;
            let destination: Destination = text.parse().map_err(|e| format!("[{i}]: {e}"))?;
            if !list.contains(&destination) {
                list.push(destination);
            }
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn destinations_are_ranges_or_host_names() {
        let d = |s: &str| s.parse::<Destination>();
        assert_eq!(
            d("10.1.2.3/16").unwrap(),
            Destination::Range(parse_range("10.1.0.0/16").unwrap())
        );
        assert_eq!(
            d("Git.Internal.example.").unwrap(),
            Destination::Host("git.internal.example".into())
        );
        assert_eq!(d("localhost").unwrap().to_string(), "localhost");
        for bad in [
            "",
            "10.0.0.0/33",
            "300.1.1.1",
            "-x.example",
            "a_b.example",
            "x..y",
            "a b",
        ] {
            let e = d(bad).unwrap_err();
            assert!(e.contains("host name"), "{bad}: {e}");
        }
        assert!(d(&"a".repeat(64)).is_err());
    }

    #[test]
    fn a_spec_list_is_an_array_of_destinations() {
        let parse = |v: serde_json::Value| EgressLists::parse_list(Some(&v));
        assert_eq!(EgressLists::parse_list(None).unwrap(), vec![]);
        assert_eq!(parse(serde_json::Value::Null).unwrap(), vec![]);
        let list = parse(serde_json::json!([
            "10.9.0.0/16",
            "git.internal",
            "10.9.1.1/16"
        ]))
        .unwrap();
        assert_eq!(list.len(), 2, "repeats kept once: {list:?}");
        assert_eq!(list[1], Destination::Host("git.internal".into()));
        assert!(
            parse(serde_json::json!("10.0.0.0/8"))
                .unwrap_err()
                .contains("an array")
        );
        assert!(
            parse(serde_json::json!([1]))
                .unwrap_err()
                .starts_with("[0]: expected a string")
        );
        assert!(
            parse(serde_json::json!(["ok.example", "no way"]))
                .unwrap_err()
                .starts_with("[1]: ")
        );
    }
}

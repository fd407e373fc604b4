//! The port form of a sandbox's URL (API.md, Sandbox proxy, "Sandbox URLs"): each sandbox
//! gets a port of a range Switchboard owns (`--sandbox-url-ports`, [`UrlPortRange`]), on which
//! Switchboard listens for that sandbox alone, so that its agent server is reached at
//! `http://<switchboard host>:<port>` with no path. The port is assigned once, stored with the
//! sandbox, unique among the sandboxes holding one, and released when the sandbox is deleted
//! ([`UrlPortStore`](crate::ports::url_ports::UrlPortStore)).

use std::fmt;
use std::str::FromStr;

use crate::ids::SandboxId;
use crate::sandboxes::runtime::SandboxStatus;

/// An inclusive range of TCP ports, `first-last` (`20000-20999`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlPortRange {
    /// The first port of the range.
    pub first: u16,
    /// The last port of the range (inclusive).
    pub last: u16,
}

/// The default range of `--sandbox-url-ports`: below Linux's default ephemeral range
/// (32768-60999, where the sandboxes' own ports come from) and above the registered ports
/// most services use.
pub const DEFAULT_URL_PORTS: UrlPortRange = UrlPortRange {
    first: 20000,
    last: 20999,
};

impl UrlPortRange {
    /// How many ports the range holds.
    pub fn len(&self) -> usize {
        usize::from(self.last - self.first) + 1
    }

    /// Never true: a range holds at least one port. (For clippy's `len` rule.)
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }

    /// Whether the two ranges share a port.
    pub fn overlaps(&self, other: &UrlPortRange) -> bool {
        self.first <= other.last && other.first <= self.last
    }

    /// The lowest port of the range not in `taken` (sorted or not), if any.
    pub fn first_free(&self, taken: &[u16]) -> Option<u16> {
        let mut used = vec![false; self.len()];
        for &p in taken.iter().filter(|p| self.contains(**p)) {
            used[usize::from(p - self.first)] = true;
        }
        used.iter()
            .position(|u| !u)
            .map(|i| self.first + u16::try_from(i).unwrap_or(0))
    }

    /// Checks the range against the ports it must never share: the system's ephemeral range
    /// (`/proc/sys/net/ipv4/ip_local_port_range`, where the process runtime's sandboxes and
    /// every outgoing connection get their ports, so a sandbox could hold one before
    /// Switchboard binds it) and Switchboard's own listening ports.
    ///
    /// # Errors
    /// A message naming the overlap and what to change.
    pub fn check(&self, ephemeral: Option<UrlPortRange>, listening: &[u16]) -> Result<(), String> {
        if self.first == 0 {
            return Err(format!(
                "--sandbox-url-ports {self}: port 0 is not a port Switchboard can own"
            ));
        }
        if let Some(e) = ephemeral
            && self.overlaps(&e)
        {
            return Err(format!(
                "--sandbox-url-ports {self} overlaps the ephemeral port range {e} \
                 (/proc/sys/net/ipv4/ip_local_port_range), where sandboxes and outgoing \
                 connections get their ports; choose a range outside it (default {DEFAULT_URL_PORTS})"
            ));
        }
        if let Some(p) = listening.iter().find(|p| self.contains(**p)) {
            return Err(format!(
                "--sandbox-url-ports {self} contains port {p}, on which Switchboard itself \
                 listens; choose a range without it"
            ));
        }
        Ok(())
    }
}

impl fmt::Display for UrlPortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

impl FromStr for UrlPortRange {
    type Err = String;

    /// `first-last` (both inclusive, `first <= last`), or one port alone.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected a port range such as 20000-20999, got {s:?}");
        let (a, b) = s.trim().split_once('-').unwrap_or((s.trim(), s.trim()));
        let first: u16 = a.trim().parse().map_err(|_| bad())?;
        let last: u16 = b.trim().parse().map_err(|_| bad())?;
        if first > last || first == 0 {
            return Err(bad());
        }
        Ok(UrlPortRange { first, last })
    }
}

/// One sandbox's port, as stored, with the sandbox's status (a listener is kept for
/// `STARTING`, `RUNNING` and `PAUSED` sandboxes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlPort {
    /// The sandbox.
    pub sandbox: SandboxId,
    /// Its port.
    pub port: u16,
    /// Its last reconciled status.
    pub status: SandboxStatus,
}

impl UrlPort {
    /// Whether the sandbox's listener should be open: `STARTING`, `RUNNING` or `PAUSED`.
    pub fn listens(&self) -> bool {
        matches!(
            self.status,
            SandboxStatus::Starting | SandboxStatus::Running | SandboxStatus::Paused
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_hand_out_the_lowest_free_port() {
        let r: UrlPortRange = "20000-20002".parse().unwrap();
        assert_eq!((r.first, r.last, r.len()), (20000, 20002, 3));
        assert_eq!(r.to_string(), "20000-20002");
        assert_eq!("20005".parse::<UrlPortRange>().unwrap().len(), 1);
        for bad in ["", "x-y", "20002-20000", "0-10", "1-70000"] {
            assert!(bad.parse::<UrlPortRange>().is_err(), "{bad}");
        }
        assert_eq!(r.first_free(&[]), Some(20000));
        assert_eq!(r.first_free(&[20000, 20002, 3000]), Some(20001));
        assert_eq!(r.first_free(&[20001, 20000, 20002]), None);
    }

    #[test]
    fn ranges_must_avoid_the_ephemeral_range_and_our_ports() {
        let ephemeral = UrlPortRange {
            first: 32768,
            last: 60999,
        };
        assert!(DEFAULT_URL_PORTS.check(Some(ephemeral), &[3000]).is_ok());
        let over: UrlPortRange = "32000-33000".parse().unwrap();
        let e = over.check(Some(ephemeral), &[]).unwrap_err();
        assert!(
            e.contains("overlaps the ephemeral port range 32768-60999"),
            "{e}"
        );
        let e = DEFAULT_URL_PORTS.check(None, &[20500]).unwrap_err();
        assert!(e.contains("contains port 20500"), "{e}");
    }
}

//! Who listens on a loopback TCP port, from the kernel (issue 33, "never talk to a listener
//! you did not verify"): the listening socket a connection to `127.0.0.1:<port>` would reach
//! and its owner's user id, read through `NETLINK_SOCK_DIAG` (the interface `ss` uses) as one
//! exact look-up, the kernel's own choice of listener (`127.0.0.1:<port>`, else every IPv4
//! address, else a dual-stack `[::]`), not a dump of the host's sockets: its cost does not
//! grow with them.
//!
//! A confined process sandbox runs as a user of its own (issue 18), so a listener owned by
//! another user is not that sandbox's: another sandbox bound the port first (to receive the
//! session key and the setup traffic Switchboard sends there), or a host service holds it.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType, recv, sendto, socket};

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR` (linux/netlink.h).
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST`: one socket, looked up (no `NLM_F_DUMP`).
const REQUEST: u16 = 0x1;
/// `IPPROTO_TCP`.
const IPPROTO_TCP: u8 = 6;
/// `INET_DIAG_NOCOOKIE`.
const NO_COOKIE: u32 = u32::MAX;
/// `ENOENT`: no socket would take the connection.
const ENOENT: i32 = 2;
/// The size of `struct nlmsghdr`.
const HEADER: usize = 16;
/// Where `idiag_uid` and `idiag_inode` sit in `struct inet_diag_msg`, and the struct's size.
const UID_AT: usize = 64;
const INODE_AT: usize = 68;
const MESSAGE: usize = 72;

/// A listening TCP socket: its local address and port and its owner's user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    /// The address it is bound to (`0.0.0.0` or `::` for every address).
    pub address: IpAddr,
    /// Its port.
    pub port: u16,
    /// The user id that owns it (the user that created the socket).
    pub uid: u32,
    /// Its socket's inode (`socket:[<inode>]` among its owner process's open files).
    pub inode: u64,
}

/// The listening socket that a connection to `127.0.0.1:port` would reach now, with its
/// owner; `None` when nothing would take it.
///
/// # Errors
/// The netlink socket cannot be opened or the kernel refuses the look-up (no `inet_diag`
/// support: the caller cannot tell who listens, and must not assume).
pub fn loopback_listener(port: u16) -> io::Result<Option<Listener>> {
    let fd = socket(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        Some(netlink::SOCK_DIAG),
    )?;
    let family = u8::try_from(AddressFamily::INET.as_raw()).expect("an address family fits a byte");
    // struct nlmsghdr + struct inet_diag_req_v2 (56 bytes). The socket id is read as the
    // kernel reads a packet's: from `dst:dport` (nobody) to `src:sport` (the listener).
    let mut req = Vec::with_capacity(HEADER + 56);
    req.extend_from_slice(&((HEADER + 56) as u32).to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&REQUEST.to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    req.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
    req.extend_from_slice(&[family, IPPROTO_TCP, 0, 0]);
    req.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
    req.extend_from_slice(&port.to_be_bytes()); // sport
    req.extend_from_slice(&0u16.to_be_bytes()); // dport
    let mut src = [0u8; 16];
    src[..4].copy_from_slice(&Ipv4Addr::LOCALHOST.octets());
    req.extend_from_slice(&src);
    req.extend_from_slice(&[0u8; 16]); // dst
    req.extend_from_slice(&0u32.to_ne_bytes()); // interface
    req.extend_from_slice(&NO_COOKIE.to_ne_bytes());
    req.extend_from_slice(&NO_COOKIE.to_ne_bytes());
    sendto(&fd, &req, SendFlags::empty(), &SocketAddrNetlink::new(0, 0))?;

    let mut buf = [0u8; 1024];
    let (n, _) = recv(&fd, &mut buf[..], RecvFlags::empty())?;
    if n < HEADER {
        return Err(truncated());
    }
    let len = (u32::from_ne_bytes(buf[0..4].try_into().expect("4 bytes")) as usize).min(n);
    let kind = u16::from_ne_bytes(buf[4..6].try_into().expect("2 bytes"));
    let body = buf.get(HEADER..len).ok_or_else(truncated)?;
    match kind {
        NLMSG_ERROR => {
            let code = body
                .get(..4)
                .map(|b| i32::from_ne_bytes(b.try_into().expect("4 bytes")))
                .ok_or_else(truncated)?;
            match code.saturating_neg() {
                ENOENT => Ok(None),
                errno => Err(io::Error::from_raw_os_error(errno)),
            }
        }
        SOCK_DIAG_BY_FAMILY if body.len() >= MESSAGE => parse(body).map(Some).ok_or_else(truncated),
        _ => Err(truncated()),
    }
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a short or unknown sock_diag answer",
    )
}

/// A `struct inet_diag_msg`.
fn parse(msg: &[u8]) -> Option<Listener> {
    let port = u16::from_be_bytes(msg[4..6].try_into().ok()?);
    let src = &msg[8..24];
    let address = match msg[0] {
        f if u16::from(f) == AddressFamily::INET.as_raw() => {
            IpAddr::V4(Ipv4Addr::new(src[0], src[1], src[2], src[3]))
        }
        f if u16::from(f) == AddressFamily::INET6.as_raw() => {
            IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(src).ok()?))
        }
        _ => return None,
    };
    let uid = u32::from_ne_bytes(msg[UID_AT..UID_AT + 4].try_into().ok()?);
    let inode = u32::from_ne_bytes(msg[INODE_AT..INODE_AT + 4].try_into().ok()?);
    Some(Listener {
        address,
        port,
        uid,
        inode: u64::from(inode),
    })
}

/// The port of a `http://host:port[/…]` URL whose host is IPv4 loopback `127.0.0.1` (how
/// Switchboard reaches a process sandbox); `None` for any other URL.
pub fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (host, port) = authority.rsplit_once(':')?;
    (host == "127.0.0.1").then_some(())?;
    port.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_its_own_listener_with_its_uid() {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let me = rustix::process::getuid().as_raw();
        let found = loopback_listener(port).unwrap().unwrap();
        assert_eq!(
            (found.address, found.port, found.uid),
            (IpAddr::V4(Ipv4Addr::LOCALHOST), port, me)
        );
        // Its inode is this process's socket's.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&l);
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        assert_eq!(link.to_str().unwrap(), format!("socket:[{}]", found.inode));
        // A connection to it is not a listener: the look-up still answers the listener.
        let _c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert_eq!(loopback_listener(port).unwrap().map(|l| l.port), Some(port));
        drop(l);
        assert_eq!(loopback_listener(port).unwrap(), None);
    }

    #[test]
    fn wildcards_take_loopback_and_other_addresses_do_not() {
        let any = std::net::TcpListener::bind(("0.0.0.0", 0)).unwrap();
        let port = any.local_addr().unwrap().port();
        let found = loopback_listener(port).unwrap().unwrap();
        assert_eq!(found.address, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if let Ok(v6) = std::net::TcpListener::bind(("::", 0)) {
            let port = v6.local_addr().unwrap().port();
            let found = loopback_listener(port).unwrap().unwrap();
            assert_eq!(found.address, IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        }
        // 127.0.0.2 does not take a connection to 127.0.0.1.
        let other = std::net::TcpListener::bind(("127.0.0.2", 0)).unwrap();
        let port = other.local_addr().unwrap().port();
        assert_eq!(loopback_listener(port).unwrap(), None);
    }

    #[test]
    fn loopback_ports_of_urls() {
        assert_eq!(loopback_port("http://127.0.0.1:8000"), Some(8000));
        assert_eq!(loopback_port("http://127.0.0.1:8000/x?y"), Some(8000));
        assert_eq!(loopback_port("http://10.0.0.1:8000"), None);
        assert_eq!(loopback_port("http://localhost:8000"), None);
        assert_eq!(loopback_port("http://127.0.0.1"), None);
    }
}

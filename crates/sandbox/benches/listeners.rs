//! The cost of the listener check the proxy and every agent-server call make before sending to
//! a process sandbox (issue 33, `just bench-listeners`): one `NETLINK_SOCK_DIAG` look-up of who
//! listens on a loopback port ([`switchboard_sandbox::listeners::loopback_listener`]), on a
//! quiet host and on one holding 1,000 other listeners and 1,000 established connections (an
//! exact look-up: its cost should not follow the host's socket count).

use std::net::{TcpListener, TcpStream};
use std::sync::LazyLock;

use divan::{Bencher, black_box};
use switchboard_sandbox::listeners::loopback_listener;

fn main() {
    divan::main();
}

/// The port looked up: a listener of this process.
static TARGET: LazyLock<TcpListener> =
    LazyLock::new(|| TcpListener::bind(("127.0.0.1", 0)).unwrap());

/// Sockets that make the host busy: listeners and connected pairs, kept for the whole run.
fn busy_host(n: usize) -> Vec<(TcpListener, TcpStream, TcpStream)> {
    (0..n)
        .map(|_| {
            let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
            let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (s, _) = l.accept().unwrap();
            (l, c, s)
        })
        .collect()
}

#[divan::bench(args = [0, 1000])]
fn listener_lookup(bencher: Bencher<'_, '_>, other_sockets: usize) {
    let port = TARGET.local_addr().unwrap().port();
    let _busy = busy_host(other_sockets);
    bencher.bench(|| {
        let found = loopback_listener(black_box(port)).unwrap();
        assert!(found.is_some());
        found
    });
}

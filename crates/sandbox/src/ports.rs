//! Host ports for sandboxes' agent servers and exposed services: chosen by Switchboard (not
//! left to Docker, nor to the sandbox), so a container keeps its port when it is started again
//! after it stopped, and the handle's URL stays true. A port is free when it can be bound on
//! the address now and no start in this process holds it: one pool for the whole process
//! ([`PortPool::shared`]), so two runtimes of one process (the process and Docker runtimes of
//! one `serve`, or many in one test binary) never hand out the same port while its first
//! sandbox has not bound it yet. A clash with another process at start is retried by the
//! caller.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{LazyLock, Mutex};

use switchboard_domain::sandboxes::runtime::RuntimeError;

/// Ports handed out and not yet released.
#[derive(Debug, Default)]
pub struct PortPool {
    reserved: Mutex<HashSet<u16>>,
}

/// The pool every runtime of this process reserves from.
static SHARED: LazyLock<PortPool> = LazyLock::new(PortPool::default);

impl PortPool {
    /// The pool of this process, shared by every runtime in it.
    pub fn shared() -> &'static PortPool {
        &SHARED
    }

    /// A port on `address` that nothing listens on and this pool has not handed out.
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] when no port can be bound.
    pub fn reserve(&self, address: Ipv4Addr) -> Result<u16, RuntimeError> {
        self.reserve_avoiding(address, &[])
    }

    /// As [`PortPool::reserve`], never one of `avoid`: ports that are not listened on now but
    /// are taken otherwise (the host ports `pasta` binds inside a confined process sandbox's
    /// network to reach the host: a service on the host that is down at the moment leaves its
    /// port free to bind, and a sandbox given it could not listen on it).
    ///
    /// # Errors
    /// [`RuntimeError::Launch`] when no port can be bound.
    pub fn reserve_avoiding(&self, address: Ipv4Addr, avoid: &[u16]) -> Result<u16, RuntimeError> {
        let mut reserved = self.reserved.lock().expect("port set poisoned");
        for _ in 0..64 {
            let port = TcpListener::bind((address, 0))
                .and_then(|listener| listener.local_addr())
                .map_err(|e| RuntimeError::Launch(format!("no free port on {address}: {e}")))?
                .port();
            if !avoid.contains(&port) && reserved.insert(port) {
                return Ok(port);
            }
        }
        Err(RuntimeError::Launch(format!(
            "no free port on {address} after 64 tries"
        )))
    }

    /// Gives `port` back (after a failed start, or a delete).
    pub fn release(&self, port: u16) {
        self.reserved
            .lock()
            .expect("port set poisoned")
            .remove(&port);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_ports_are_distinct_until_released() {
        let pool = PortPool::default();
        let ports: HashSet<u16> = (0..50)
            .map(|_| pool.reserve(Ipv4Addr::LOCALHOST).unwrap())
            .collect();
        assert_eq!(ports.len(), 50);
        for port in &ports {
            pool.release(*port);
        }
        assert!(pool.reserved.lock().unwrap().is_empty());
    }

    #[test]
    fn avoided_ports_are_never_handed_out() {
        // A port the kernel just gave out and released, so likely to be given again: every
        // such port is avoided, and the reserved ones are all others.
        let pool = PortPool::default();
        let avoid: Vec<u16> = (0..20)
            .map(|_| {
                TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port()
            })
            .collect();
        for _ in 0..50 {
            let port = pool.reserve_avoiding(Ipv4Addr::LOCALHOST, &avoid).unwrap();
            assert!(!avoid.contains(&port), "{port} is avoided");
        }
    }
}

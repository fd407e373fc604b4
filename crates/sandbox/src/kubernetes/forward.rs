//! Reaching pods through the API server when Switchboard is off the cluster's pod network
//! (`--kube-reach port-forward`, issue 32): each sandbox's agent server (and each exposed
//! service) gets a listener of Switchboard's on a loopback port, and every connection to it is
//! a `pods/portforward` stream through the API server to the pod's port. The sandbox's URL is
//! then a plain `http://127.0.0.1:<port>`, so every client of Switchboard's (probes, the
//! proxy, event streams, websockets) works unchanged; nothing of the pod is reachable from
//! elsewhere. The pod keeps its name through pause and resume, so a listener outlives them; a
//! listener is made again wherever a handle is observed (after a restart, on another replica).

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use switchboard_domain::sandboxes::runtime::RuntimeError;
use tokio::task::AbortHandle;

/// The loopback listeners, by local port.
#[derive(Default)]
pub(super) struct Forwards {
    listeners: Mutex<HashMap<u16, AbortHandle>>,
}

/// A free loopback port for a new forward.
///
/// # Errors
/// [`RuntimeError::Launch`] when none can be had.
pub(super) fn free_port() -> Result<u16, RuntimeError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| RuntimeError::Launch(format!("no loopback port for a port-forward: {e}")))
}

impl Forwards {
    /// Makes sure 127.0.0.1:`local` forwards to `pod_port` of the pod `name` (nothing when it
    /// already does).
    ///
    /// # Errors
    /// [`RuntimeError::Io`] when the port cannot be listened on (another program has it).
    pub(super) fn ensure(
        &self,
        tokio: &tokio::runtime::Runtime,
        pods: &Api<Pod>,
        name: &str,
        local: u16,
        pod_port: u16,
    ) -> Result<(), RuntimeError> {
        let mut listeners = self.listeners.lock().expect("forwards poisoned");
        if listeners.get(&local).is_some_and(|l| !l.is_finished()) {
            return Ok(());
        }
        let listener = std::net::TcpListener::bind(("127.0.0.1", local))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| {
                RuntimeError::Io(format!("listening on 127.0.0.1:{local} for {name}: {e}"))
            })?;
        let (pods, name) = (pods.clone(), name.to_owned());
        let task = tokio.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(relay(socket, pods.clone(), name.clone(), pod_port));
            }
        });
        listeners.insert(local, task.abort_handle());
        Ok(())
    }

    /// Stops listening on `local`.
    pub(super) fn close(&self, local: u16) {
        if let Some(listener) = self
            .listeners
            .lock()
            .expect("forwards poisoned")
            .remove(&local)
        {
            listener.abort();
        }
    }
}

/// One connection: a port-forward stream to the pod, bytes copied both ways until either side
/// ends.
async fn relay(mut socket: tokio::net::TcpStream, pods: Api<Pod>, name: String, port: u16) {
    let mut forwarder = match pods.portforward(&name, &[port]).await {
        Ok(f) => f,
        Err(e) => {
            tracing::debug!(pod = %name, port, error = %e, "port-forward refused");
            return;
        }
    };
    let Some(mut upstream) = forwarder.take_stream(port) else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut socket, &mut upstream).await;
    drop(upstream);
    let _ = forwarder.join().await;
}

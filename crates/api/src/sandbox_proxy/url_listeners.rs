//! The sandboxes' own listeners (issue 31; API.md, Sandbox proxy, "Sandbox URLs"): for each
//! sandbox holding a port of `--sandbox-url-ports` and `STARTING`, `RUNNING` or `PAUSED`,
//! this replica listens on `<the --bind address>:<port>` and serves the whole app there,
//! every connection marked [`PortConnection`] so that each request goes to that sandbox's
//! agent server through the proxy (same authentication, limits and accounting as the path
//! form). The `url-ports` job ([`job`]) assigns the ports in the store and opens and closes
//! the listeners; a port that cannot be bound is logged and the sandbox's URL stays in the
//! path form on this replica ([`BoundPorts`] holds only what is bound).
//!
//! Connections are served by arbiters of their own (one thread each, as many as HTTP
//! workers), the listeners given out in turn. Each listener and each connection holds a
//! permit of the port form's share of the open-files budget (`Plan::new`'s `descriptors`):
//! without one, a listener is not opened (path form) and a connection waits in the kernel's backlog.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_http::HttpService;
use actix_service::{IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt, map_config};
use actix_web::dev::AppConfig;
use actix_web::web::Data;
use switchboard_domain::SandboxId;
use switchboard_domain::jobs::{Job, Schedule};
use switchboard_domain::ports::UrlPortStore;
use switchboard_domain::sandboxes::url_ports::{UrlPort, UrlPortRange};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::url_ports::{BoundPorts, PortConnection, UrlForm};
use crate::{AppState, create_app};

/// How often the job runs without a wake-up (a start, resume or delete wakes it).
pub const PERIOD: Duration = Duration::from_secs(1);
/// The keep-alive of a connection on a sandbox's port (as the main listener's).
const KEEP_ALIVE: Duration = Duration::from_secs(75);

/// What `serve` decided for the sandbox URLs before it runs: the form, the port range (the
/// port form only), the [`BoundPorts`] the proxy reads, and the listeners' address, share of
/// descriptors and threads.
pub struct Plan {
    /// The form shown.
    pub form: UrlForm,
    /// The ports this replica listens on, shared with the proxy's configuration.
    pub bound: BoundPorts,
    range: Option<UrlPortRange>,
    ip: IpAddr,
    descriptors: usize,
    threads: usize,
}

impl Plan {
    /// The plan of a server bound on `addr` showing the URL `form`, its sandboxes holding the
    /// ports of `range` (the port form; `None`: no port listeners), at most `descriptors`
    /// listeners and connections together (the port form's share of the open-files budget) on
    /// `threads` arbiters (as many as HTTP workers).
    pub fn new(
        form: UrlForm,
        range: Option<UrlPortRange>,
        addr: SocketAddr,
        descriptors: usize,
        threads: usize,
    ) -> Plan {
        Plan {
            form,
            bound: BoundPorts::default(),
            range,
            ip: addr.ip(),
            descriptors,
            threads,
        }
    }

    /// In the port form: the listeners serving `state`'s app, and their `url-ports` job over
    /// `store` for the server's supervisor to run (woken by starts, resumes and deletes).
    /// Must be called inside the actix system.
    pub fn start(
        self,
        state: Data<AppState>,
        store: Arc<dyn UrlPortStore>,
    ) -> Option<(Arc<UrlListeners>, Job)> {
        let range = self.range?;
        let listeners = Arc::new(UrlListeners::new(
            self.ip,
            state,
            self.bound,
            self.descriptors,
            self.threads,
        ));
        tracing::info!(ports = %range, "sandbox URLs in the port form");
        Some((listeners.clone(), job(store, range, listeners)))
    }
}

/// One open listener.
struct Open {
    port: u16,
    stop: CancellationToken,
}

/// The listeners of this replica's sandbox ports.
pub struct UrlListeners {
    ip: IpAddr,
    state: Data<AppState>,
    bound: BoundPorts,
    permits: Arc<Semaphore>,
    arbiters: Vec<actix_rt::ArbiterHandle>,
    next: AtomicUsize,
    open: Mutex<HashMap<SandboxId, Open>>,
    /// Ports whose bind failed, logged once each until they bind or are released.
    failed: Mutex<HashMap<SandboxId, u16>>,
    /// Set by [`UrlListeners::close_all`]: nothing opens after it.
    closed: AtomicBool,
}

impl UrlListeners {
    /// Listeners on `ip` (the main listener's address) serving `state`'s app, at most
    /// `descriptors` listeners and connections together, on `threads` arbiters; `bound` is the
    /// proxy's [`BoundPorts`]. Must be called inside the actix system.
    pub fn new(
        ip: IpAddr,
        state: Data<AppState>,
        bound: BoundPorts,
        descriptors: usize,
        threads: usize,
    ) -> Self {
        let arbiters = (0..threads.max(1))
            .map(|_| actix_rt::Arbiter::new().handle())
            .collect();
        UrlListeners {
            ip,
            state,
            bound,
            permits: Arc::new(Semaphore::new(descriptors)),
            arbiters,
            next: AtomicUsize::new(0),
            open: Mutex::new(HashMap::new()),
            failed: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Opens the listeners of `ports` that listen and are not open, and closes those of
    /// sandboxes no longer listed (deleted, ended) or whose port changed; a closed listener's
    /// connections end too.
    pub fn reconcile(&self, ports: &[UrlPort]) {
        let closed = self.closed.load(Ordering::SeqCst);
        let wanted: HashMap<SandboxId, u16> = ports
            .iter()
            .filter(|p| p.listens() && !closed)
            .map(|p| (p.sandbox, p.port))
            .collect();
        let mut open = self.open.lock().expect("listener map poisoned");
        open.retain(|sandbox, o| {
            let keep = wanted.get(sandbox) == Some(&o.port);
            if !keep {
                o.stop.cancel();
                self.bound.remove(*sandbox);
                tracing::debug!(%sandbox, port = o.port, "sandbox port closed");
            }
            keep
        });
        self.failed
            .lock()
            .expect("failure map poisoned")
            .retain(|s, p| wanted.get(s) == Some(p));
        for (&sandbox, &port) in &wanted {
            if open.contains_key(&sandbox) {
                continue;
            }
            if let Some(stop) = self.open_one(sandbox, port) {
                open.insert(sandbox, Open { port, stop });
            }
        }
    }

    /// Binds `port` for `sandbox` and starts serving it; `None` (logged once) when no permit
    /// is left or the port is taken.
    fn open_one(&self, sandbox: SandboxId, port: u16) -> Option<CancellationToken> {
        let addr = SocketAddr::new(self.ip, port);
        let bound = match self.permits.clone().try_acquire_owned() {
            Err(_) => Err(
                "no descriptor left in the port form's share of the open-files budget".to_owned(),
            ),
            Ok(permit) => TcpListener::bind(addr)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map(|l| (l, permit))
                .map_err(|e| e.to_string()),
        };
        let (listener, permit) = match bound {
            Ok(b) => b,
            Err(error) => {
                let mut failed = self.failed.lock().expect("failure map poisoned");
                if failed.insert(sandbox, port) != Some(port) {
                    tracing::warn!(%sandbox, %addr, %error, "sandbox port not bound; its URL stays in the path form on this replica");
                }
                return None;
            }
        };
        self.failed
            .lock()
            .expect("failure map poisoned")
            .remove(&sandbox);
        let stop = CancellationToken::new();
        let arbiter =
            &self.arbiters[self.next.fetch_add(1, Ordering::Relaxed) % self.arbiters.len()];
        let (state, permits, token) = (self.state.clone(), self.permits.clone(), stop.clone());
        let spawned = arbiter.spawn_fn(move || {
            actix_rt::spawn(serve(listener, sandbox, state, permits, permit, token));
        });
        if !spawned {
            tracing::warn!(%sandbox, %addr, "sandbox port not served: its arbiter has stopped");
            return None;
        }
        self.bound.insert(sandbox, port);
        tracing::debug!(%sandbox, %addr, "sandbox port open");
        Some(stop)
    }

    /// Closes every listener and its connections (at shutdown, once the main server stopped).
    pub fn close_all(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.reconcile(&[]);
        for a in &self.arbiters {
            a.stop();
        }
    }
}

/// Serves `listener` until `stop`: each connection accepted once a permit is free, served by
/// the app with [`PortConnection`] in its connection data, ended with `stop`.
async fn serve(
    listener: TcpListener,
    sandbox: SandboxId,
    state: Data<AppState>,
    permits: Arc<Semaphore>,
    _own: OwnedSemaphorePermit,
    stop: CancellationToken,
) {
    let addr = listener.local_addr().ok();
    let listener = match actix_rt::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(error) => {
            tracing::warn!(%sandbox, %error, "sandbox port not served");
            return;
        }
    };
    let mut builder = HttpService::build().keep_alive(KEEP_ALIVE).on_connect_ext(
        move |_: &actix_rt::net::TcpStream, ext| {
            ext.insert(PortConnection { sandbox });
        },
    );
    if let Some(addr) = addr {
        builder = builder.local_addr(addr);
    }
    let app = create_app(state)
        .into_factory()
        .map_err(|e: actix_web::Error| e.error_response());
    let factory = builder
        .finish(map_config(app, |()| AppConfig::default()))
        .tcp();
    let service = match factory.new_service(()).await {
        Ok(s) => Rc::new(s),
        Err(()) => {
            tracing::warn!(%sandbox, "sandbox port not served: the app did not start");
            return;
        }
    };
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => return,
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
        };
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::debug!(%sandbox, %error, "accept failed on a sandbox port");
                    actix_rt::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (service, stop) = (service.clone(), stop.clone());
        actix_rt::spawn(async move {
            let _permit = permit;
            tokio::select! {
                () = stop.cancelled() => {}
                _ = service.call(stream) => {}
            }
        });
    }
}

/// The `url-ports` job: every [`PERIOD`] and when woken, the ports assigned in the store
/// ([`UrlPortStore::sync_url_ports`]) and the listeners reconciled with them.
pub fn job(store: Arc<dyn UrlPortStore>, range: UrlPortRange, listeners: Arc<UrlListeners>) -> Job {
    Job::new("url-ports", Schedule::Woken(PERIOD), move || {
        let ports = store.sync_url_ports(range).map_err(|e| e.to_string())?;
        listeners.reconcile(&ports);
        Ok::<(), String>(())
    })
}

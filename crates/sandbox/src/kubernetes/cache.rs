//! The watch-fed caches of this installation's pods and claims (issue 32: "observe from a
//! watch-fed cache"): one list-then-watch per kind, filtered by the installation label and
//! kept by `kube-runtime`'s reflector, so observing a sandbox reads memory, never the API
//! server. Whether the watch is healthy is kept beside it: while it fails, what the cache says
//! may be stale, and the runtime answers "could not look" rather than "gone".

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use kube::Api;
use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

/// How long the API server keeps a watch open before it is made again (seconds): also how
/// soon, plus kube's margin, a watch on a dead connection is noticed.
const WATCH_TIMEOUT: u32 = 60;

/// One kind's cache and the health of the watch feeding it.
pub(super) struct Watched<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    healthy: Arc<AtomicBool>,
    namespace: String,
}

impl<K> Watched<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Starts watching `api`'s objects matching `selector` on `tokio` (the task lives as long
    /// as the runtime: the watch retries with backoff after each failure, logging it).
    pub(super) fn start(
        tokio: &tokio::runtime::Runtime,
        api: Api<K>,
        selector: &str,
        namespace: &str,
        kind: &'static str,
    ) -> Self {
        let (store, writer) = reflector::store();
        let healthy = Arc::new(AtomicBool::new(false));
        let flag = healthy.clone();
        let config = watcher::Config::default()
            .labels(selector)
            .timeout(WATCH_TIMEOUT);
        let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
        tokio.spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(_) => {
                        if !flag.swap(true, Ordering::Relaxed) {
                            tracing::info!(kind, "Kubernetes watch is up");
                        }
                    }
                    Err(e) => {
                        if flag.swap(false, Ordering::Relaxed) {
                            tracing::warn!(kind, error = %e, "Kubernetes watch failed; retrying");
                        }
                    }
                }
            }
        });
        Watched {
            store,
            healthy,
            namespace: namespace.to_owned(),
        }
    }

    /// Waits until the first listing is in (at most `timeout`).
    ///
    /// # Errors
    /// The listing did not arrive in time.
    pub(super) async fn ready(&self, timeout: std::time::Duration) -> Result<(), String> {
        match tokio::time::timeout(timeout, self.store.wait_until_ready()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no listing within {} s", timeout.as_secs())),
        }
    }

    /// Whether the watch answered last time it was asked (its last event was not an error).
    pub(super) fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// The cached object named `name`, if any.
    pub(super) fn get(&self, name: &str) -> Option<Arc<K>> {
        self.store
            .get(&ObjectRef::new(name).within(&self.namespace))
    }

    /// Every cached object.
    pub(super) fn all(&self) -> Vec<Arc<K>> {
        self.store.state()
    }
}

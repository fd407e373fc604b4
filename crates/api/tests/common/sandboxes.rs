//! The app running real sandboxes: the process runtime under a temporary directory, specs
//! running the stand-in agent server (and two that fail), and a thread calling the same
//! background passes the binary's supervisor runs (launch, reconcile, warm pool, cleanup, and
//! the conversation-start job: its upkeep, and each claimed start on a worker of its own).
//! Dropping a [`SandboxApp`] stops the thread and kills every sandbox it started.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::identity::sealing::Sealer;
use switchboard_domain::ports::SandboxStore;
use switchboard_domain::sandboxes::runtime::{
    RuntimeHandle, SandboxRuntime, SandboxStatus, StatusPolicy,
};
use switchboard_domain::sandboxes::services::ExposedService;
use switchboard_domain::sandboxes::settings::{ManagedSandboxes, Runtimes, SandboxSettings};
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_domain::{SandboxId, Switchboard};
use switchboard_sandbox::{HttpAgentServerClient, ProcessIdentity, ProcessRuntime};
use switchboard_testkit::Backend;

use super::{TestApp, spawn_app_on_with_state, status_json};

/// The default spec: the stand-in agent server.
pub const STANDIN: &str = "standin";
/// A spec whose program does not exist: `ERROR` at launch.
pub const NO_SUCH_COMMAND: &str = "no-such-command";
/// The stand-in told to exit during start: `ERROR`.
pub const CRASHES: &str = "crashes";

/// Options of [`spawn_sandbox_app`].
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// `--warm-sandboxes`.
    pub warm: u32,
    /// `--max-running-sandboxes`.
    pub max_running: u32,
    /// `--max-sandboxes-per-user`.
    pub max_per_user: u32,
    /// `--max-sandboxes-per-org`.
    pub max_per_org: Option<u32>,
    /// `--allow-local-repositories`.
    pub local_repositories: Vec<std::path::PathBuf>,
    /// `--git-provider-url KEY=URL`.
    pub git_provider_urls: std::collections::BTreeMap<String, String>,
    /// The sandbox proxy's configuration (issue 22); its public URL, when `None`, is the
    /// app's own address. `None`: the defaults, URLs shown as the sandboxes' own.
    pub proxy: Option<switchboard_api::sandbox_proxy::ProxyConfig>,
    /// More specs running the stand-in, each exposing these services besides its agent
    /// server (issue 22: `VSCODE`, `WORKER_1`, `WORKER_2`).
    pub exposing: Vec<(&'static str, Vec<ExposedService>)>,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            warm: 0,
            max_running: 5,
            max_per_user: switchboard_domain::sandboxes::settings::DEFAULT_MAX_SANDBOXES_PER_USER,
            max_per_org: None,
            local_repositories: Vec::new(),
            git_provider_urls: std::collections::BTreeMap::new(),
            proxy: None,
            exposing: Vec::new(),
        }
    }
}

/// The app and its sandbox machinery.
pub struct SandboxApp {
    pub app: TestApp,
    pub runtime: Arc<ProcessRuntime>,
    /// What the app's sandbox service runs with (for a second replica over the same
    /// database).
    pub managed: ManagedSandboxes,
    stop: Arc<AtomicBool>,
    passes: Option<JoinHandle<()>>,
    _root: tempfile::TempDir,
}

impl Deref for SandboxApp {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// The Python interpreter itself (not a version manager's shim).
pub fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs the stand-in agent server");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn spec(id: &str, command: Vec<String>, env: &[(&str, &str)]) -> SandboxSpec {
    SandboxSpec {
        id: id.to_owned(),
        command,
        initial_env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
        working_dir: ".".into(),
        limits: Default::default(),
        created_at: time::OffsetDateTime::now_utc(),
        runtime: None,
        exposed_services: Vec::new(),
        egress: Default::default(),
    }
}

/// Starts the app with sandboxes run by the process runtime.
pub async fn spawn_sandbox_app(backend: Backend, options: SandboxOptions) -> SandboxApp {
    spawn_sandbox_app_with(backend, options, &[], |s| s).await
}

/// As [`spawn_sandbox_app`], with more specs (`(id, STANDIN_MODE)`: the stand-in in that
/// mode) and the services passed through `configure` last. Sandboxes post their webhooks to
/// the app.
pub async fn spawn_sandbox_app_with(
    backend: Backend,
    options: SandboxOptions,
    standin_modes: &[(&str, &str)],
    configure: impl FnOnce(Switchboard) -> Switchboard,
) -> SandboxApp {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = tempfile::TempDir::new().unwrap();
    let runtime = Arc::new(
        ProcessRuntime::new(root.path().join("sandboxes"))
            .with_stop_timeout(Duration::from_secs(3)),
    );
    let standin = vec![
        python(),
        switchboard_testkit::standin_agent_server()
            .display()
            .to_string(),
    ];
    let passthrough = ["PATH", "HOME", "LANG"]
        .into_iter()
        .filter_map(|n| Some((n.to_owned(), std::env::var(n).ok()?)))
        .collect();
    let mut specs = vec![
        spec(STANDIN, standin.clone(), &[]),
        spec(NO_SUCH_COMMAND, vec!["no-such-program-xyz".into()], &[]),
        spec(
            CRASHES,
            standin.clone(),
            &[("STANDIN_MODE", "crash-on-start")],
        ),
    ];
    for (id, mode) in standin_modes {
        specs.push(spec(id, standin.clone(), &[("STANDIN_MODE", mode)]));
    }
    for (id, services) in &options.exposing {
        let mut s = spec(id, standin.clone(), &[]);
        s.exposed_services.clone_from(services);
        specs.push(s);
    }
    let managed = ManagedSandboxes {
        settings: SandboxSettings {
            specs,
            default_runtime: "process".into(),
            webhook_base_url: format!("http://127.0.0.1:{port}/api/v1/webhooks"),
            llm_proxy_url: None,
            passthrough_env: passthrough,
            policy: StatusPolicy {
                start_timeout: Duration::from_secs(60),
                health_grace: Duration::from_secs(30),
            },
            max_running_per_user: options.max_running,
            max_sandboxes_per_user: options.max_per_user,
            max_sandboxes_per_org: options.max_per_org,
            warm_sandboxes: options.warm,
            max_conversations_per_sandbox:
                switchboard_domain::sandboxes::grouping::DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX,
            probe_timeout: Duration::from_secs(2),
            local_repositories: options.local_repositories.clone(),
            git_provider_urls: options.git_provider_urls.clone(),
        },
        runtimes: Runtimes::new().with(runtime.clone() as Arc<dyn SandboxRuntime>),
        client: Arc::new(HttpAgentServerClient::new()),
        sealer: Sealer::new(&Sealer::generate_key()),
        observer: None,
        wake: None,
        event_streams: None,
    };
    let kept = managed.clone();
    let proxy = options.proxy.clone().map(|mut p| {
        p.public_url
            .get_or_insert(format!("http://127.0.0.1:{port}"));
        p
    });
    let app = spawn_app_on_with_state(
        backend,
        switchboard_api::extract::BodyLimits::default(),
        listener,
        move |s: Switchboard| configure(s.with_managed_sandboxes(managed)),
        move |state| match proxy {
            Some(p) => state.with_proxy(p),
            None => state,
        },
    )
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let services = app.services.clone();
    let flag = stop.clone();
    let passes = std::thread::spawn(move || {
        let s = services.sandboxes();
        while !flag.load(Ordering::SeqCst) {
            let starts = services.conversation_start();
            for result in [
                s.advance_starting(),
                s.reconcile(),
                s.refill_warm_pool(),
                s.clean_up_deleted(),
                starts.keep_claims(),
            ] {
                if let Err(e) = result {
                    eprintln!("background pass failed: {e}");
                }
            }
            // The conversation-start job's pool: every claimed start on a worker of its own.
            loop {
                match starts.claim_next() {
                    Ok(Some(work)) => drop(std::thread::spawn(work)),
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("claiming a start failed: {e}");
                        break;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    SandboxApp {
        app,
        runtime,
        managed: kept,
        stop,
        passes: Some(passes),
        _root: root,
    }
}

impl Drop for SandboxApp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(p) = self.passes.take() {
            let _ = p.join();
        }
        // Kill whatever is still running, deleted or not.
        let store = self.app.store.clone();
        let mut records = store.live_sandboxes().unwrap_or_default();
        records.extend(store.pending_cleanups().unwrap_or_default());
        for r in records {
            if let Some(h) = r
                .handle
                .as_deref()
                .and_then(|h| RuntimeHandle::from_json(h).ok())
            {
                let _ = self.runtime.delete(&h);
            }
        }
    }
}

impl SandboxApp {
    /// `method path` with `key` and an optional JSON body: status and JSON body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut r = self.req(method, path, key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        status_json(r.send().await.unwrap()).await
    }

    /// Starts a sandbox of `spec` (query form) as `key`; must be 200.
    pub async fn start(&self, key: &str, spec: Option<&str>) -> Value {
        let path = match spec {
            Some(s) => format!("/api/v1/sandboxes?sandbox_spec_id={s}"),
            None => "/api/v1/sandboxes".to_owned(),
        };
        let (status, body) = self.call(Method::POST, &path, Some(key), None).await;
        assert_eq!(status, 200, "{}: start: {body}", self.backend);
        body
    }

    /// The sandbox as `key` sees it through the batch get (`null` when not visible).
    pub async fn info(&self, key: &str, id: &str) -> Value {
        let (status, body) = self
            .call(
                Method::GET,
                &format!("/api/v1/sandboxes?id={id}"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(status, 200, "{}: get: {body}", self.backend);
        body[0].clone()
    }

    /// Waits until the sandbox shows `status` to `key` (at most 30 s); returns it.
    pub async fn wait_status(&self, key: &str, id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = self.info(key, id).await;
            if info["status"] == status {
                return info;
            }
            assert!(
                Instant::now() < deadline,
                "{}: sandbox {id} is still {} (waiting for {status})",
                self.backend,
                info["status"]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The stored record of a sandbox (deleted ones too).
    pub fn record(
        &self,
        id: &str,
    ) -> Option<switchboard_domain::sandboxes::records::SandboxRecord> {
        let id: SandboxId = id.parse().unwrap();
        let mut all = self.store.live_sandboxes().unwrap();
        all.extend(self.store.pending_cleanups().unwrap());
        all.into_iter().find(|r| r.id == id)
    }

    /// The process of a launched sandbox.
    pub fn process(&self, id: &str) -> ProcessIdentity {
        let record = self.record(id).expect("a stored sandbox");
        let handle = RuntimeHandle::from_json(record.handle.as_deref().expect("launched")).unwrap();
        ProcessIdentity::of(&handle).unwrap()
    }

    /// The statuses of the warm pool's sandboxes.
    pub fn pool(&self) -> Vec<SandboxStatus> {
        self.store
            .live_sandboxes()
            .unwrap()
            .into_iter()
            .filter(|r| r.org_id.is_none())
            .map(|r| r.status)
            .collect()
    }
}

/// `{"success": true}`.
pub fn success() -> Value {
    json!({"success": true})
}

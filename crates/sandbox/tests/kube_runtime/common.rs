//! Helpers: a Kubernetes runtime with an installation id of its own per test, launch specs for
//! the agent-server image, `kubectl` acting behind the runtime's back, and a guard that
//! removes every object of the test's installation when it ends, even by panic.
//!
//! The cluster is the one `SWITCHBOARD_TEST_KUBECONFIG` names, else
//! `${KUBE_STATE:-$TMPDIR/switchboard-kube}/admin.kubeconfig` (what `scripts/kube-cluster.sh
//! up` writes). Without it, each test prints why and returns; with `SWITCHBOARD_REQUIRE_KUBE=1`
//! (CI, where the cluster is provided) it fails instead.

use std::io::Read;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_domain::SandboxId;
use switchboard_domain::sandboxes::agent_workspace::{AgentServerWorkspace, FileAnswer};
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, LaunchSpec, RuntimeHandle, SandboxRuntime, SessionKey,
};
use switchboard_domain::sandboxes::specs::{SandboxSpec, docker_preset};
use switchboard_sandbox::kubernetes::LABEL_INSTALLATION;
use switchboard_sandbox::{HttpAgentServerClient, KubernetesConfig, KubernetesRuntime};

/// The image the tests run (built by `scripts/agent-server-image.sh`, imported into each node
/// by `scripts/kube-cluster.sh up`).
pub const IMAGE: &str = "switchboard/agent-server:local";
/// The namespace `scripts/kube-cluster.sh up` makes.
pub const NAMESPACE: &str = "switchboard-sandboxes";
/// The webhook URL given to every test sandbox (nothing listens there; not needed here).
pub const WEBHOOK_URL: &str = "http://10.89.0.1:9/api/v1/webhooks";
/// Every installation id of these tests starts so.
const INSTALLATION_PREFIX: &str = "sbtest-";
/// How long a pod may take to answer `/alive` (19 to 41 s to Ready measured by the cluster's
/// smoke check on a loaded machine).
pub const ALIVE_LIMIT: Duration = Duration::from_secs(300);

/// The kubeconfig of the test cluster, if there is one.
pub fn kubeconfig() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SWITCHBOARD_TEST_KUBECONFIG") {
        return Some(PathBuf::from(path));
    }
    let state = std::env::var_os("KUBE_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-kube"));
    let path = state.join("admin.kubeconfig");
    path.is_file().then_some(path)
}

/// `kubectl` on the test cluster, in [`NAMESPACE`].
pub struct Kubectl {
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs `kubectl args…`: its stdout, or its stderr as the error.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["-n", NAMESPACE])
            .args(args)
            .output()
            .map_err(|e| format!("running kubectl: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The object `kind/name` as JSON, or `None` when it is not there.
    pub fn get(&self, kind: &str, name: &str) -> Option<Value> {
        match self.run(&["get", kind, name, "-o", "json"]) {
            Ok(text) => Some(serde_json::from_str(&text).unwrap()),
            Err(e) if e.contains("NotFound") => None,
            Err(e) => panic!("kubectl get {kind} {name}: {e}"),
        }
    }

    /// The names of the objects of `kind` labelled `selector`.
    pub fn names(&self, kind: &str, selector: &str) -> Vec<String> {
        let text = self
            .run(&["get", kind, "-l", selector, "-o", "json"])
            .unwrap();
        let list: Value = serde_json::from_str(&text).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// A runtime of a fresh installation, and the guard that removes its objects.
pub struct Fixture {
    pub runtime: KubernetesRuntime,
    pub client: HttpAgentServerClient,
    pub kubectl: Kubectl,
    pub installation: String,
    pub kubeconfig: PathBuf,
}

impl Fixture {
    /// A runtime of the defaults, or `None` (with the reason printed) without a cluster.
    pub fn new(test: &str) -> Option<Fixture> {
        Self::with(test, |_| {})
    }

    /// A runtime configured by `configure`, or `None` as [`Fixture::new`].
    pub fn with(test: &str, configure: impl FnOnce(&mut KubernetesConfig)) -> Option<Self> {
        let Some(kubeconfig) = kubeconfig() else {
            return skip(
                test,
                "no test cluster (scripts/kube-cluster.sh up, or SWITCHBOARD_TEST_KUBECONFIG)",
            );
        };
        let installation = new_installation();
        let mut config = KubernetesConfig::new(&installation, NAMESPACE);
        config.stop_timeout = Duration::from_secs(3);
        config.image_pull_policy = "Never".into();
        config.workspace_size = "1Gi".into();
        configure(&mut config);
        let runtime = match KubernetesRuntime::connect(Some(&kubeconfig), config) {
            Ok(r) => r,
            Err(e) => return skip(test, &format!("the test cluster cannot be used: {e}")),
        };
        Some(Fixture {
            runtime,
            client: HttpAgentServerClient::new(),
            kubectl: Kubectl {
                kubeconfig: kubeconfig.clone(),
            },
            installation,
            kubeconfig,
        })
    }

    /// The selector of this fixture's objects.
    pub fn selector(&self) -> String {
        format!("{LABEL_INSTALLATION}={}", self.installation)
    }

    /// Waits until `/alive` answers at `handle`'s address (or panics with the pod's log).
    pub fn wait_alive(&self, handle: &RuntimeHandle) -> Duration {
        let began = Instant::now();
        let ok = wait_until(ALIVE_LIMIT, || {
            self.client
                .alive(&handle.agent_server_url, Duration::from_secs(1))
                .is_ok()
        });
        assert!(
            ok,
            "{} never answered /alive; log:\n{}",
            handle.agent_server_url,
            self.runtime.log_tail(handle, 30).unwrap_or_default()
        );
        began.elapsed()
    }

    /// Writes `text` at `path` in the sandbox through its agent server.
    pub fn write(&self, handle: &RuntimeHandle, key: &SessionKey, path: &str, text: &str) {
        self.client
            .upload_file(&handle.agent_server_url, key, path, text.as_bytes())
            .unwrap();
    }

    /// The file at `path` in the sandbox, read through its agent server.
    pub fn read(&self, handle: &RuntimeHandle, key: &SessionKey, path: &str) -> Option<String> {
        match self
            .client
            .download_file(&handle.agent_server_url, key, path)
            .unwrap()
        {
            FileAnswer::Found { mut body, .. } => {
                let mut text = String::new();
                body.read_to_string(&mut text).unwrap();
                Some(text)
            }
            _ => None,
        }
    }

    /// Whether none of this fixture's pods, claims and secrets is left.
    pub fn nothing_left(&self) -> bool {
        let selector = self.selector();
        ["pods", "pvc", "secrets"]
            .iter()
            .all(|kind| self.kubectl.names(kind, &selector).is_empty())
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let selector = self.selector();
        let _ = self.kubectl.run(&[
            "delete",
            "pods,pvc,secrets",
            "-l",
            &selector,
            "--wait=false",
        ]);
    }
}

/// The built-in container preset for [`IMAGE`].
pub fn preset() -> SandboxSpec {
    docker_preset(IMAGE, time::OffsetDateTime::now_utc()).unwrap()
}

/// A launch spec for `spec`, with a fresh id and session key.
pub fn launch_spec(spec: SandboxSpec) -> LaunchSpec {
    LaunchSpec {
        sandbox_id: SandboxId::new_random(),
        spec,
        session_key: SessionKey::generate(),
        webhook_base_url: WEBHOOK_URL.into(),
        passthrough_env: vec![("SWITCHBOARD_TEST_PASSTHROUGH".into(), "passed".into())],
        local_repositories: Vec::new(),
        org_id: None,
        owner_id: None,
    }
}

/// Polls `check` every 250 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(250));
    }
}

fn skip<T>(test: &str, reason: &str) -> Option<T> {
    if std::env::var("SWITCHBOARD_REQUIRE_KUBE").is_ok_and(|v| v == "1") {
        panic!("{test}: {reason} (SWITCHBOARD_REQUIRE_KUBE=1)");
    }
    println!("skipped {test}: {reason}");
    None
}

fn new_installation() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = SandboxId::new_random().to_string();
    format!(
        "{INSTALLATION_PREFIX}{}-{n}-{}",
        std::process::id(),
        &random[..8]
    )
}

//! Helpers: a runtime in a temporary directory, launch specs for the stand-in agent server,
//! and a guard that kills every started process group when a test ends, even by panic.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use switchboard_domain::SandboxId;
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, BashCommand, BashOutcome, LaunchSpec, Observed, RuntimeHandle,
    SandboxRuntime, SessionKey,
};
use switchboard_domain::sandboxes::specs::SandboxSpec;
use switchboard_sandbox::procfs;
use switchboard_sandbox::{
    Bwrap, DEFAULT_UID_RANGE, HttpAgentServerClient, Isolation, ProcessIdentity, ProcessRuntime,
};
use tempfile::TempDir;

/// The probe timeout used by the tests.
pub const PROBE: Duration = Duration::from_millis(300);

/// The webhook URL given to every test sandbox.
pub const WEBHOOK_URL: &str = "http://127.0.0.1:9/api/v1/webhooks";

/// The Python interpreter itself (not a version manager's shim), found once.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("python3 must be installed to run the stand-in agent server");
            assert!(out.status.success(), "python3 failed: {out:?}");
            PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
        })
        .clone()
}

/// A runtime under a fresh temporary directory.
pub struct Fixture {
    pub root: TempDir,
    pub runtime: ProcessRuntime,
    pub client: HttpAgentServerClient,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_stop_timeout(Duration::from_secs(5))
    }

    pub fn with_stop_timeout(stop_timeout: Duration) -> Self {
        let root = TempDir::new().unwrap();
        let runtime =
            ProcessRuntime::new(root.path().join("sandboxes")).with_stop_timeout(stop_timeout);
        Fixture {
            root,
            runtime,
            client: HttpAgentServerClient::new(),
        }
    }

    /// A runtime confined by bwrap as the binary confines it by default (issue 18; each
    /// sandbox with a network of its own, issue 33), hiding `hidden` besides the fixture's
    /// directory (its stand-in for Switchboard's data directory). Panics when bwrap or pasta
    /// cannot confine here: CI installs bubblewrap and passt (`.ci/run`).
    pub fn confined(hidden: Vec<PathBuf>) -> Self {
        Self::confined_with(hidden, Some(Vec::new()))
    }

    /// As [`Fixture::confined`], each sandbox in a control group of its own (issue 33).
    pub fn confined_in_groups(groups: switchboard_sandbox::SandboxGroups) -> Self {
        let fx = Self::confined(Vec::new());
        Fixture {
            runtime: fx.runtime.with_groups(groups),
            ..fx
        }
    }

    /// As [`Fixture::confined`], each sandbox's directory a file system of its own (issue 33).
    pub fn confined_with_quota(quota: switchboard_sandbox::WorkspaceQuota) -> Self {
        let fx = Self::confined(Vec::new());
        Fixture {
            runtime: fx.runtime.with_workspace_quota(quota),
            ..fx
        }
    }

    /// As [`Fixture::confined`], with the operator's `network` policy (egress ranges, host
    /// ports).
    pub fn confined_with_policy(network: switchboard_sandbox::NetworkPolicy) -> Self {
        Self::confined_with_network(Vec::new(), Some(network))
    }

    /// As [`Fixture::confined`], with `host_ports` as the host loopback ports sandboxes may
    /// reach (`--sandbox-host-port`); `None`: on the host's network (`--sandbox-network host`).
    pub fn confined_with(hidden: Vec<PathBuf>, host_ports: Option<Vec<u16>>) -> Self {
        let network = host_ports.map(|host_ports| switchboard_sandbox::NetworkPolicy {
            host_ports,
            ..Default::default()
        });
        Self::confined_with_network(hidden, network)
    }

    fn confined_with_network(
        hidden: Vec<PathBuf>,
        network: Option<switchboard_sandbox::NetworkPolicy>,
    ) -> Self {
        let root = TempDir::new().unwrap();
        let mut hide = vec![root.path().to_path_buf()];
        hide.extend(hidden);
        let bwrap = Bwrap::detect(DEFAULT_UID_RANGE, hide, network)
            .unwrap_or_else(|e| panic!("the confinement tests need bwrap, pasta and nft: {e}"));
        let runtime = ProcessRuntime::new(root.path().join("sandboxes"))
            .with_stop_timeout(Duration::from_secs(5))
            .with_isolation(Isolation::Bwrap(Box::new(bwrap)));
        Fixture {
            root,
            runtime,
            client: HttpAgentServerClient::new(),
        }
    }

    /// Runs `command` through the agent server's own command API
    /// (`POST /api/bash/execute_bash_command`), as an agent (or an attacker) does.
    pub fn bash(&self, sandbox: &Sandbox, key: &SessionKey, command: &str) -> BashOutcome {
        self.client
            .execute_bash(
                &sandbox.handle.agent_server_url,
                key,
                &BashCommand {
                    command: command.to_owned(),
                    cwd: None,
                    timeout_secs: 60,
                },
            )
            .unwrap_or_else(|e| panic!("the command API failed for {command:?}: {e}"))
    }

    /// Starts the stand-in with `STANDIN_MODE=mode` and `STANDIN_FORK=fork`.
    pub fn start(&self, mode: &str, fork: usize) -> Sandbox {
        let handle = self
            .runtime
            .start(&launch_spec(mode, fork))
            .expect("the stand-in starts");
        Sandbox::new(handle)
    }

    /// Waits until `/alive` answers (or panics with the sandbox's log).
    pub fn wait_alive(&self, sandbox: &Sandbox) {
        let ok = wait_until(Duration::from_secs(20), || {
            self.client
                .alive(&sandbox.handle.agent_server_url, PROBE)
                .is_ok()
        });
        assert!(
            ok,
            "the stand-in never answered /alive; log:\n{}",
            self.runtime
                .log_tail(&sandbox.handle, 20)
                .unwrap_or_default()
        );
    }

    pub fn wait_observed(&self, handle: &RuntimeHandle, what: fn(&Observed) -> bool) -> Observed {
        let mut last = self.runtime.observe(handle);
        let ok = wait_until(Duration::from_secs(10), || {
            last = self.runtime.observe(handle);
            what(&last)
        });
        assert!(ok, "still {last:?}");
        last
    }
}

/// A launch spec running the stand-in agent server.
pub fn launch_spec(mode: &str, fork: usize) -> LaunchSpec {
    let command = vec![
        python().display().to_string(),
        switchboard_testkit::standin_agent_server()
            .display()
            .to_string(),
    ];
    let initial_env: BTreeMap<String, String> = [
        ("STANDIN_MODE".to_owned(), mode.to_owned()),
        ("STANDIN_FORK".to_owned(), fork.to_string()),
    ]
    .into();
    LaunchSpec {
        sandbox_id: SandboxId::new_random(),
        spec: SandboxSpec {
            id: "standin".into(),
            command,
            initial_env,
            working_dir: ".".into(),
            limits: Default::default(),
            created_at: time::OffsetDateTime::now_utc(),
            runtime: None,
            exposed_services: Vec::new(),
            egress: Default::default(),
        },
        session_key: SessionKey::generate(),
        webhook_base_url: WEBHOOK_URL.into(),
        passthrough_env: passthrough(),
        local_repositories: Vec::new(),
        org_id: None,
        owner_id: None,
    }
}

/// `PATH`, `HOME` and `LANG` of this process, as Switchboard passes them through.
pub fn passthrough() -> Vec<(String, String)> {
    ["PATH", "HOME", "LANG"]
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), std::env::var(name).ok()?)))
        .collect()
}

/// A started sandbox whose whole process group is killed when it is dropped.
pub struct Sandbox {
    pub handle: RuntimeHandle,
    pub identity: ProcessIdentity,
}

impl Sandbox {
    pub fn new(handle: RuntimeHandle) -> Self {
        let identity = ProcessIdentity::of(&handle).unwrap();
        Sandbox { handle, identity }
    }

    pub fn pid(&self) -> u32 {
        self.identity.pid
    }

    /// The state letters of the group's live members.
    pub fn group_states(&self) -> Vec<char> {
        procfs::live_group_members(self.pid())
            .iter()
            .map(|s| s.state)
            .collect()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        kill_group_if_ours(self.identity);
    }
}

/// SIGKILL to the group of `identity`, unless its pid now belongs to another process, and
/// to its pid namespace's init (which ends the namespace), if it has one.
pub fn kill_group_if_ours(identity: ProcessIdentity) {
    let ours = procfs::read_stat(identity.pid).is_none_or(|s| s.start_time == identity.start_time);
    if ours && !procfs::live_group_members(identity.pid).is_empty() {
        let pgid = Pid::from_raw(identity.pid as i32).unwrap();
        let _ = kill_process_group(pgid, Signal::KILL);
    }
    if let Some(ns) = identity.namespace
        && ns.init().is_some()
    {
        let _ =
            rustix::process::kill_process(Pid::from_raw(ns.init_pid as i32).unwrap(), Signal::KILL);
    }
}

/// Polls `check` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// `GET url` as JSON, without any proxy.
pub fn get_json(url: &str) -> serde_json::Value {
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().proxy(None).build());
    let text = agent
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .body_mut()
        .read_to_string()
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

//! The process runtime: each sandbox is an agent server run as a local process, in a process
//! group of its own, from a directory of its own, with a clean environment (issue 9, "the
//! process runtime"), confined by `bwrap` unless the operator said otherwise (issue 18,
//! [`crate::confine`]).
//!
//! - **Start**: a free loopback port; the directory `<sandboxes_root>/<sandbox_id>/` (mode
//!   0700; confined as root: given to the sandbox's own user, [`crate::uids`]) with
//!   [`WORKSPACE_DIR`]`/`[`PROJECT_DIR`] in it (confined: seen at `/workspace`, so the
//!   handle's `project_dir` is `/workspace/project`; unconfined: its host path); the spec's
//!   command + `--host 127.0.0.1 --port <port>`; the environment cleared, then
//!   [`launch::environment`] (confined: `HOME` is the sandbox's directory); stdin closed;
//!   stdout and stderr appended to [`LOG_FILE`] in the sandbox's directory (capped by
//!   [`ProcessRuntime::trim_logs`]). Unconfined: `process_group(0)`; confined: `setsid bwrap
//!   …`, whose pid namespace is found at once and kept in the handle. A thread per sandbox
//!   waits for the process, so an ended child is reaped at once and its exit status is kept
//!   for [`Observed::Exited`].
//! - **Identity**: the pid and its start time (`/proc/<pid>/stat` field 22), kept in the
//!   handle; a process with that pid but another start time is not the sandbox. Confined:
//!   also its user id and its pid namespace (inode, and its init's pid and start time), so a
//!   restarted Switchboard finds every process of the sandbox again.
//! - **Port**: bound on `127.0.0.1:0` and released to the child; kept reserved by this runtime
//!   until delete, so concurrent starts never get the same port. Each service the spec
//!   exposes besides the agent server (`VSCODE`, `WORKER_1`, `WORKER_2`) gets one the same
//!   way, told to the sandbox as `WORKER_1=<port>` (and so on) in its environment. Confined
//!   with a network of its own (the default, issue 33; [`crate::confine::network`]), the
//!   sandbox listens on those ports on its own loopback and `pasta`, started once `bwrap` has
//!   made the namespaces, holds them on the host's ([`NetworkHelper`] in the handle).
//! - **Pause / resume**: SIGSTOP / SIGCONT to every process of the sandbox (its group, and
//!   confined, its pid namespace: also what left the group, such as a daemonized `tmux`);
//!   they return once all show the new state, so the status that follows is already
//!   `PAUSED` (or not).
//! - **Delete**: SIGTERM (and SIGCONT, so paused processes can act on it) to every process,
//!   up to the stop timeout (default 10 s) for all to end, SIGKILL (confined: to the
//!   namespace's init, which ends every process in it), then the sandbox's directory is
//!   removed; a sandbox whose processes could not all be ended keeps its directory (and so its
//!   user id) until a later cleanup succeeds.
//!
//! Processes whose parent ends are re-parented to the system's init, which reaps them; in a
//! container, run Switchboard under an init (`docker run --init`, tini).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::Ipv4Addr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use switchboard_domain::sandboxes::listeners::ListenerCheck;
use switchboard_domain::sandboxes::runtime::{
    LaunchSpec, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};
use switchboard_domain::sandboxes::services::ServiceEndpoint;
use switchboard_domain::sandboxes::workspace_dirs::SANDBOX_PROJECT_DIR;

use crate::cgroups::SandboxGroups;
use crate::confine::Isolation;
use crate::launch;
use crate::procfs::{self, ProcStat};
use crate::workspace_quota::WorkspaceQuota;

mod confined;
mod host_share;
mod identity;
mod listener;
mod log;
mod log_cap;
mod members;
mod network;
mod ports;
mod preflight;
mod waits;
mod workspace;

pub use crate::logs::LOG_FILE;
pub use confined::ETC_DIR;
pub use identity::{NetworkHelper, PidNamespace, ProcessIdentity, RUNTIME_NAME};
pub use network::NET_DIR;
pub use preflight::CommandCheck;
pub use workspace::{PROJECT_DIR, WORKSPACE_DIR, project_dir};

use confined::io_error;
use waits::{KILL_WAIT, wait_for};

/// The address every sandbox listens on.
pub const LISTEN_HOST: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// How long delete waits after SIGTERM before SIGKILL, unless configured (issue 9: 10 s).
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Stack of a child's waiting thread. 64 KiB was too little: when a paused or deleted
/// sandbox's child ended, freeing memory on that thread ran jemalloc's deallocation paths past
/// the end of the stack and Switchboard died of SIGSEGV (found by the generated-input run,
/// issue 13; `sandbox_waiter_survives_many_exits` in tests/process_runtime). Reserved address
/// space only: pages are touched as used.
const WAITER_STACK: usize = 512 * 1024;
/// How long a confined start waits for `bwrap` to make the sandbox's pid namespace.
const NAMESPACE_WAIT: Duration = Duration::from_secs(5);
/// How long [`ProcessRuntime::observe`] waits for an ended child to be reaped, to tell its
/// exit status.
const REAP_WAIT: Duration = Duration::from_millis(200);
/// The most bytes [`SandboxRuntime::log_tail`] reads from the end of a log.
const LOG_TAIL_BYTES: u64 = 64 * 1024;

/// A child of this runtime, as its waiting thread knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ChildState {
    /// Not ended yet (or ended and not yet reaped).
    Waiting,
    /// Reaped; how it ended (`exit status: 3`, `signal: 9 (SIGKILL)`).
    Exited(String),
}

/// Every live process of the sandbox of `handle` (its group's and, confined, its pid
/// namespace's), as `/proc` shows them: what pause stops and delete ends.
///
/// # Errors
/// [`RuntimeError::BadHandle`] for a handle this runtime did not make.
pub fn sandbox_processes(handle: &RuntimeHandle) -> Result<Vec<ProcStat>, RuntimeError> {
    Ok(members::live_members(ProcessIdentity::of(handle)?))
}

/// The process runtime; one per Switchboard (cheap to share behind an `Arc`). A fresh one,
/// as after a restart, finds the sandboxes of earlier ones from their handles.
#[derive(Debug)]
pub struct ProcessRuntime {
    sandboxes_root: PathBuf,
    stop_timeout: Duration,
    isolation: Isolation,
    /// User ids taken by starts whose directory is not yet given to them.
    held_uids: Mutex<HashSet<u32>>,
    /// Confined sandboxes' control groups (issue 33): their limits enforced by the kernel.
    groups: Option<SandboxGroups>,
    /// Confined sandboxes' file systems of fixed size (issue 33).
    workspace_quota: Option<WorkspaceQuota>,
    /// The children this runtime started and has not deleted: waited for by a thread each,
    /// which records how they ended.
    children: Arc<Mutex<HashMap<ProcessIdentity, ChildState>>>,
}

impl ProcessRuntime {
    /// A runtime whose sandboxes live under `sandboxes_root` (created on first start, mode
    /// 0700), unconfined ([`Isolation::None`]; the binary confines with
    /// [`ProcessRuntime::with_isolation`]), with the default stop timeout
    /// ([`DEFAULT_STOP_TIMEOUT`]).
    pub fn new(sandboxes_root: impl Into<PathBuf>) -> Self {
        ProcessRuntime {
            sandboxes_root: sandboxes_root.into(),
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            isolation: Isolation::None,
            held_uids: Mutex::new(HashSet::new()),
            groups: None,
            workspace_quota: None,
            children: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Sets how long delete waits after SIGTERM before SIGKILL.
    #[must_use]
    pub fn with_stop_timeout(mut self, stop_timeout: Duration) -> Self {
        self.stop_timeout = stop_timeout;
        self
    }

    /// Sets how sandboxes started from now on are confined (issue 18). Sandboxes already
    /// running keep what they were started with: their handle says.
    #[must_use]
    pub fn with_isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Gives each confined sandboxes started from now on a control group of its own, with
    /// its spec's memory and CPU limits and `groups`' process cap (issue 33).
    #[must_use]
    pub fn with_groups(mut self, groups: SandboxGroups) -> Self {
        self.groups = Some(groups);
        self
    }

    /// Gives each confined sandbox started from now on a file system of its own of fixed
    /// size, mounted over its directory (issue 33).
    #[must_use]
    pub fn with_workspace_quota(mut self, quota: WorkspaceQuota) -> Self {
        self.workspace_quota = Some(quota);
        self
    }

    /// How sandboxes are confined.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// The directory holding every sandbox's directory.
    pub fn sandboxes_root(&self) -> &Path {
        &self.sandboxes_root
    }

    /// Trims the logs of this runtime's sandboxes that are over `max_bytes`
    /// ([`crate::logs::trim_logs`] on [`Self::sandboxes_root`]): sandboxes of earlier runs of
    /// Switchboard included, since it goes by directory.
    ///
    /// # Errors
    /// The sandboxes root exists but cannot be listed.
    pub fn trim_logs(&self, max_bytes: u64) -> io::Result<Vec<crate::logs::Trimmed>> {
        crate::logs::trim_logs(&self.sandboxes_root, max_bytes)
    }

    /// The process of `identity` as `/proc` shows it now, if it is still that process.
    fn current(identity: ProcessIdentity) -> Option<ProcStat> {
        procfs::read_stat(identity.pid).filter(|s| s.start_time == identity.start_time)
    }

    fn child_state(&self, identity: ProcessIdentity) -> Option<ChildState> {
        self.children
            .lock()
            .expect("child table poisoned")
            .get(&identity)
            .cloned()
    }

    /// How a child of this runtime ended: waits up to [`REAP_WAIT`] for its waiting thread
    /// when the child has ended but is not reaped yet; `None` for a process it did not start.
    fn exit_reason(&self, identity: ProcessIdentity) -> Option<String> {
        let deadline = Instant::now() + REAP_WAIT;
        loop {
            match self.child_state(identity)? {
                ChildState::Exited(reason) => return Some(reason),
                ChildState::Waiting if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(2));
                }
                ChildState::Waiting => return None,
            }
        }
    }

    /// Spawns the process (confined or not); the caller cleans up on error. Returns the
    /// child and, confined as root, the sandbox's user id.
    fn spawn(
        &self,
        launch: &LaunchSpec,
        sandbox_dir: &Path,
        port: u16,
        services: &[ServiceEndpoint],
    ) -> Result<(Child, Option<u32>), RuntimeError> {
        let ports: Vec<_> = services
            .iter()
            .map(|s| (s.service, s.sandbox_port))
            .collect();
        let mut env = launch::environment_with(launch, port, &ports)?;
        let cwd = launch::working_dir(sandbox_dir, &launch.spec.working_dir)?;
        let (program, args) = launch
            .spec
            .command
            .split_first()
            .ok_or_else(|| RuntimeError::InvalidSpec("the command is empty".into()))?;
        let mut argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        argv.extend(["--host".into(), LISTEN_HOST.to_string().into()]);
        argv.extend(["--port".into(), port.to_string().into()]);
        let log_path = sandbox_dir.join(LOG_FILE);
        let (mut command, uid) = match &self.isolation {
            Isolation::None => {
                confined::prepare_dirs(sandbox_dir, &cwd, &project_dir(sandbox_dir), None)?;
                let executable = launch::resolve_program(program, &env, &cwd)?;
                let mut c = Command::new(executable);
                c.args(argv).current_dir(&cwd).process_group(0);
                (c, None)
            }
            Isolation::Bwrap(bwrap) => {
                let held = confined::take_uid(
                    bwrap,
                    &self.sandboxes_root,
                    &self.held_uids,
                    &launch.sandbox_id,
                )?;
                let uid = held.as_ref().map(|h| h.id);
                self.mount_file_system(launch, sandbox_dir)?;
                confined::prepare_dirs(sandbox_dir, &cwd, &project_dir(sandbox_dir), uid)?;
                // A confined sandbox's home is its own directory (the host's is not there).
                if !launch.spec.initial_env.contains_key("HOME") {
                    env.insert("HOME".into(), sandbox_dir.display().to_string());
                }
                let executable = launch::resolve_program(program, &env, &cwd)?;
                let mut plan = confined::plan(
                    launch,
                    &self.sandboxes_root,
                    sandbox_dir,
                    &cwd,
                    &executable,
                    argv,
                    &env,
                    uid,
                )?;
                plan.join_groups = self.make_group(launch)?;
                let mut c = bwrap.command(&plan);
                c.current_dir("/");
                (c, uid)
            }
        };
        let log = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o644)
            .open(&log_path)
            .map_err(|e| io_error("opening", &log_path, &e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| io_error("opening", &log_path, &e))?;
        let child = command
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| {
                RuntimeError::Launch(format!(
                    "cannot run `{program}` ({:?}): {e}",
                    command.get_program()
                ))
            })?;
        Ok((child, uid))
    }

    /// A thread that will wait for the child sent to it, so the child is reaped as soon as it
    /// ends, and record how it ended. Made before the child is spawned: a child must never
    /// be left without a waiter (it would stay a zombie).
    fn waiter(&self) -> Result<mpsc::Sender<(Child, ProcessIdentity)>, RuntimeError> {
        let (send, receive) = mpsc::channel::<(Child, ProcessIdentity)>();
        let children = Arc::clone(&self.children);
        thread::Builder::new()
            .name("sandbox-wait".into())
            .stack_size(WAITER_STACK)
            .spawn(move || {
                let Ok((mut child, identity)) = receive.recv() else {
                    return; // the launch failed before spawning
                };
                let reason = match child.wait() {
                    Ok(status) => status.to_string(),
                    Err(e) => format!("exited (status unknown: {e})"),
                };
                // A deleted sandbox has no entry left: nothing to record.
                if let Some(state) = children
                    .lock()
                    .expect("child table poisoned")
                    .get_mut(&identity)
                {
                    *state = ChildState::Exited(reason);
                }
            })
            .map_err(|e| RuntimeError::Launch(format!("cannot start a waiting thread: {e}")))?;
        Ok(send)
    }

    /// Start, once the sandbox's directory exists; the caller removes it on error.
    fn start_in(
        &self,
        launch: &LaunchSpec,
        sandbox_dir: &Path,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let waiter = self.waiter()?;
        let avoid = self.bound_inside(launch);
        let port = self.reserve_port(&avoid)?;
        let services = match self.reserve_services(launch, &avoid) {
            Ok(s) => s,
            Err(e) => {
                self.release_port(port);
                return Err(e);
            }
        };
        let release = || {
            self.release_port(port);
            services.iter().for_each(|s| self.release_port(s.host_port));
        };
        let (child, uid) = self
            .spawn(launch, sandbox_dir, port, &services)
            .inspect_err(|_| release())?;
        // Not yet reaped, so its /proc entry is there even if it has already ended.
        let pid = child.id();
        let start_time = procfs::read_stat(pid).map(|stat| stat.start_time);
        let namespace = match self.isolation {
            Isolation::None => None,
            Isolation::Bwrap(_) => {
                let mut found = None;
                wait_for(NAMESPACE_WAIT, || {
                    found = PidNamespace::of_child(pid);
                    // bwrap failed before making it: the log says why.
                    found.is_some() || procfs::read_stat(pid).is_none_or(|s| s.is_dead())
                });
                found
            }
        };
        let inbound: Vec<u16> = std::iter::once(port)
            .chain(services.iter().map(|s| s.host_port))
            .collect();
        let network = network::connect(
            &self.isolation,
            &self.sandboxes_root,
            launch,
            namespace,
            &inbound,
        );
        let identity = ProcessIdentity {
            pid,
            start_time: start_time.unwrap_or(0),
            uid,
            namespace,
            network: network.as_ref().ok().copied().flatten(),
        };
        self.children
            .lock()
            .expect("child table poisoned")
            .insert(identity, ChildState::Waiting);
        let _ = waiter.send((child, identity));
        if start_time.is_none() {
            let _ = members::signal_group(identity, rustix::process::Signal::KILL);
            release();
            return Err(RuntimeError::Launch(format!(
                "cannot read /proc/{pid}/stat of the started process (is /proc mounted?)"
            )));
        }
        if let Err(e) = network {
            // A command that ended at once (not found, crashed) is why its network could not
            // be set up: say that, with the end of its log (removed with its directory).
            let ended = self.exit_reason(identity);
            let _ = members::signal_group(identity, rustix::process::Signal::KILL);
            members::end_namespace(identity);
            release();
            return Err(match ended {
                Some(reason) => RuntimeError::Launch(format!(
                    "the command exited before it was ready ({reason}){}",
                    log::last_lines(&sandbox_dir.join(LOG_FILE))
                )),
                None => e,
            });
        }
        Ok(RuntimeHandle {
            runtime: RUNTIME_NAME.to_owned(),
            agent_server_url: format!("http://{LISTEN_HOST}:{port}"),
            host_port: port,
            sandbox_port: port,
            working_dir: sandbox_dir.to_path_buf(),
            project_dir: Some(match self.isolation {
                Isolation::None => project_dir(sandbox_dir).display().to_string(),
                Isolation::Bwrap(_) => SANDBOX_PROJECT_DIR.to_owned(),
            }),
            data: serde_json::to_value(identity).expect("an identity always serializes"),
            services,
        })
    }

    /// Pause and resume: only a sandbox that is still there. Returns once every live process
    /// of the sandbox shows the new state (stopped or not), or after [`SIGNAL_WAIT`].
    fn signal_live(&self, handle: &RuntimeHandle, stop: bool) -> Result<(), RuntimeError> {
        let identity = ProcessIdentity::of(handle)?;
        match Self::current(identity) {
            Some(stat) if !stat.is_dead() => members::stop_or_continue(identity, stop),
            _ => Err(RuntimeError::Gone),
        }
    }
}

impl SandboxRuntime for ProcessRuntime {
    fn name(&self) -> &'static str {
        RUNTIME_NAME
    }

    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError> {
        fs::create_dir_all(&self.sandboxes_root)
            .map_err(|e| io_error("creating", &self.sandboxes_root, &e))?;
        if !matches!(self.isolation, Isolation::None) {
            // Only Switchboard enters it; a sandbox sees its own directory through its mount.
            fs::set_permissions(&self.sandboxes_root, fs::Permissions::from_mode(0o700))
                .map_err(|e| io_error("setting the mode of", &self.sandboxes_root, &e))?;
        }
        let sandbox_dir = self.sandboxes_root.join(launch.sandbox_id.to_string());
        fs::create_dir(&sandbox_dir).map_err(|e| io_error("creating", &sandbox_dir, &e))?;
        let started = self.start_in(launch, &sandbox_dir);
        if started.is_err() {
            let _ = self.remove_files(&sandbox_dir);
        }
        started
    }

    fn observe(&self, handle: &RuntimeHandle) -> Observed {
        self.try_observe(handle).unwrap_or(Observed::Gone)
    }

    /// As `observe`, but a `/proc` that cannot be read (e.g. `EMFILE`) is an error, never
    /// "gone" (issue 24 item 3).
    fn try_observe(&self, handle: &RuntimeHandle) -> Result<Observed, RuntimeError> {
        let Ok(identity) = ProcessIdentity::of(handle) else {
            return Ok(Observed::Gone);
        };
        let exited = || {
            self.exit_reason(identity)
                .map(|reason| Observed::Exited { reason })
        };
        let current = procfs::try_read_stat(identity.pid)
            .map_err(|e| RuntimeError::Io(format!("reading /proc/{}/stat: {e}", identity.pid)))?
            .filter(|s| s.start_time == identity.start_time);
        if current.is_none_or(|s| s.is_dead()) {
            // The agent server has ended (confined: `bwrap` ends with it): so does anything
            // it left running in its namespace (issue 24, item 4).
            members::end_namespace(identity);
        }
        Ok(match current {
            Some(stat) if stat.is_dead() => exited().unwrap_or_else(|| Observed::Exited {
                reason: "exited (not yet reaped)".into(),
            }),
            Some(stat) if stat.is_stopped() => Observed::Stopped,
            Some(_) => Observed::Running,
            None => exited().unwrap_or(Observed::Gone),
        })
    }

    fn pause(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        self.signal_live(handle, true)
    }

    fn resume(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        self.signal_live(handle, false)
    }

    fn delete(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        let identity = ProcessIdentity::of(handle)?;
        let dir = &handle.working_dir;
        if dir.parent() != Some(self.sandboxes_root.as_path()) {
            return Err(RuntimeError::BadHandle(format!(
                "working directory {} is not a sandbox directory under {}",
                dir.display(),
                self.sandboxes_root.display()
            )));
        }
        // `/proc` that cannot be read (e.g. `EMFILE`) is an error: nothing is signalled blind
        // (issue 24 item 3).
        procfs::try_read_stat(identity.pid)
            .map_err(|e| RuntimeError::Io(format!("reading /proc/{}/stat: {e}", identity.pid)))?;
        // Forgotten first, so its waiting thread records nothing once it is reaped.
        let our_child = self
            .children
            .lock()
            .expect("child table poisoned")
            .remove(&identity)
            .is_some();
        // Its directory (which keeps its user id taken) goes only once its processes have.
        members::end_all(identity, self.stop_timeout)?;
        if our_child {
            // Reaped by its waiting thread: no zombie is left when delete returns.
            wait_for(KILL_WAIT, || Self::current(identity).is_none());
        }
        self.remove_files(dir)?;
        self.release_port(handle.host_port);
        for service in &handle.services {
            self.release_port(service.host_port);
        }
        Ok(())
    }

    fn listener(&self, handle: &RuntimeHandle, url: &str) -> Result<ListenerCheck, RuntimeError> {
        listener::check(handle, url)
    }

    fn log_tail(&self, handle: &RuntimeHandle, lines: usize) -> Option<String> {
        // Never followed: a sandbox owns its directory and could put a link (or a FIFO) there.
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(crate::logs::nofollow_nonblock())
            .open(handle.working_dir.join(LOG_FILE))
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let len = meta.len();
        let from = len.saturating_sub(LOG_TAIL_BYTES);
        file.seek(SeekFrom::Start(from)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let mut all: Vec<&str> = text.lines().collect();
        if from > 0 && !all.is_empty() {
            all.remove(0); // a partial first line
        }
        Some(all[all.len().saturating_sub(lines)..].join("\n"))
    }
}

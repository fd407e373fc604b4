//! The process runtime: each sandbox is an agent server run as a local process, in a process
//! group of its own, from a directory of its own, with a clean environment (issue 9, "the
//! process runtime").
//!
//! - **Start**: a free loopback port; the directory `<sandboxes_root>/<sandbox_id>/`; the
//!   spec's command + `--host 127.0.0.1 --port <port>`; the environment cleared, then
//!   [`launch::environment`]; `process_group(0)`; stdin closed; stdout and stderr appended to
//!   [`LOG_FILE`] in the sandbox's directory (capped by [`ProcessRuntime::trim_logs`]). A thread per sandbox waits for the process, so
//!   an ended child is reaped at once and its exit status is kept for [`Observed::Exited`].
//! - **Identity**: the pid and its start time (`/proc/<pid>/stat` field 22), kept in the
//!   handle; a process with that pid but another start time is not the sandbox.
//! - **Port**: bound on `127.0.0.1:0` and released to the child; kept reserved by this runtime
//!   until delete, so concurrent starts never get the same one.
//! - **Pause / resume**: SIGSTOP / SIGCONT to the process group; they return once the group
//!   shows the new state, so the status that follows is already `PAUSED` (or not).
//! - **Delete**: SIGTERM (and SIGCONT, so a paused group can act on it) to the group, up to
//!   the stop timeout (default 10 s) for every member to end, SIGKILL to the group, then the
//!   sandbox's directory is removed.
//!
//! Processes whose parent ends are re-parented to the system's init, which reaps them; in a
//! container, run Switchboard under an init (`docker run --init`, tini).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde::{Deserialize, Serialize};
use switchboard_domain::sandboxes::runtime::{
    LaunchSpec, Observed, RuntimeError, RuntimeHandle, SandboxRuntime,
};

use crate::launch;
use crate::procfs::{self, ProcStat};

/// The runtime's name in [`RuntimeHandle::runtime`].
pub const RUNTIME_NAME: &str = "process";
/// The log file (stdout and stderr, appended) in a sandbox's directory.
pub const LOG_FILE: &str = "agent-server.log";
/// The address every sandbox listens on.
pub const LISTEN_HOST: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// How long delete waits after SIGTERM before SIGKILL, unless configured (issue 9: 10 s).
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long delete waits for a group to vanish after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// Stack of a child's waiting thread. 64 KiB was too little: when a paused or deleted
/// sandbox's child ended, freeing memory on that thread ran jemalloc's deallocation paths past
/// the end of the stack and Switchboard died of SIGSEGV (found by the generated-input run,
/// issue 13; `sandbox_waiter_survives_many_exits` in tests/process_runtime). Reserved address
/// space only: pages are touched as used.
const WAITER_STACK: usize = 512 * 1024;
/// How long pause and resume wait for the group to show its new state.
const SIGNAL_WAIT: Duration = Duration::from_secs(2);
/// How long [`ProcessRuntime::observe`] waits for an ended child to be reaped, to tell its
/// exit status.
const REAP_WAIT: Duration = Duration::from_millis(200);
/// How often a waiting operation looks at the processes again.
const POLL: Duration = Duration::from_millis(10);
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

/// A process's identity: what [`RuntimeHandle::data`] holds for this runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// The process id, also its process group id.
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity kept in a handle made by this runtime.
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] for another runtime's handle or unreadable data.
    pub fn of(handle: &RuntimeHandle) -> Result<Self, RuntimeError> {
        if handle.runtime != RUNTIME_NAME {
            return Err(RuntimeError::BadHandle(format!(
                "made by the {:?} runtime, not {RUNTIME_NAME:?}",
                handle.runtime
            )));
        }
        serde_json::from_value(handle.data.clone())
            .map_err(|e| RuntimeError::BadHandle(format!("process data: {e}")))
    }

    fn pgid(self) -> Option<Pid> {
        Pid::from_raw(i32::try_from(self.pid).ok()?)
    }
}

/// The process runtime; one per Switchboard (cheap to share behind an `Arc`). A fresh one,
/// as after a restart, finds the sandboxes of earlier ones from their handles.
#[derive(Debug)]
pub struct ProcessRuntime {
    sandboxes_root: PathBuf,
    stop_timeout: Duration,
    /// Ports handed to sandboxes of this runtime and not yet released by delete, so two
    /// starts never get the same port while the first process has not bound it yet.
    reserved_ports: Mutex<HashSet<u16>>,
    /// The children this runtime started and has not deleted: waited for by a thread each,
    /// which records how they ended.
    children: Arc<Mutex<HashMap<ProcessIdentity, ChildState>>>,
}

impl ProcessRuntime {
    /// A runtime whose sandboxes live under `sandboxes_root` (created on first start), with
    /// the default stop timeout ([`DEFAULT_STOP_TIMEOUT`]).
    pub fn new(sandboxes_root: impl Into<PathBuf>) -> Self {
        ProcessRuntime {
            sandboxes_root: sandboxes_root.into(),
            stop_timeout: DEFAULT_STOP_TIMEOUT,
            reserved_ports: Mutex::new(HashSet::new()),
            children: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Sets how long delete waits after SIGTERM before SIGKILL.
    #[must_use]
    pub fn with_stop_timeout(mut self, stop_timeout: Duration) -> Self {
        self.stop_timeout = stop_timeout;
        self
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

    /// A loopback port nothing listens on and no sandbox of this runtime was given.
    fn reserve_port(&self) -> Result<u16, RuntimeError> {
        let mut reserved = self.reserved_ports.lock().expect("port set poisoned");
        for _ in 0..64 {
            let listener = TcpListener::bind((LISTEN_HOST, 0))
                .map_err(|e| RuntimeError::Launch(format!("no free loopback port: {e}")))?;
            let port = listener
                .local_addr()
                .map_err(|e| RuntimeError::Launch(format!("no free loopback port: {e}")))?
                .port();
            if reserved.insert(port) {
                return Ok(port);
            }
        }
        Err(RuntimeError::Launch(
            "no free loopback port after 64 tries".into(),
        ))
    }

    fn release_port(&self, port: u16) {
        self.reserved_ports
            .lock()
            .expect("port set poisoned")
            .remove(&port);
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

    /// Spawns the process; the caller cleans up on error.
    fn spawn(
        &self,
        launch: &LaunchSpec,
        sandbox_dir: &Path,
        port: u16,
    ) -> Result<Child, RuntimeError> {
        let env = launch::environment(launch)?;
        let cwd = launch::working_dir(sandbox_dir, &launch.spec.working_dir)?;
        fs::create_dir_all(&cwd).map_err(|e| io_error("creating", &cwd, &e))?;
        let (program, args) = launch
            .spec
            .command
            .split_first()
            .ok_or_else(|| RuntimeError::InvalidSpec("the command is empty".into()))?;
        let executable = launch::resolve_program(program, &env, &cwd)?;
        let log_path = sandbox_dir.join(LOG_FILE);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| io_error("opening", &log_path, &e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| io_error("opening", &log_path, &e))?;
        Command::new(&executable)
            .args(args)
            .arg("--host")
            .arg(LISTEN_HOST.to_string())
            .arg("--port")
            .arg(port.to_string())
            .env_clear()
            .envs(&env)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .spawn()
            .map_err(|e| {
                RuntimeError::Launch(format!(
                    "cannot run `{program}` ({}): {e}",
                    executable.display()
                ))
            })
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

    /// Whether process group `identity.pid` can be signalled as the sandbox's: its leader is
    /// still the sandbox's process, or has ended (a group's id is not given to a new process
    /// while the group has members).
    fn group_is_ours(identity: ProcessIdentity) -> bool {
        procfs::read_stat(identity.pid).is_none_or(|s| s.start_time == identity.start_time)
    }

    /// SIGTERM (and SIGCONT, so stopped members can act on it) to the group, up to the stop
    /// timeout for every member to end, then SIGKILL.
    fn stop_group(&self, identity: ProcessIdentity) -> Result<(), RuntimeError> {
        let ignore_gone = |r: Result<(), RuntimeError>| match r {
            Err(RuntimeError::Gone) => Ok(()),
            other => other,
        };
        let gone = || procfs::live_group_members(identity.pid).is_empty();
        ignore_gone(Self::signal_group(identity, Signal::TERM))?;
        ignore_gone(Self::signal_group(identity, Signal::CONT))?;
        if wait_for(self.stop_timeout, gone) {
            return Ok(());
        }
        ignore_gone(Self::signal_group(identity, Signal::KILL))?;
        if wait_for(KILL_WAIT, gone) {
            Ok(())
        } else {
            Err(RuntimeError::Io(format!(
                "process group {} still has live members after SIGKILL",
                identity.pid
            )))
        }
    }

    fn signal_group(identity: ProcessIdentity, signal: Signal) -> Result<(), RuntimeError> {
        let pgid = identity
            .pgid()
            .ok_or_else(|| RuntimeError::BadHandle(format!("pid {}", identity.pid)))?;
        match kill_process_group(pgid, signal) {
            Ok(()) => Ok(()),
            Err(rustix::io::Errno::SRCH) => Err(RuntimeError::Gone),
            Err(e) => Err(RuntimeError::Io(format!(
                "signalling process group {}: {e}",
                identity.pid
            ))),
        }
    }

    /// Start, once the sandbox's directory exists; the caller removes it on error.
    fn start_in(
        &self,
        launch: &LaunchSpec,
        sandbox_dir: &Path,
    ) -> Result<RuntimeHandle, RuntimeError> {
        let waiter = self.waiter()?;
        let port = self.reserve_port()?;
        let child = self.spawn(launch, sandbox_dir, port).inspect_err(|_| {
            self.release_port(port);
        })?;
        // Not yet reaped, so its /proc entry is there even if it has already ended.
        let pid = child.id();
        let start_time = procfs::read_stat(pid).map(|stat| stat.start_time);
        let identity = ProcessIdentity {
            pid,
            start_time: start_time.unwrap_or(0),
        };
        self.children
            .lock()
            .expect("child table poisoned")
            .insert(identity, ChildState::Waiting);
        let _ = waiter.send((child, identity));
        if start_time.is_none() {
            let _ = Self::signal_group(identity, Signal::KILL);
            self.release_port(port);
            return Err(RuntimeError::Launch(format!(
                "cannot read /proc/{pid}/stat of the started process (is /proc mounted?)"
            )));
        }
        Ok(RuntimeHandle {
            runtime: RUNTIME_NAME.to_owned(),
            agent_server_url: format!("http://{LISTEN_HOST}:{port}"),
            host_port: port,
            sandbox_port: port,
            working_dir: sandbox_dir.to_path_buf(),
            data: serde_json::to_value(identity).expect("an identity always serializes"),
        })
    }

    /// Pause and resume: only a sandbox that is still there. Returns once every live member
    /// of the group shows the new state (stopped or not), or after [`SIGNAL_WAIT`].
    fn signal_live(&self, handle: &RuntimeHandle, signal: Signal) -> Result<(), RuntimeError> {
        let identity = ProcessIdentity::of(handle)?;
        match Self::current(identity) {
            Some(stat) if !stat.is_dead() => Self::signal_group(identity, signal)?,
            _ => return Err(RuntimeError::Gone),
        }
        let stopping = signal == Signal::STOP;
        wait_for(SIGNAL_WAIT, || {
            procfs::live_group_members(identity.pid)
                .iter()
                .all(|member| member.is_stopped() == stopping)
        });
        Ok(())
    }
}

impl SandboxRuntime for ProcessRuntime {
    fn name(&self) -> &'static str {
        RUNTIME_NAME
    }

    fn start(&self, launch: &LaunchSpec) -> Result<RuntimeHandle, RuntimeError> {
        fs::create_dir_all(&self.sandboxes_root)
            .map_err(|e| io_error("creating", &self.sandboxes_root, &e))?;
        let sandbox_dir = self.sandboxes_root.join(launch.sandbox_id.to_string());
        fs::create_dir(&sandbox_dir).map_err(|e| io_error("creating", &sandbox_dir, &e))?;
        let started = self.start_in(launch, &sandbox_dir);
        if started.is_err() {
            let _ = fs::remove_dir_all(&sandbox_dir);
        }
        started
    }

    fn observe(&self, handle: &RuntimeHandle) -> Observed {
        let Ok(identity) = ProcessIdentity::of(handle) else {
            return Observed::Gone;
        };
        let exited = || {
            self.exit_reason(identity)
                .map(|reason| Observed::Exited { reason })
        };
        match Self::current(identity) {
            Some(stat) if stat.is_dead() => exited().unwrap_or_else(|| Observed::Exited {
                reason: "exited (not yet reaped)".into(),
            }),
            Some(stat) if stat.is_stopped() => Observed::Stopped,
            Some(_) => Observed::Running,
            None => exited().unwrap_or(Observed::Gone),
        }
    }

    fn pause(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        self.signal_live(handle, Signal::STOP)
    }

    fn resume(&self, handle: &RuntimeHandle) -> Result<(), RuntimeError> {
        self.signal_live(handle, Signal::CONT)
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
        // Forgotten first, so its waiting thread records nothing once it is reaped.
        let our_child = self
            .children
            .lock()
            .expect("child table poisoned")
            .remove(&identity)
            .is_some();
        let mut outcome = Ok(());
        if Self::group_is_ours(identity) {
            outcome = self.stop_group(identity);
        }
        if our_child {
            // Reaped by its waiting thread: no zombie is left when delete returns.
            wait_for(KILL_WAIT, || Self::current(identity).is_none());
        }
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => outcome = outcome.and(Err(io_error("removing", dir, &e))),
        }
        if outcome.is_ok() {
            self.release_port(handle.host_port);
        }
        outcome
    }

    fn log_tail(&self, handle: &RuntimeHandle, lines: usize) -> Option<String> {
        let mut file = File::open(handle.working_dir.join(LOG_FILE)).ok()?;
        let len = file.metadata().ok()?.len();
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

/// Polls `check` every [`POLL`] until it holds (true) or `limit` passes (false).
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(POLL);
    }
}

fn io_error(action: &str, path: &Path, error: &io::Error) -> RuntimeError {
    RuntimeError::Io(format!("{action} {}: {error}", path.display()))
}

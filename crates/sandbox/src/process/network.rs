//! A confined sandbox's network of its own (issue 33; [`crate::confine::network`]): `pasta`
//! attached once `bwrap` has made the sandbox's namespaces, its daemon kept in the handle
//! ([`NetworkHelper`]) and ended with the sandbox, and whether a host listener is that
//! daemon's socket ([`holds_socket`]).

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};

use super::confined::io_error;
use super::identity::{NetworkHelper, PidNamespace, ProcessIdentity};
use super::waits::{KILL_WAIT, wait_for};
use crate::confine::Isolation;
use crate::confine::network::Attach;
use crate::procfs;

/// The directory, under the sandboxes root, where `pasta` writes its pid while it attaches
/// (not a sandbox directory: its name is no sandbox id; no sandbox sees it).
pub const NET_DIR: &str = ".net";
/// How long the network waits for `bwrap` to finish setting up the sandbox's namespaces.
const SETUP_WAIT: Duration = Duration::from_secs(5);

/// Connects the network namespace of a sandbox just started under `isolation`, when that
/// gives it one: `pasta` binds `inbound` (the agent server's and the exposed services' ports)
/// on the host's loopback and splices them inside; its pid file goes under
/// `<sandboxes_root>/`[`NET_DIR`]. `None` for a sandbox on the host's network, or one whose
/// namespace was never made (`bwrap` failed: its log says why).
///
/// # Errors
/// [`RuntimeError::Launch`] with what `pasta` said; [`RuntimeError::Io`] when its pid file's
/// directory cannot be made.
pub fn connect(
    isolation: &Isolation,
    sandboxes_root: &Path,
    launch: &LaunchSpec,
    namespace: Option<PidNamespace>,
    inbound: &[u16],
) -> Result<Option<NetworkHelper>, RuntimeError> {
    let (Isolation::Bwrap(bwrap), Some(ns)) = (isolation, namespace) else {
        return Ok(None);
    };
    let Some(pasta) = &bwrap.network else {
        return Ok(None);
    };
    let dir = sandboxes_root.join(NET_DIR);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| io_error("creating", &dir, &e))?;
    let pid_file = dir.join(format!("{}.pid", launch.sandbox_id));
    // bwrap's init configures the namespace's loopback before it starts the sandbox's command:
    // once it has a child, nothing else races it for the namespace's netlink.
    wait_for(SETUP_WAIT, || !procfs::children(ns.init_pid).is_empty());
    let pid = pasta
        .attach(&Attach {
            init_pid: ns.init_pid,
            user_namespace: bwrap.users.is_none(),
            inbound,
            webhook_url: &launch.webhook_base_url,
            egress: &launch.spec.egress,
            pid_file: &pid_file,
        })
        .map_err(RuntimeError::Launch)?;
    let start_time = procfs::read_stat(pid)
        .map(|s| s.start_time)
        .ok_or_else(|| RuntimeError::Launch(format!("pasta (pid {pid}) ended at once")))?;
    Ok(Some(NetworkHelper { pid, start_time }))
}

/// Ends the `pasta` daemon of the sandbox of `identity`, if it has one and it still runs:
/// SIGKILL (it keeps nothing), then up to [`KILL_WAIT`] for it to end, so its ports are free
/// when this returns.
pub fn end_helper(identity: ProcessIdentity) {
    if let Some(helper) = identity.network
        && helper.current().is_some()
        && let Some(pid) = Pid::from_raw(i32::try_from(helper.pid).unwrap_or(-1))
    {
        let _ = kill_process(pid, Signal::KILL);
        wait_for(KILL_WAIT, || helper.current().is_none());
    }
}

/// Whether the socket of inode `inode` is one of `helper`'s open files (the daemon still
/// being that process).
pub fn holds_socket(helper: NetworkHelper, inode: u64) -> bool {
    if helper.current().is_none() {
        return false;
    }
    let wanted = format!("socket:[{inode}]");
    fs::read_dir(format!("/proc/{}/fd", helper.pid))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == &*wanted))
}

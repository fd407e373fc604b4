//! The processes of a sandbox and how they are signalled: its process group (the process
//! Switchboard started and what stayed in its group) and, for a confined sandbox, every
//! process of its pid namespace, which includes those that left the group (a daemonized
//! `tmux` server, `setsid`, a double fork). Pause stops them all, resume continues them all,
//! delete ends them all (issue 24, item 4).

use std::collections::BTreeMap;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use switchboard_domain::sandboxes::runtime::RuntimeError;

use crate::procfs::{self, ProcStat};

use super::identity::ProcessIdentity;
use super::network::end_helper;
use super::waits::{KILL_WAIT, SIGNAL_WAIT, wait_for};

/// Every live process of the sandbox of `identity`: its process group's (while the group is
/// the sandbox's) and its pid namespace's (while its init lives), each once.
pub fn live_members(identity: ProcessIdentity) -> Vec<ProcStat> {
    let mut all: BTreeMap<u32, ProcStat> = BTreeMap::new();
    if group_is_ours(identity) {
        all.extend(
            procfs::live_group_members(identity.pid)
                .into_iter()
                .map(|s| (s.pid, s)),
        );
    }
    if let Some(ns) = identity.namespace
        && ns.init().is_some()
    {
        all.extend(
            procfs::live_namespace_members(ns.inode)
                .into_iter()
                .map(|s| (s.pid, s)),
        );
    }
    all.into_values().collect()
}

/// Whether process group `identity.pid` can be signalled as the sandbox's: its leader is
/// still the sandbox's process, or has ended (a group's id is not given to a new process
/// while the group has members).
pub fn group_is_ours(identity: ProcessIdentity) -> bool {
    procfs::read_stat(identity.pid).is_none_or(|s| s.start_time == identity.start_time)
}

/// `signal` to the sandbox's process group.
///
/// # Errors
/// [`RuntimeError::Gone`] when the group has no member; [`RuntimeError::Io`] otherwise.
pub fn signal_group(identity: ProcessIdentity, signal: Signal) -> Result<(), RuntimeError> {
    let pgid = Pid::from_raw(i32::try_from(identity.pid).unwrap_or(-1))
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

/// `signal` to each process of `members` (one that ended meanwhile is skipped).
fn signal_each(members: &[ProcStat], signal: Signal) {
    for m in members {
        if let Some(pid) = Pid::from_raw(i32::try_from(m.pid).unwrap_or(-1)) {
            let _ = kill_process(pid, signal);
        }
    }
}

/// Ends what is left of the sandbox's pid namespace (SIGKILL to its init, which the kernel
/// follows by killing every process in it), if its init still lives, and its `pasta` daemon.
/// For a sandbox whose first process has ended: `bwrap` ends with the agent server, but its
/// init stays while any process the agent server left behind (a daemonized `tmux`) lives.
pub fn end_namespace(identity: ProcessIdentity) {
    if let Some(ns) = identity.namespace
        && let Some(init) = ns.init()
    {
        signal_each(&[init], Signal::KILL);
    }
    end_helper(identity);
}

/// Pause (`stop`) or resume: SIGSTOP or SIGCONT to every process of the sandbox, until every
/// one shows the new state or [`SIGNAL_WAIT`] passes. A process forked while stopping is
/// stopped by the next round.
pub fn stop_or_continue(identity: ProcessIdentity, stop: bool) -> Result<(), RuntimeError> {
    let signal = if stop { Signal::STOP } else { Signal::CONT };
    if group_is_ours(identity) {
        match signal_group(identity, signal) {
            Err(RuntimeError::Gone) if identity.namespace.is_some() => {}
            other => other?,
        }
    }
    wait_for(SIGNAL_WAIT, || {
        let pending: Vec<ProcStat> = live_members(identity)
            .into_iter()
            .filter(|m| m.is_stopped() != stop)
            .collect();
        signal_each(&pending, signal);
        pending.is_empty()
    });
    Ok(())
}

/// Ends every process of the sandbox: SIGCONT (so stopped ones can act) and SIGTERM to all
/// but the namespace's init, up to `stop_timeout` for them to end (the init ends with the
/// agent server, taking the rest of its namespace), then SIGKILL to the init (the kernel then
/// kills every process of the namespace) and to the group; then its `pasta` daemon.
///
/// # Errors
/// [`RuntimeError::Io`] when a process is still alive after SIGKILL.
pub fn end_all(identity: ProcessIdentity, stop_timeout: Duration) -> Result<(), RuntimeError> {
    let init = identity.namespace.map(|ns| ns.init_pid);
    let others = || -> Vec<ProcStat> {
        live_members(identity)
            .into_iter()
            .filter(|m| Some(m.pid) != init)
            .collect()
    };
    if group_is_ours(identity) {
        let _ = signal_group(identity, Signal::TERM);
        let _ = signal_group(identity, Signal::CONT);
    }
    signal_each(&live_members(identity), Signal::CONT);
    signal_each(&others(), Signal::TERM);
    let gone = || live_members(identity).is_empty();
    if wait_for(stop_timeout, gone) {
        end_helper(identity);
        return Ok(());
    }
    if let Some(ns) = identity.namespace
        && let Some(init) = ns.init()
    {
        signal_each(&[init], Signal::KILL);
    }
    if group_is_ours(identity) {
        let _ = signal_group(identity, Signal::KILL);
    }
    // Whatever is left of the namespace (its init was gone already) or the group.
    signal_each(&live_members(identity), Signal::KILL);
    if wait_for(KILL_WAIT, gone) {
        end_helper(identity);
        Ok(())
    } else {
        Err(RuntimeError::Io(format!(
            "sandbox process group {} still has live processes after SIGKILL",
            identity.pid
        )))
    }
}

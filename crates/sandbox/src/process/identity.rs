//! Who a sandbox's processes are: the identity this runtime keeps in a sandbox's handle
//! ([`ProcessIdentity`]: its process group and, confined, its user and pid namespace
//! ([`PidNamespace`])).

use serde::{Deserialize, Serialize};
use switchboard_domain::sandboxes::runtime::{RuntimeError, RuntimeHandle};

use crate::procfs::{self, ProcStat};

/// The runtime's name in [`RuntimeHandle::runtime`].
pub const RUNTIME_NAME: &str = "process";

/// A process's identity: what [`RuntimeHandle::data`] holds for this runtime. The fields of
/// a confined sandbox are absent from an unconfined one's (and from handles written before
/// confinement existed, which read as unconfined).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessIdentity {
    /// The process id, also its process group id (and, confined, its session id).
    pub pid: u32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
    /// Confined as root: the sandbox's own user and group id (issue 18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Confined: the sandbox's pid namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<PidNamespace>,
    /// Confined with a network of its own (issue 33): the `pasta` daemon connecting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkHelper>,
}

impl ProcessIdentity {
    /// The identity kept in a handle made by this runtime.
    ///
    /// # Errors
    /// [`RuntimeError::BadHandle`] for another runtime's handle or unreadable data.
    pub fn of(handle: &RuntimeHandle) -> Result<Self, RuntimeError> {
        handle.data_of(RUNTIME_NAME, "process data")
    }
}

/// The `pasta` daemon of a sandbox with a network of its own
/// ([`crate::confine::network`]): a process of Switchboard's, outside the sandbox, that holds
/// the host side of the sandbox's ports. Ended with the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NetworkHelper {
    /// Its pid.
    pub pid: u32,
    /// Its start time (clock ticks after boot): a process with its pid and another start time
    /// is not it.
    pub start_time: u64,
}

impl NetworkHelper {
    /// The daemon as `/proc` shows it now, if it is still that process and has not ended.
    pub fn current(&self) -> Option<ProcStat> {
        procfs::read_stat(self.pid).filter(|s| s.start_time == self.start_time && !s.is_dead())
    }
}

/// A confined sandbox's pid namespace, found at start: its inode and its init (`bwrap`'s
/// reaper, pid 1 inside), by host pid and start time. The inode counts only while that init
/// lives: a namespace ends with its init (the kernel kills every process in it), and its
/// inode may later be given to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PidNamespace {
    /// The namespace's inode (`/proc/<pid>/ns/pid`).
    pub inode: u64,
    /// Its init's pid, as Switchboard sees it.
    pub init_pid: u32,
    /// Its init's start time (clock ticks after boot).
    pub init_start_time: u64,
}

impl PidNamespace {
    /// The namespace of the child of `parent` that lives in a pid namespace other than
    /// `parent`'s, if there is one now.
    pub fn of_child(parent: u32) -> Option<Self> {
        let own = procfs::pid_namespace(parent)?;
        procfs::children(parent).into_iter().find_map(|child| {
            let inode = procfs::pid_namespace(child.pid)?;
            (inode != own).then_some(PidNamespace {
                inode,
                init_pid: child.pid,
                init_start_time: child.start_time,
            })
        })
    }

    /// The init as `/proc` shows it now, if it is still that process and has not ended.
    pub fn init(&self) -> Option<ProcStat> {
        procfs::read_stat(self.init_pid)
            .filter(|s| s.start_time == self.init_start_time && !s.is_dead())
    }
}

//! Reading processes from `/proc` (proc(5)): a process's state, process group and start time,
//! the members of a process group, and the processes of a pid namespace (pid_namespaces(7)).
//! The start time, with the pid, is a process's identity: a pid reused by another process has
//! a different start time.

use std::fs;
use std::io;

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The process id.
    pub pid: u32,
    /// Field 3: `R` running, `S` sleeping, `D` disk sleep, `T` stopped, `t` tracing stop,
    /// `Z` zombie, `X` dead, `I` idle.
    pub state: char,
    /// Field 4: the parent's pid.
    pub ppid: u32,
    /// Field 5: the process group id.
    pub pgrp: u32,
    /// Field 22: when the process started, in clock ticks after boot.
    pub start_time: u64,
}

impl ProcStat {
    /// The process has ended and waits to be reaped (`Z`), or is being torn down (`X`).
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }

    /// The process is stopped by a signal (`T`) or by a tracer (`t`).
    pub fn is_stopped(&self) -> bool {
        matches!(self.state, 'T' | 't')
    }
}

/// Reads `/proc/<pid>/stat`; `None` when there is no such process (or it cannot be read).
pub fn read_stat(pid: u32) -> Option<ProcStat> {
    try_read_stat(pid).ok().flatten()
}

/// Reads `/proc/<pid>/stat`, telling "no such process" (`Ok(None)`: the file does not exist,
/// or the process ended while it was read) from "could not look" (`Err`: e.g. `EMFILE`, no
/// file descriptor left to open it), which must never be taken for the process being gone
/// (issue 24 item 3).
///
/// # Errors
/// Any failure to read other than the process being gone; unparsable text is `InvalidData`.
pub fn try_read_stat(pid: u32) -> io::Result<Option<ProcStat>> {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat(&text).map(Some).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("/proc/{pid}/stat: {text:?}"),
            )
        }),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether reading a process's file failed because the process is not there: the file does
/// not exist (`ENOENT`), or the process ended while it was read (`ESRCH`).
fn is_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error())
}

/// Parses the text of a `/proc/<pid>/stat` file. The command name (field 2) is in
/// parentheses and may itself hold spaces and parentheses, so fields are counted after the
/// last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_once(" (")?.0.trim().parse().ok()?;
    // `tail` starts at field 3 (state).
    let fields: Vec<&str> = tail.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).copied();
    Some(ProcStat {
        pid,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgrp: field(5)?.parse().ok()?,
        start_time: field(22)?.parse().ok()?,
    })
}

/// Every process whose process group is `pgid` (zombies included), from a scan of `/proc`.
pub fn group_members(pgid: u32) -> Vec<ProcStat> {
    all_processes().filter(|stat| stat.pgrp == pgid).collect()
}

/// The members of process group `pgid` that have not ended (zombies left out).
pub fn live_group_members(pgid: u32) -> Vec<ProcStat> {
    group_members(pgid)
        .into_iter()
        .filter(|stat| !stat.is_dead())
        .collect()
}

/// The pid namespace of `pid`: the inode in `/proc/<pid>/ns/pid` (which reads `pid:[INODE]`).
/// `None` when there is no such process or its namespace may not be read (another user's
/// process, for an unprivileged reader).
pub fn pid_namespace(pid: u32) -> Option<u64> {
    let link = fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// Every process in `/proc`, read once each (processes that end while listed are left out).
fn all_processes() -> impl Iterator<Item = ProcStat> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
}

/// The processes whose parent is `pid` (zombies included).
pub fn children(pid: u32) -> Vec<ProcStat> {
    all_processes().filter(|stat| stat.ppid == pid).collect()
}

/// The processes of pid namespace `inode` that have not ended, as this process sees them
/// (its own namespace's pids). A process whose namespace cannot be read is left out.
pub fn live_namespace_members(inode: u64) -> Vec<ProcStat> {
    all_processes()
        .filter(|stat| !stat.is_dead() && pid_namespace(stat.pid) == Some(inode))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_command_name_with_spaces_and_parentheses() {
        let mut text = String::from("4242 (a) b (c)) S 1 4242 4242 0 -1 4194560");
        // Fields 10..=21, then 22 = start time, then the rest.
        for n in 10..=21 {
            text.push_str(&format!(" {n}"));
        }
        text.push_str(" 987654 12 13\n");
        let stat = parse_stat(&text).unwrap();
        assert_eq!(
            stat,
            ProcStat {
                pid: 4242,
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                start_time: 987654,
            }
        );
        assert!(!stat.is_dead() && !stat.is_stopped());
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 0"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = read_stat(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(matches!(me.state, 'R' | 'S'), "{me:?}");
        assert!(me.start_time > 0);
        assert_eq!(read_stat(me.pid).unwrap().start_time, me.start_time);
        assert!(group_members(me.pgrp).iter().any(|s| s.pid == me.pid));
        let ns = pid_namespace(me.pid).unwrap();
        assert!(live_namespace_members(ns).iter().any(|s| s.pid == me.pid));
        assert_eq!(pid_namespace(u32::MAX), None);
    }
}

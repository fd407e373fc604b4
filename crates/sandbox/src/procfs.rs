//! Reading processes from `/proc` (proc(5)): a process's state, process group and start time,
//! and the members of a process group. The start time, with the pid, is a process's identity:
//! a pid reused by another process has a different start time.

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
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .filter(|stat| stat.pgrp == pgid)
        .collect()
}

/// The members of process group `pgid` that have not ended (zombies left out).
pub fn live_group_members(pgid: u32) -> Vec<ProcStat> {
    group_members(pgid)
        .into_iter()
        .filter(|stat| !stat.is_dead())
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
    }
}

//! Searching a sandbox's processes and files for a key (issue 38): every process whose
//! environment holds the sandbox's session key (the agent server and what it started), its
//! environment, command line and every readable mapping of its memory.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// What a search found.
#[derive(Debug, Default)]
pub struct Found {
    /// The sandbox's processes.
    pub pids: Vec<u32>,
    /// Those holding the needle anywhere.
    pub holding_needle: Vec<u32>,
    /// A pass-through token (`sbl_` + 43 base62) seen in their memory.
    pub token: Option<String>,
}

/// The processes whose environment holds `session_key`, searched for `needle`.
pub fn sandbox_processes(session_key: &str, needle: &str) -> Found {
    let mut found = Found::default();
    let me = std::process::id();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if memchr::memmem::find(&environ, session_key.as_bytes()).is_none() {
            continue;
        }
        found.pids.push(pid);
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let mut holds = [&environ, &cmdline]
            .iter()
            .any(|b| memchr::memmem::find(b, needle.as_bytes()).is_some());
        for region in readable_regions(pid) {
            holds |= memchr::memmem::find(&region, needle.as_bytes()).is_some();
            if found.token.is_none() {
                found.token = token_in(&region);
            }
        }
        if holds {
            found.holding_needle.push(pid);
        }
    }
    found
}

/// The contents of process `pid`'s readable mappings (those that read; at most 1 GiB each).
fn readable_regions(pid: u32) -> Vec<Vec<u8>> {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let Ok(mut mem) = fs::File::open(format!("/proc/{pid}/mem")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(perms)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !perms.starts_with('r') || line.ends_with("[vvar]") || line.ends_with("[vsyscall]") {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let len = (b - a).min(1 << 30) as usize;
        let mut buf = vec![0u8; len];
        if mem.seek(SeekFrom::Start(a)).is_ok() && mem.read_exact(&mut buf).is_ok() {
            out.push(buf);
        }
    }
    out
}

/// A pass-through token in `bytes`, if one is there.
fn token_in(bytes: &[u8]) -> Option<String> {
    let base62 = |b: &u8| b.is_ascii_alphanumeric();
    let mut at = 0;
    while let Some(i) = memchr::memmem::find(&bytes[at..], b"sbl_") {
        let start = at + i + 4;
        let end = start + 43;
        if end <= bytes.len()
            && bytes[start..end].iter().all(base62)
            && bytes.get(end).is_none_or(|b| !base62(b))
        {
            return Some(String::from_utf8_lossy(&bytes[at + i..end]).into_owned());
        }
        at = start;
    }
    None
}

/// The files under `dir` (recursively; each read up to 64 MiB) holding `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            out.extend(files_holding(&path, needle));
        } else if meta.is_file()
            && meta.len() <= 64 << 20
            && fs::read(&path).is_ok_and(|b| memchr::memmem::find(&b, needle.as_bytes()).is_some())
        {
            out.push(path);
        }
    }
    out
}

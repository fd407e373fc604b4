//! Where a sandbox's agent server is as this process sees it (its pid, its own port, the direct
//! URL behind a proxied one), the processes a sandbox leaves under its folder, and a Python run
//! whose `/etc/hosts` names the sandboxes (host-based proxy routing).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// The pid, as this process sees it, of the agent server behind `url`: for a URL Switchboard
/// shows (`…/sandboxes/{id}/…`), that sandbox's ([`sandbox_agent`]); else the one on `url`'s
/// port: the process whose command line ends with `--port <port>`, `bwrap` left out. (A confined
/// stand-in's `/server_info` reports its pid inside its own pid namespace.)
pub fn agent_host_pid(url: &str) -> Option<u64> {
    if let Some(id) = proxied_sandbox(url) {
        return sandbox_agent(&id).map(|(pid, _)| pid);
    }
    let port = url.rsplit(':').next()?.trim_end_matches('/');
    let tail = format!("--port\0{port}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u64 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            let program = text.split('\0').next().unwrap_or("");
            (text.ends_with(&tail) && !program.ends_with("bwrap")).then_some(pid)
        })
}

/// The sandbox id of a URL Switchboard shows for a sandbox's service
/// (`<public-url>/sandboxes/{id}/{service}[/…]`, issue 22); `None` for another URL.
pub fn proxied_sandbox(url: &str) -> Option<String> {
    if let Some((_, rest)) = url.split_once("/sandboxes/") {
        return rest.split('/').next().map(str::to_owned);
    }
    // Host-based (`--sandbox-host-pattern {id}-…`): the host starts with the id.
    let host = url.split_once("://")?.1;
    let id = host.get(..36)?;
    uuid::Uuid::parse_str(id).ok().map(|_| id.to_owned())
}

/// The agent server of process sandbox `id`: its pid and port, found from its process (the
/// one whose working directory is in the sandbox's folder, `…/sandboxes/{id}`, and whose
/// command line ends with `--port PORT`; bubblewrap's own process left out).
pub fn sandbox_agent(id: &str) -> Option<(u64, u16)> {
    let folder = format!("/{id}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u64 = entry.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            let cwd = cwd.to_string_lossy();
            if !(cwd.ends_with(&folder) || cwd.contains(&format!("{folder}/"))) {
                return None;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            let args: Vec<&str> = text.trim_end_matches('\0').split('\0').collect();
            if args.first()?.ends_with("bwrap")
                || args.len() < 2
                || args[args.len() - 2] != "--port"
            {
                return None;
            }
            Some((pid, args[args.len() - 1].parse().ok()?))
        })
}

/// The agent server's own address behind `url`: for a URL Switchboard shows
/// (`…/sandboxes/{id}/agent_server…`), `http://127.0.0.1:PORT` of the sandbox's process
/// ([`sandbox_agent`]) followed by the rest of the path; any other URL as it is. For tests
/// about the agent server itself (its process, its own answers), not about clients.
pub fn direct_agent_url(url: &str) -> String {
    let Some(id) = proxied_sandbox(url) else {
        return url.to_owned();
    };
    let (_, port) =
        sandbox_agent(&id).unwrap_or_else(|| panic!("no agent server process for {url}"));
    let rest = match url.split_once(&format!("/sandboxes/{id}/")) {
        Some((_, r)) => r
            .split_once('/')
            .map_or(String::new(), |(_, r)| format!("/{r}")),
        None => url
            .split_once("://")
            .and_then(|(_, r)| r.find('/').map(|i| r[i..].to_owned()))
            .unwrap_or_default(),
    };
    format!("http://127.0.0.1:{port}{rest}")
}

/// Pids of live processes (zombies left out) whose working directory is under `dir`: a
/// sandbox's processes run in its folder of the data directory.
pub fn processes_under(dir: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && cwd.starts_with(dir) {
            out.push(pid);
        }
    }
    out
}

/// Ends, when dropped, every process whose working directory is under its path (and every process
/// naming the path on its command line: the sandboxes' `pasta` daemons). Sandboxes
/// outlive the server by design, and a test's server is killed when the test ends, before its
/// background cleanup has stopped the sandboxes it deleted: declare this before the server.
pub struct EndProcessesUnder(pub PathBuf);

impl Drop for EndProcessesUnder {
    fn drop(&mut self) {
        // And the sandboxes' `pasta` daemons, named by their pid file under the path.
        let dir = self.0.display().to_string();
        let helpers = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&dir))
            })
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok());
        for pid in processes_under(&self.0).into_iter().chain(helpers) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// Runs `python script args…` in a mount namespace of its own whose `/etc/hosts` names every
/// sandbox of `key`'s at `127.0.0.1` as `{id}-agent-server.sandboxes.test`, written as each
/// appears: the wildcard DNS record of a deployment with `--sandbox-host-pattern
/// {id}-{service}.sandboxes.test`, which the SDK's `OpenHandsCloudWorkspace` needs (its agent
/// server at a host's root). Returns its output once it exits.
pub fn run_with_sandbox_hosts(
    python: &Path,
    script: &Path,
    args: &[&str],
    server: &str,
    key: &str,
) -> std::process::Output {
    let hosts = TempDir::new();
    let file = hosts.path().join("hosts");
    std::fs::write(&file, "127.0.0.1 localhost\n").unwrap();
    let child = Command::new("unshare")
        .args(["--mount", "--", "sh", "-c"])
        .arg(format!(
            "mount --bind '{}' /etc/hosts && exec \"$0\" \"$@\"",
            file.display()
        ))
        .arg(python)
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = thread::spawn(move || child.wait_with_output().unwrap());
    let mut named = std::collections::HashSet::new();
    while !waiter.is_finished() {
        let (_, page) = send_json(
            client()
                .get(format!("{server}/api/v1/sandboxes/search"))
                .header("X-Access-Token", key),
        );
        for s in page["items"].as_array().into_iter().flatten() {
            let id = s["id"].as_str().unwrap_or_default().to_owned();
            if named.insert(id.clone()) {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&file)
                    .unwrap();
                writeln!(f, "127.0.0.1 {id}-agent-server.sandboxes.test").unwrap();
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    waiter.join().unwrap()
}

/// Issue 33: sandbox `id`'s agent server is in a control group of its own, with the
/// operator's default memory limit (4096 MiB) and process cap (1024), and its directory
/// (`dir`) is a file system of its own of the default 20 GiB; not root: neither.
pub fn holds_only_its_share(id: &str, dir: &Path) {
    let (pid, _) = sandbox_agent(id).expect("the sandbox's agent server");
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    if !rustix::process::geteuid().is_root() {
        assert!(!groups.contains("switchboard-sandboxes"), "{groups}");
        return;
    }
    let df = std::process::Command::new("df")
        .args(["--output=size", "-BM"])
        .arg(dir)
        .output()
        .unwrap();
    let size = String::from_utf8_lossy(&df.stdout);
    let mib: u64 = size
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('M')
        .parse()
        .unwrap();
    assert!((19_000..=20_480).contains(&mib), "{dir:?}: {size}");
    let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let checks = if v2 {
        [("", "memory.max"), ("", "pids.max")]
    } else {
        [("memory", "memory.limit_in_bytes"), ("pids", "pids.max")]
    };
    for ((controller, file), value) in checks.into_iter().zip([(4096u64 << 20), 1024]) {
        let path = groups
            .lines()
            .find_map(|l| l.split_once(&format!(":{controller}:")).map(|(_, p)| p))
            .unwrap_or_else(|| panic!("no {controller} group in {groups}"));
        assert!(
            path.ends_with(&format!("switchboard-sandboxes/{id}")),
            "{path}"
        );
        let at = format!("/sys/fs/cgroup/{controller}{path}/{file}");
        let limit = std::fs::read_to_string(&at).unwrap();
        assert_eq!(limit.trim(), value.to_string(), "{at}");
    }
}

//! Sandboxes that misbehave do not take the real binary down or outlive their delete: one
//! that ignores SIGTERM and forks children, one that floods its log, and the user's running
//! limit pausing sandboxes one after the other (which once killed Switchboard with SIGSEGV:
//! the waiting thread of a child that ended ran out of stack in the allocator).

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use switchboard_testkit::{Backend, TestDatabase};

fn start(server: &Server, key: &str, spec: &str) -> String {
    let (code, body) = send_json(
        client()
            .post(server.url(&format!("/api/v1/sandboxes?sandbox_spec_id={spec}")))
            .header("X-Access-Token", key),
    );
    assert_eq!(code, 200, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Pids of live processes (not zombies) whose working directory is under `dir` (every
/// sandbox process and its children run in the sandbox's directory) or whose command line
/// names it (a confined sandbox's `bwrap` and its namespace's init, which run from `/`).
fn live_processes_under(dir: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let named = String::from_utf8_lossy(&cmdline).contains(&format!("{dir}/sandboxes/"));
        if !zombie && (cwd.to_string_lossy().starts_with(dir) || named) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn misbehaving_sandboxes_do_not_take_the_server_down() {
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    let marker = "flood-line-of-a-sandbox";
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([
            {"id": "plain", "command": [python(), &standin], },
            {
                "id": "stubborn",
                "command": [python(), &standin],
                "initial_env": {"STANDIN_MODE": "ignore-sigterm", "STANDIN_FORK": "3"}
            },
            {
                // Floods its log from a child in its group, and serves.
                "id": "flood",
                "command": ["sh", "-c", format!("yes {marker} & exec \"$0\" \"$@\""),
                    python(), &standin],
            }
        ])
        .to_string(),
    )
    .unwrap();
    let (server, key, _cleanup) = serve_sandboxes(&db, &data, &["--max-running-sandboxes", "1"]);

    // One running sandbox at a time: each start pauses the previous one.
    let mut ids = Vec::new();
    for spec in ["plain", "stubborn", "plain", "flood", "stubborn", "plain"] {
        let id = start(&server, &key, spec);
        wait_sandbox_status(&server, &key, &id, "RUNNING");
        ids.push(id);
    }
    // The flood runs while the server serves.
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(2) {
        let (code, _) = send_json(client().get(server.url("/health")));
        assert_eq!(code, 200);
    }
    let (code, body) = send_json(
        client()
            .get(server.url("/api/v1/sandboxes/search"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["items"].as_array().unwrap().len(), ids.len());

    for id in &ids {
        let (code, body) = send_json(
            client()
                .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
                .header("X-Access-Token", &key),
        );
        assert_eq!(code, 200, "{body}");
    }
    // Every process of every sandbox (children, the SIGTERM-ignoring ones, the flood) is
    // gone within the stop timeout (10 s) and a margin; the server is still up.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = live_processes_under(&data.path().display().to_string());
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes outlived their delete: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, _) = send_json(client().get(server.url("/health")));
    assert_eq!(code, 200, "the server went down");
    let mut server = server;
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status:?}");
}

/// Kills every process whose working directory is under its path when dropped: a sandbox
/// outlives the server by design, so a test that fails before deleting its sandboxes would
/// leave them running (a flooding one would fill the disk through its deleted log).
struct KillSandboxesOnDrop(String);

impl Drop for KillSandboxesOnDrop {
    fn drop(&mut self) {
        for pid in live_processes_under(&self.0) {
            // Its process group too: a confined sandbox's bwrap and namespace init with it.
            for target in [format!("-{pid}"), pid.to_string()] {
                let _ = std::process::Command::new("kill")
                    .args(["-9", "--", &target])
                    .status();
            }
        }
    }
}

/// Serves `db` with its data in `data` and the sandbox specs `data/specs.json` (written by the
/// test), plus `extra` flags: the server, the bootstrap key, and the guard that kills the
/// sandboxes' processes when the test ends.
fn serve_sandboxes(
    db: &TestDatabase,
    data: &TempDir,
    extra: &[&str],
) -> (Server, String, KillSandboxesOnDrop) {
    let data_dir = data.path().display().to_string();
    let cleanup = KillSandboxesOnDrop(data_dir.clone());
    let specs = data.path().join("specs.json").display().to_string();
    let mut args = vec!["--data-dir", &data_dir, "--sandbox-specs", &specs];
    args.extend_from_slice(extra);
    let server = Server::spawn_with(db.url(), ServeOptions { args, env: vec![] });
    let key = server.bootstrap_key();
    (server, key, cleanup)
}

/// The size of a file, 0 when it is missing.
fn size_of(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

#[test]
fn a_flooding_sandbox_log_is_kept_under_its_cap() {
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let standin = switchboard_testkit::standin_agent_server()
        .display()
        .to_string();
    // About 100 MiB/s: 1,024 lines of 1 KiB every 10 ms, from a child in the sandbox's group.
    let flood = "import sys, time\nwhile True:\n    sys.stdout.write(('x' * 1023 + '\\n') * 1024)\n    sys.stdout.flush()\n    time.sleep(0.01)";
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{
            "id": "flood",
            // The interpreter and the script as arguments of their own: a confined sandbox
            // sees the absolute paths among its command's arguments.
            "command": ["sh", "-c", "\"$0\" -c \"$FLOOD\" & exec \"$0\" \"$@\"",
                python(), &standin],
            "initial_env": {"FLOOD": flood}
        }])
        .to_string(),
    )
    .unwrap();
    let (server, key, _cleanup) = serve_sandboxes(&db, &data, &["--sandbox-log-max-mib", "4"]);
    let id = start(&server, &key, "flood");
    wait_sandbox_status(&server, &key, &id, "RUNNING");
    let dir = data.path().join("sandboxes").join(id.replace('-', ""));
    let dir = if dir.exists() {
        dir
    } else {
        data.path().join("sandboxes").join(&id)
    };
    let log = dir.join("agent-server.log");
    let previous = dir.join("agent-server.log.1");

    // For 6 s (about 600 MiB written), the log never holds more than the cap plus what the
    // flood writes between two checks (1 s: about 100 MiB; 200 MiB allowed for a slow machine).
    let began = Instant::now();
    let mut largest = 0;
    while began.elapsed() < Duration::from_secs(6) {
        largest = largest.max(size_of(&log));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        largest < 204 * 1024 * 1024,
        "the log reached {largest} bytes against a 4 MiB cap"
    );
    // The end of a trimmed log is kept (1 MiB, whole lines), and the server logged the trim.
    let kept = size_of(&previous);
    assert!(
        kept > 0 && kept <= 1024 * 1024,
        "agent-server.log.1 holds {kept} bytes"
    );
    assert!(
        server
            .stderr_lines()
            .iter()
            .any(|l| l.contains("sandbox log over its cap")),
        "no trim in the server's log"
    );
    let (code, _) = send_json(client().get(server.url("/health")));
    assert_eq!(code, 200);
    let (code, body) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
}

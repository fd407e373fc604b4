//! A confined process sandbox's share of the host (issue 33, "Resources"): in a control group
//! of its own, a memory hog is killed inside it, a fork bomb stops at its process cap and a
//! CPU spinner gets its quota, while its own agent server and another sandbox go on answering.
//! Needs root (control groups belong to root); elsewhere the test says why it skips.

use std::time::Duration;

use switchboard_domain::sandboxes::limits::{Cpus, ResourceLimits};
use switchboard_domain::sandboxes::runtime::{AgentServerClient, SandboxRuntime};
use switchboard_sandbox::{Cgroups, SandboxGroups};

use crate::common::{Fixture, Sandbox, launch_spec};

/// The operator's process cap in this test.
const PIDS_MAX: u64 = 48;

#[test]
fn a_sandbox_at_its_limits_is_the_only_one_affected() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: not root, control groups cannot be made");
        return;
    }
    let cgroups = Cgroups::detect().unwrap_or_else(|e| panic!("no control groups here: {e}"));
    let fx = Fixture::confined_in_groups(SandboxGroups {
        cgroups: cgroups.clone(),
        pids_max: Some(PIDS_MAX),
    });
    let mut hog = launch_spec("", 0);
    hog.spec.limits = ResourceLimits {
        memory_mb: Some(128),
        cpus: Some(Cpus::from_cpus(0.2).unwrap()),
    };
    let attacker = Sandbox::new(fx.runtime.start(&hog).unwrap());
    let other = launch_spec("", 0);
    let bystander = Sandbox::new(fx.runtime.start(&other).unwrap());
    fx.wait_alive(&attacker);
    fx.wait_alive(&bystander);
    let alive = |sb: &Sandbox| {
        fx.client
            .alive(&sb.handle.agent_server_url, Duration::from_secs(5))
            .is_ok()
    };
    // Its group holds its agent server, with its limits.
    let dirs = cgroups.dirs(&hog.sandbox_id.to_string());
    let procs: String = dirs
        .iter()
        .map(|d| std::fs::read_to_string(d.join("cgroup.procs")).unwrap())
        .collect();
    assert!(!procs.trim().is_empty(), "no process in {dirs:?}");
    let run = |c: &str| fx.bash(&attacker, &hog.session_key, c);

    // Memory: 400 MiB asked for, 128 MiB allowed: killed inside the sandbox.
    let memory = run(
        "python3 -c 'b = bytearray(400 << 20); b[::4096] = b\"x\" * len(b[::4096]); print(\"allocated\")'",
    );
    assert!(!memory.stdout.contains("allocated"), "{memory:?}");
    assert!(
        alive(&attacker) && alive(&bystander),
        "the OOM kill went too far"
    );

    // Processes: a fork bomb stops at the cap.
    let forks = run("python3 -c \"
import os, time
n = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(15)
        os._exit(0)
    n += 1
print('forked', n)
\"");
    let forked: u64 = forks
        .stdout
        .trim()
        .strip_prefix("forked ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{forks:?}"));
    assert!(
        forked < PIDS_MAX,
        "{forked} forks under a cap of {PIDS_MAX}"
    );
    assert!(alive(&bystander), "the fork bomb reached the other sandbox");

    // CPU: a spinner gets about its 0.2 CPU.
    let spin = run("python3 -c \"
import time
start, cpu = time.monotonic(), time.process_time()
while time.monotonic() - start < 2:
    pass
print(round((time.process_time() - cpu) / (time.monotonic() - start), 3))
\"");
    let share: f64 = spin
        .stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{spin:?}"));
    assert!(
        share < 0.35,
        "the spinner got {share} of a CPU under a 0.2 quota"
    );

    fx.runtime.delete(&attacker.handle).unwrap();
    assert!(
        dirs.iter().all(|d| !d.exists()),
        "the group outlived its sandbox: {dirs:?}"
    );
    assert!(alive(&bystander));
    fx.runtime.delete(&bystander.handle).unwrap();
}

/// Free bytes of the file system holding `path`, as `df` says.
fn free_bytes(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_sandbox_that_fills_its_directory_fills_only_its_own_file_system() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: not root, file systems cannot be mounted");
        return;
    }
    let quota = switchboard_sandbox::WorkspaceQuota::detect(64)
        .unwrap_or_else(|e| panic!("no workspace quota here: {e}"));
    let fx = Fixture::confined_with_quota(quota);
    let filler = launch_spec("", 0);
    let attacker = Sandbox::new(fx.runtime.start(&filler).unwrap());
    let other = launch_spec("", 0);
    let bystander = Sandbox::new(fx.runtime.start(&other).unwrap());
    fx.wait_alive(&attacker);
    fx.wait_alive(&bystander);
    let dir = attacker.handle.working_dir.clone();
    let host_free = free_bytes(fx.runtime.sandboxes_root());
    // 200 MiB into /workspace and then its home: both its own 64 MiB file system.
    for target in ["/workspace/fill", "$HOME/fill"] {
        let fill = fx.bash(
            &attacker,
            &filler.session_key,
            &format!("dd if=/dev/zero of={target} bs=1M count=200 2>&1; echo exit=$?"),
        );
        assert!(
            fill.stdout.contains("No space left on device") && !fill.stdout.contains("exit=0"),
            "{target}: {fill:?}"
        );
    }
    assert!(free_bytes(&dir) < 1024 * 1024, "its file system is full");
    // The host's file system lost at most the image's 64 MiB (others write there meanwhile).
    let lost = host_free.saturating_sub(free_bytes(fx.runtime.sandboxes_root()));
    assert!(lost < 100 * 1024 * 1024, "the host lost {lost} bytes");
    // The other sandbox writes on.
    let write = fx.bash(
        &bystander,
        &other.session_key,
        "dd if=/dev/zero of=/workspace/ok bs=1M count=8 2>/dev/null && echo wrote",
    );
    assert!(write.stdout.contains("wrote"), "{write:?}");
    assert!(
        fx.client
            .alive(&attacker.handle.agent_server_url, Duration::from_secs(5))
            .is_ok()
    );

    fx.runtime.delete(&attacker.handle).unwrap();
    let image = switchboard_sandbox::WorkspaceQuota::image(
        fx.runtime.sandboxes_root(),
        &filler.sandbox_id.to_string(),
    );
    assert!(
        !dir.exists() && !image.exists(),
        "{dir:?} or {image:?} left"
    );
    fx.runtime.delete(&bystander.handle).unwrap();
}

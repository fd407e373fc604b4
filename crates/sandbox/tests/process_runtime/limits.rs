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

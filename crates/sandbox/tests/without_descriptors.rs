//! Looking at a sandbox when this process has no file descriptor left (issue 24 item 3): a
//! real stand-in sandbox is started, then the soft `RLIMIT_NOFILE` of this test process (its
//! own binary: nothing else runs in it) is lowered to 0 for a moment, so that opening
//! `/proc/<pid>/stat` or a socket fails with `EMFILE`. The runtime's `try_observe` must say
//! it could not look (never "gone"), and the health probe that Switchboard could not make
//! must be `Local` (never "unreachable"); with the limit restored both see the sandbox again.

#[allow(dead_code)]
#[path = "process_runtime/common.rs"]
mod common;

use common::{Fixture, PROBE};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, AgentServerError, Observed, RuntimeError, SandboxRuntime,
};

/// Descriptors this process has open now.
fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[test]
fn a_runtime_without_descriptors_cannot_look_and_says_so() {
    let fx = Fixture::new();
    let sandbox = fx.start("", 0);
    fx.wait_alive(&sandbox);
    let handle = &sandbox.handle;
    assert_eq!(fx.runtime.try_observe(handle), Ok(Observed::Running));

    // A client of its own: the fixture's keeps a pooled connection to the sandbox.
    let client = switchboard_sandbox::HttpAgentServerClient::new();
    let saved = getrlimit(Resource::Nofile);
    // The limit bounds descriptor numbers: at 0 no new one can be opened, while those open
    // (standard streams, the test harness's) stay usable.
    assert!(open_now() > 3);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(0),
            maximum: saved.maximum,
        },
    )
    .unwrap();
    let looked = fx.runtime.try_observe(handle);
    let probed = client.alive(&handle.agent_server_url, PROBE);
    setrlimit(Resource::Nofile, saved).unwrap();

    match &looked {
        Err(RuntimeError::Io(why)) => {
            assert!(why.contains("Too many open files"), "{why}");
        }
        other => panic!("without descriptors the runtime claimed to see {other:?}"),
    }
    assert!(
        matches!(probed, Err(AgentServerError::Local { .. })),
        "a probe that could not be made: {probed:?}"
    );
    // The limit back: the sandbox is seen, and answers.
    assert_eq!(fx.runtime.try_observe(handle), Ok(Observed::Running));
    fx.client
        .alive(&handle.agent_server_url, PROBE)
        .expect("it answers again");
}

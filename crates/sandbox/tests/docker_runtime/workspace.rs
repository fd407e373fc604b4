//! `/workspace` of the agent-server image on the sandbox's volume, and the agent server's
//! address inside the container (issue 31): a file written in `/workspace/project` through
//! the agent server survives pause and resume on the volume; `AGENT_SERVER_PORT` is the port
//! the agent server listens on in the container, and dialing `localhost` there answers.

use std::time::Duration;

use switchboard_domain::sandboxes::runtime::{
    AgentServerClient, BashCommand, BashOutcome, RuntimeHandle, SandboxRuntime, SessionKey,
};

use crate::common::{Fixture, identity, launch_spec, preset};

fn bash(fx: &Fixture, handle: &RuntimeHandle, key: &SessionKey, command: &str) -> BashOutcome {
    fx.client
        .execute_bash(
            &handle.agent_server_url,
            key,
            &BashCommand {
                command: command.to_owned(),
                cwd: None,
                timeout_secs: 60,
            },
        )
        .unwrap_or_else(|e| panic!("{command}: {e}"))
}

#[test]
fn the_workspace_is_on_the_volume_and_the_agent_server_is_found_inside() {
    let Some(fx) = Fixture::new("the_workspace_is_on_the_volume") else {
        return;
    };
    let launch = launch_spec(preset());
    let handle = fx.runtime.start(&launch).expect("the image starts");
    fx.wait_alive(&handle);
    assert_eq!(handle.project_dir.as_deref(), Some("/workspace/project"));
    let mounts = fx.inspect(&handle).unwrap().mounts.unwrap_or_default();
    let volume = mounts
        .iter()
        .find(|m| m.destination.as_deref() == Some("/workspace"))
        .expect("a mount at /workspace");
    assert_eq!(
        volume.name.as_deref(),
        Some(identity(&handle).volume.as_str())
    );

    let dial = "import os, urllib.request; print(urllib.request.urlopen('http://localhost:' + \
                os.environ['AGENT_SERVER_PORT'] + '/alive', timeout=10).status)";
    let out = bash(
        &fx,
        &handle,
        &launch.session_key,
        &format!(
            "set -e; mkdir -p /workspace/project/src; echo one > /workspace/project/src/x; \
             echo $AGENT_SERVER_PORT; echo $SANDBOX_ID; python3 -c \"{dial}\""
        ),
    );
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            handle.sandbox_port.to_string().as_str(),
            launch.sandbox_id.to_string().as_str(),
            "200"
        ],
        "{out:?}"
    );

    fx.runtime.pause(&handle).unwrap();
    fx.runtime.resume(&handle).unwrap();
    assert!(fx.alive(&handle, Duration::from_secs(10)));
    let out = bash(
        &fx,
        &handle,
        &launch.session_key,
        "cat /workspace/project/src/x",
    );
    assert_eq!(
        (out.exit_code, out.stdout.as_str()),
        (Some(0), "one\n"),
        "{out:?}"
    );
    fx.runtime.delete(&handle).unwrap();
}

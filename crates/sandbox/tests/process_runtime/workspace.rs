//! `/workspace` in a confined sandbox and the agent server's address inside it (issue 31):
//! what OpenHands' clients assume of every sandbox (the SDK's default `working_dir`
//! `/workspace/project`; `http://localhost:$AGENT_SERVER_PORT` for programs in it).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use switchboard_domain::sandboxes::runtime::{Observed, SandboxRuntime};
use switchboard_sandbox::ProcessIdentity;

use crate::common::{Fixture, Sandbox, launch_spec, python};

/// A command run through the agent server writes `/workspace/project/x`; the file is in the
/// sandbox's directory on the host, owned by the sandbox's user; another sandbox sees a
/// `/workspace` of its own; pause and resume keep it; the log stays out of the workspace.
#[test]
fn a_confined_sandbox_works_in_its_own_workspace() {
    let fx = Fixture::confined(Vec::new());
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    assert_eq!(sb.handle.project_dir.as_deref(), Some("/workspace/project"));

    let out = fx.bash(
        &sb,
        &launch.session_key,
        "mkdir -p /workspace/project/src && printf 'one\\n' > /workspace/project/x \
         && printf 'two\\n' > /workspace/project/src/y && ls -A /workspace",
    );
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let listed: Vec<&str> = out.stdout.lines().collect();
    assert!(listed.contains(&"project"), "{out:?}");
    assert!(
        !listed.contains(&"agent-server.log"),
        "the log is not in the workspace: {out:?}"
    );
    let host = sb.handle.working_dir.join("workspace/project");
    assert_eq!(fs::read_to_string(host.join("x")).unwrap(), "one\n");
    assert_eq!(fs::read_to_string(host.join("src/y")).unwrap(), "two\n");
    if let Some(uid) = ProcessIdentity::of(&sb.handle).unwrap().uid {
        for file in ["x", "src", "src/y"] {
            let meta = fs::metadata(host.join(file)).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (uid, uid), "{file}");
        }
        let workspace = fs::metadata(sb.handle.working_dir.join("workspace")).unwrap();
        assert_eq!(workspace.uid(), uid, "the sandbox's user owns /workspace");
    }

    // Another sandbox has a /workspace of its own and cannot reach the first one's.
    let other_launch = launch_spec("", 0);
    let other = Sandbox::new(fx.runtime.start(&other_launch).unwrap());
    fx.wait_alive(&other);
    let theirs = host.join("x");
    let out = fx.bash(
        &other,
        &other_launch.session_key,
        &format!(
            "ls -A /workspace/project; test -e /workspace/project/x && echo SEEN; \
             cat {} 2>/dev/null && echo READ; echo done",
            theirs.display()
        ),
    );
    assert_eq!(out.stdout.trim(), "done", "{out:?}");
    assert!(
        fs::read_dir(other.handle.working_dir.join("workspace/project"))
            .unwrap()
            .next()
            .is_none()
    );

    // Pause and resume keep it; the sandbox goes on writing there.
    fx.runtime.pause(&sb.handle).unwrap();
    assert_eq!(fx.runtime.observe(&sb.handle), Observed::Stopped);
    fx.runtime.resume(&sb.handle).unwrap();
    fx.wait_alive(&sb);
    let out = fx.bash(
        &sb,
        &launch.session_key,
        "cat /workspace/project/x && echo three >> /workspace/project/x",
    );
    assert_eq!(
        (out.exit_code, out.stdout.as_str()),
        (Some(0), "one\n"),
        "{out:?}"
    );
    assert_eq!(fs::read_to_string(host.join("x")).unwrap(), "one\nthree\n");

    fx.runtime.delete(&other.handle).unwrap();
    fx.runtime.delete(&sb.handle).unwrap();
    assert!(!host.exists());
}

/// `AGENT_SERVER_PORT` (and `AGENT_SERVER`) inside the sandbox is the port its agent server
/// listens on there, and `curl localhost:$AGENT_SERVER_PORT/alive` from inside answers;
/// `SANDBOX_ID` is the sandbox's id. Confined and not.
#[test]
fn programs_in_a_sandbox_find_its_agent_server() {
    for fx in [Fixture::confined(Vec::new()), Fixture::new()] {
        let launch = launch_spec("", 0);
        let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
        fx.wait_alive(&sb);
        let dial = "import os, urllib.request; print(urllib.request.urlopen('http://localhost:' + \
                    os.environ['AGENT_SERVER_PORT'] + '/alive', timeout=10).status)";
        let out = fx.bash(
            &sb,
            &launch.session_key,
            &format!(
                "echo $AGENT_SERVER_PORT; echo $AGENT_SERVER; echo $SANDBOX_ID; \
                 curl -fsS \"localhost:$AGENT_SERVER_PORT/alive\"; echo; {} -c \"{dial}\"",
                python().display()
            ),
        );
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        let lines: Vec<&str> = out.stdout.lines().collect();
        let port = sb.handle.sandbox_port.to_string();
        assert_eq!(
            lines[..3],
            [
                port.as_str(),
                port.as_str(),
                launch.sandbox_id.to_string().as_str()
            ],
            "{out:?}"
        );
        assert!(
            lines[3].contains(r#""status""#) && lines[3].contains(r#""ok""#),
            "{out:?}"
        );
        assert_eq!(lines[4], "200", "{out:?}");
        fx.runtime.delete(&sb.handle).unwrap();
    }
}

/// Unconfined (`--process-isolation none`) there is no `/workspace`: the same layout under
/// the sandbox's directory, which the handle names as its project directory.
#[test]
fn an_unconfined_sandbox_has_its_project_in_its_directory() {
    let fx = Fixture::new();
    let launch = launch_spec("", 0);
    let sb = Sandbox::new(fx.runtime.start(&launch).unwrap());
    fx.wait_alive(&sb);
    let project = sb.handle.working_dir.join("workspace/project");
    assert_eq!(
        sb.handle.project_dir.as_deref().map(Path::new),
        Some(project.as_path())
    );
    assert!(project.is_dir());
    let out = fx.bash(
        &sb,
        &launch.session_key,
        &format!("echo hi > {}/x", project.display()),
    );
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(fs::read_to_string(project.join("x")).unwrap(), "hi\n");
    fx.runtime.delete(&sb.handle).unwrap();
}

//! Preparing a process launch: the sandbox's environment, its working directory inside the
//! sandbox's directory, and its program resolved on the sandbox's own `PATH` (never
//! Switchboard's).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use switchboard_domain::sandboxes::runtime::{LaunchSpec, RuntimeError};
use switchboard_domain::sandboxes::services::ExposedService;

/// The variable that carries the session key (reference agent-server-webhooks §1).
pub const SESSION_KEY_VAR: &str = "OH_SESSION_API_KEYS_0";
/// The variable that carries the webhook base URL (reference agent-server-webhooks §1).
pub const WEBHOOK_URL_VAR: &str = "OH_WEBHOOKS_0_BASE_URL";
/// The webhook's `event_buffer_size` (reference agent-server-webhooks §2; default 5): each
/// event is posted as soon as it is queued (issue 19, fast path).
pub const WEBHOOK_BUFFER_VAR: &str = "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE";
/// The webhook's `flush_delay` in seconds (default 30; must be > 0): how long a queued event
/// that could not be posted at once (a post in flight failed) waits before the next attempt.
pub const WEBHOOK_FLUSH_VAR: &str = "OH_WEBHOOKS_0_FLUSH_DELAY";
/// What every sandbox gets for [`WEBHOOK_BUFFER_VAR`] and [`WEBHOOK_FLUSH_VAR`], after the
/// spec's `initial_env` (a spec cannot make delivery slower): one event per post, 0.1 s.
pub const WEBHOOK_FAST_PATH: [(&str, &str); 2] =
    [(WEBHOOK_BUFFER_VAR, "1"), (WEBHOOK_FLUSH_VAR, "0.1")];

/// The variable telling programs in a sandbox the port its agent server listens on inside
/// the sandbox (`http://localhost:$AGENT_SERVER_PORT`): what the SDK's
/// `OpenHandsCloudWorkspace(local_agent_server_mode=True)` 1.58.2 dials (default 60000, the
/// port of OpenHands' remote runtime), as the automation service's runs do.
pub const AGENT_SERVER_PORT_VAR: &str = "AGENT_SERVER_PORT";
/// The variable naming the sandbox's own id (as the API shows it): what the same SDK mode
/// reads to call `/api/v1/sandboxes/{id}/settings/…` for `get_llm()` and `get_secrets()`.
pub const SANDBOX_ID_VAR: &str = "SANDBOX_ID";

/// The complete environment of a sandbox that exposes no service besides its agent server,
/// listening on `agent_port` inside the sandbox: [`environment_with`] and no service ports.
///
/// # Errors
/// As [`environment_with`].
pub fn environment(
    launch: &LaunchSpec,
    agent_port: u16,
) -> Result<BTreeMap<String, String>, RuntimeError> {
    environment_with(launch, agent_port, &[])
}

/// The complete environment of a sandbox, in order of precedence: the passthrough variables,
/// overridden by the spec's `initial_env`, overridden by the session key, the webhook URL,
/// the webhook's [`WEBHOOK_FAST_PATH`] settings (which a spec cannot change), the agent
/// server's address inside the sandbox (`agent_port`: [`AGENT_SERVER_PORT_VAR`] and
/// `AGENT_SERVER`, as OpenHands' Docker runtime names each exposed port; [`SANDBOX_ID_VAR`])
/// and the ports the runtime gave its exposed services, `(service, port inside the sandbox)`
/// ([`ExposedService::env`]: `WORKER_1=<port>`, `VSCODE` and `OH_VSCODE_PORT`; issue 22).
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for a name that cannot be a variable's (empty, `=`, NUL) or
/// a value with NUL.
pub fn environment_with(
    launch: &LaunchSpec,
    agent_port: u16,
    services: &[(ExposedService, u16)],
) -> Result<BTreeMap<String, String>, RuntimeError> {
    let sandbox_id = launch.sandbox_id.to_string();
    let ports: Vec<(&str, String)> = std::iter::once((ExposedService::AgentServer, agent_port))
        .chain(services.iter().copied())
        .flat_map(|(service, port)| service.env(port))
        .chain([(SANDBOX_ID_VAR, sandbox_id)])
        .collect();
    let mut env = BTreeMap::new();
    let pairs = launch
        .passthrough_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(
            launch
                .spec
                .initial_env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .chain([
            (SESSION_KEY_VAR, launch.session_key.expose()),
            (WEBHOOK_URL_VAR, launch.webhook_base_url.as_str()),
        ])
        .chain(WEBHOOK_FAST_PATH)
        .chain(ports.iter().map(|(k, v)| (*k, v.as_str())));
    for (name, value) in pairs {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(RuntimeError::InvalidSpec(format!(
                "{name:?} cannot be an environment variable name"
            )));
        }
        if value.contains('\0') {
            return Err(RuntimeError::InvalidSpec(format!(
                "the value of {name} contains NUL"
            )));
        }
        env.insert(name.to_owned(), value.to_owned());
    }
    Ok(env)
}

/// The directory the command runs in: the spec's `working_dir`, a relative path without `..`,
/// inside `sandbox_dir` (`.` is `sandbox_dir` itself).
///
/// # Errors
/// [`RuntimeError::InvalidSpec`] for an absolute path or one with `..`.
pub fn working_dir(sandbox_dir: &Path, spec_working_dir: &str) -> Result<PathBuf, RuntimeError> {
    let relative = Path::new(spec_working_dir);
    let inside = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(RuntimeError::InvalidSpec(format!(
            "working_dir {spec_working_dir:?}: the process runtime needs a relative path \
             without `..` (it runs inside the sandbox's own directory)"
        )));
    }
    Ok(sandbox_dir.join(relative))
}

/// The program to execute: a name without `/` is looked up in the directories of the
/// sandbox's `PATH`; a relative path is taken from `cwd`, as the child would.
///
/// # Errors
/// [`RuntimeError::Launch`] naming the program and where it was looked for.
pub fn resolve_program(
    program: &str,
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<PathBuf, RuntimeError> {
    if program.contains('/') {
        let path = cwd.join(program);
        return if is_executable_file(&path) {
            Ok(path)
        } else {
            Err(RuntimeError::Launch(format!(
                "command `{program}` not found or not executable ({})",
                path.display()
            )))
        };
    }
    let Some(search) = env.get("PATH") else {
        return Err(RuntimeError::Launch(format!(
            "command `{program}`: the sandbox has no PATH to find it on (pass PATH through or \
             give the program's full path)"
        )));
    };
    std::env::split_paths(search)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| cwd.join(dir).join(program))
        .find(|candidate| is_executable_file(candidate))
        .ok_or_else(|| {
            RuntimeError::Launch(format!(
                "command `{program}` not found on the sandbox's PATH ({search})"
            ))
        })
}

fn is_executable_file(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_domain::SandboxId;
    use switchboard_domain::sandboxes::runtime::SessionKey;
    use switchboard_domain::sandboxes::specs::SandboxSpec;

    fn launch(initial: &[(&str, &str)], passthrough: &[(&str, &str)]) -> LaunchSpec {
        LaunchSpec {
            sandbox_id: SandboxId::new_random(),
            spec: SandboxSpec {
                id: "s".into(),
                command: vec!["x".into()],
                initial_env: initial
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
                working_dir: ".".into(),
                limits: Default::default(),
                created_at: time::OffsetDateTime::UNIX_EPOCH,
                runtime: None,
                exposed_services: Vec::new(),
                egress: Default::default(),
            },
            session_key: SessionKey::new("secret"),
            webhook_base_url: "http://127.0.0.1:9/api/v1/webhooks".into(),
            passthrough_env: passthrough
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            local_repositories: Vec::new(),
            org_id: None,
            owner_id: None,
        }
    }

    #[test]
    fn spec_wins_over_passthrough_and_the_key_wins_over_both() {
        let spec = launch(
            &[
                ("PATH", "/spec/bin"),
                (SESSION_KEY_VAR, "forged"),
                (WEBHOOK_BUFFER_VAR, "500"),
                (WEBHOOK_FLUSH_VAR, "30"),
                (AGENT_SERVER_PORT_VAR, "60000"),
                (SANDBOX_ID_VAR, "forged"),
                ("A", "1"),
            ],
            &[("PATH", "/usr/bin"), ("HOME", "/root")],
        );
        let env = environment(&spec, 41000).unwrap();
        let id = spec.sandbox_id.to_string();
        let expected: BTreeMap<String, String> = [
            ("A", "1"),
            ("AGENT_SERVER", "41000"),
            (AGENT_SERVER_PORT_VAR, "41000"),
            (SANDBOX_ID_VAR, id.as_str()),
            ("HOME", "/root"),
            (SESSION_KEY_VAR, "secret"),
            (WEBHOOK_URL_VAR, "http://127.0.0.1:9/api/v1/webhooks"),
            (WEBHOOK_BUFFER_VAR, "1"),
            (WEBHOOK_FLUSH_VAR, "0.1"),
            ("PATH", "/spec/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        assert_eq!(env, expected);
        let with = environment_with(
            &launch(&[("WORKER_1", "1"), ("OH_VSCODE_PORT", "2")], &[]),
            41000,
            &[
                (ExposedService::Vscode, 40001),
                (ExposedService::Worker1, 40002),
            ],
        )
        .unwrap();
        assert_eq!(
            (&with["VSCODE"], &with["OH_VSCODE_PORT"], &with["WORKER_1"]),
            (
                &"40001".to_owned(),
                &"40001".to_owned(),
                &"40002".to_owned()
            ),
            "the runtime's ports win over the spec's"
        );
        assert!(!with.contains_key("WORKER_2"));
        assert!(matches!(
            environment(&launch(&[], &[("A=B", "1")]), 1),
            Err(RuntimeError::InvalidSpec(_))
        ));
        assert!(matches!(
            environment(&launch(&[("A", "x\0y")], &[]), 1),
            Err(RuntimeError::InvalidSpec(_))
        ));
    }

    #[test]
    fn working_dirs_stay_inside_the_sandbox() {
        let root = Path::new("/data/sb/1");
        assert_eq!(working_dir(root, ".").unwrap(), Path::new("/data/sb/1/."));
        assert_eq!(
            working_dir(root, "work/project").unwrap(),
            Path::new("/data/sb/1/work/project")
        );
        for bad in ["/etc", "../x", "a/../../b"] {
            assert!(
                matches!(working_dir(root, bad), Err(RuntimeError::InvalidSpec(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn programs_are_found_on_the_sandbox_path_only() {
        let env: BTreeMap<String, String> =
            [("PATH".to_owned(), "/nonexistent:/bin:/usr/bin".to_owned())].into();
        let sh = resolve_program("sh", &env, Path::new("/")).unwrap();
        assert!(sh.ends_with("sh") && sh.is_absolute(), "{sh:?}");
        let missing = resolve_program("no-such-program-xyz", &env, Path::new("/")).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "the sandbox could not be started: command `no-such-program-xyz` not found on the \
             sandbox's PATH (/nonexistent:/bin:/usr/bin)"
        );
        let no_path = resolve_program("sh", &BTreeMap::new(), Path::new("/")).unwrap_err();
        assert!(no_path.to_string().contains("has no PATH"), "{no_path}");
        assert_eq!(
            resolve_program("/bin/sh", &BTreeMap::new(), Path::new("/tmp")).unwrap(),
            Path::new("/bin/sh")
        );
        assert!(resolve_program("./nope", &env, Path::new("/")).is_err());
    }
}

//! Whether a spec's command can run in a process sandbox, checked once when the server starts
//! ([`ProcessRuntime::check_command`]): cheap (no port, no directory, no agent server
//! started), and only what a start would find too. The program is resolved on the sandbox's
//! `PATH` exactly as a start resolves it ([`launch::resolve_program`]); a script's `#!`
//! interpreter must be there; and for a Python command (`python3 -m MODULE`, or a script whose
//! interpreter is a Python, such as a venv's `agent-server`) that Python is run once, confined
//! as a sandbox would be, to import-check the module (`openhands.agent_server` for
//! `agent-server`; nothing but starting for another script). What an agent server does once
//! it runs is not checked.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use switchboard_domain::sandboxes::specs::{AGENT_SERVER_PROGRAM, SandboxSpec};

use super::ProcessRuntime;
use crate::confine::{self, Isolation, Plan, stderr_of, wait_within};
use crate::launch;

/// How long the Python check may run.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);
/// The module the `agent-server` program runs.
const AGENT_SERVER_MODULE: &str = "openhands.agent_server";
/// The check's program: exit 0 when the module (`argv[1]`, or none) can be found, 3 when not.
const FIND_MODULE: &str = "import importlib.util, sys\n\
    try:\n    found = len(sys.argv) < 2 or importlib.util.find_spec(sys.argv[1]) is not None\n\
    except Exception:\n    found = False\n\
    sys.exit(0 if found else 3)\n";

/// What the check of a command found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandCheck {
    /// It would start (as far as the check goes).
    Runs,
    /// It cannot run in a sandbox: why, in words naming the program.
    Fails(String),
    /// The check itself could not be made (it timed out, or could not be run): why.
    Unknown(String),
}

impl ProcessRuntime {
    /// Whether `spec`'s command can run in a sandbox of this runtime, whose environment would
    /// hold `passthrough_env` and the spec's `initial_env` (see the module's text).
    pub fn check_command(
        &self,
        spec: &SandboxSpec,
        passthrough_env: &[(String, String)],
    ) -> CommandCheck {
        let Some((program, args)) = spec.command.split_first() else {
            return CommandCheck::Fails("the command is empty".into());
        };
        let mut env: BTreeMap<String, String> = passthrough_env.iter().cloned().collect();
        env.extend(spec.initial_env.clone());
        let cwd = self.sandboxes_root.clone();
        let resolved = match launch::resolve_program(program, &env, &cwd) {
            Ok(p) => p,
            Err(e) => return CommandCheck::Fails(strip_prefix(&e.to_string())),
        };
        let interpreter = match interpreter_of(&resolved, &env, &cwd) {
            Ok(i) => i,
            Err(why) => return CommandCheck::Fails(why),
        };
        let python = |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python"))
        };
        let (check_with, module) = if python(&resolved) {
            let module = args
                .iter()
                .position(|a| a == "-m")
                .and_then(|i| args.get(i + 1))
                .cloned();
            (resolved.clone(), module)
        } else if let Some(i) = interpreter.filter(|i| python(i)) {
            let is_agent_server =
                resolved.file_name().and_then(|n| n.to_str()) == Some(AGENT_SERVER_PROGRAM);
            (i, is_agent_server.then(|| AGENT_SERVER_MODULE.to_owned()))
        } else {
            return CommandCheck::Runs;
        };
        self.run_python_check(
            program,
            &resolved,
            &check_with,
            module.as_deref(),
            args,
            &env,
        )
    }

    /// Runs [`FIND_MODULE`] with `python` (for `program`, resolved at `resolved`), confined as
    /// a sandbox would be.
    fn run_python_check(
        &self,
        program: &str,
        resolved: &Path,
        python: &Path,
        module: Option<&str>,
        spec_args: &[String],
        env: &BTreeMap<String, String>,
    ) -> CommandCheck {
        let mut argv: Vec<OsString> = vec!["-c".into(), FIND_MODULE.into()];
        argv.extend(module.map(OsString::from));
        let mut env = env.clone();
        let mut command = match &self.isolation {
            Isolation::None => {
                let mut c = Command::new(python);
                c.args(&argv).current_dir("/");
                c
            }
            Isolation::Bwrap(bwrap) => {
                // A confined sandbox's home is its own directory: here, its private /tmp.
                env.entry("HOME".into()).or_insert_with(|| "/tmp".into());
                let mut read_only =
                    confine::command_paths(resolved, spec_args, env.get("PATH").map(|s| &**s));
                read_only.extend(confine::command_paths(python, &[], None));
                let mut full = vec![python.as_os_str().to_os_string()];
                full.extend(argv);
                let plan = Plan {
                    sandbox_dir: PathBuf::new(),
                    workspace: None,
                    cwd: PathBuf::from("/"),
                    command: full,
                    read_only,
                    etc: None,
                    user: bwrap.users.as_ref().map(|u| u.range.first),
                    join_groups: Vec::new(),
                };
                let mut c = bwrap.command(&plan);
                c.current_dir("/");
                c
            }
        };
        let spawned = command
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => return CommandCheck::Unknown(format!("cannot run the check: {e}")),
        };
        let Some(status) = wait_within(&mut child, CHECK_TIMEOUT) else {
            return CommandCheck::Unknown(format!(
                "`{program}` did not finish a check within {CHECK_TIMEOUT:?}"
            ));
        };
        let said = last_line(&stderr_of(&mut child));
        let shown = format!("`{program}` ({})", resolved.display());
        match (status.code(), module) {
            (Some(0), _) => CommandCheck::Runs,
            (Some(3), Some(module)) => CommandCheck::Fails(format!(
                "{shown} has no module {module} there (the OpenHands agent server is not \
                 installed for it)"
            )),
            (Some(code @ (126 | 127)), _) => CommandCheck::Fails(format!(
                "{shown} exits with status {code} there: {} ({said})",
                if code == 127 {
                    "a program it runs is not found there"
                } else {
                    "a program it runs cannot be executed there"
                }
            )),
            (code, _) => CommandCheck::Fails(format!(
                "{shown} fails there (exit status {}): {said}",
                code.map_or_else(|| "none: a signal".to_owned(), |c| c.to_string())
            )),
        }
    }
}

/// The interpreter of a `#!` script (`#!/usr/bin/env NAME` resolved on the sandbox's `PATH`),
/// `None` for a binary.
///
/// # Errors
/// The interpreter is not there or cannot be executed.
fn interpreter_of(
    program: &Path,
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Option<PathBuf>, String> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = String::from_utf8_lossy(line);
    let line = line.lines().next().unwrap_or("").trim();
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Err(format!("{} has an empty `#!` line", program.display()));
    };
    let first = PathBuf::from(first);
    if !is_executable(&first) {
        return Err(format!(
            "the interpreter {} of {} (its `#!` line) is not there or cannot be executed",
            first.display(),
            program.display()
        ));
    }
    if first.file_name().and_then(|n| n.to_str()) == Some("env")
        && let Some(name) = words.find(|w| !w.starts_with('-'))
    {
        return launch::resolve_program(name, env, cwd)
            .map(Some)
            .map_err(|e| {
                format!(
                    "the interpreter of {} (its `#!` line): {}",
                    program.display(),
                    strip_prefix(&e.to_string())
                )
            });
    }
    Ok(Some(first))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A runtime error's words without "the sandbox could not be started: ".
fn strip_prefix(text: &str) -> String {
    text.strip_prefix("the sandbox could not be started: ")
        .unwrap_or(text)
        .to_owned()
}

/// The last non-empty line of a program's error output, at most 300 characters.
fn last_line(stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("it said nothing")
        .trim();
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn spec(command: &[&str]) -> SandboxSpec {
        switchboard_domain::sandboxes::specs::process_preset(
            Some(&command.join(" ")),
            None,
            time::OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap()
    }

    fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn unconfined_checks_find_what_a_start_would() {
        let dir = std::env::temp_dir().join(format!("preflight-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let runtime = ProcessRuntime::new(dir.join("sandboxes"));
        let path = format!("{}:/usr/bin:/bin", dir.join("bin").display());
        let env = vec![("PATH".to_owned(), path)];
        // Missing: named, with the PATH it was looked for on.
        let CommandCheck::Fails(why) = runtime.check_command(&spec(&["no-such-xyz"]), &env) else {
            panic!("a missing program runs");
        };
        assert!(
            why.contains("`no-such-xyz` not found on the sandbox's PATH"),
            "{why}"
        );
        // A shim that runs what is not there (a pyenv shim outside its installation).
        script(
            &dir.join("bin"),
            "python3",
            "#!/bin/sh\nexec /nonexistent/pyenv exec python3 \"$@\"\n",
        );
        let CommandCheck::Fails(why) =
            runtime.check_command(&spec(&["python3", "-m", "openhands.agent_server"]), &env)
        else {
            panic!("a broken shim runs");
        };
        assert!(
            why.contains("status 127") && why.contains("/nonexistent/pyenv"),
            "{why}"
        );
        // A script whose interpreter is gone.
        script(&dir.join("bin"), "agent-server", "#!/nonexistent/python3\n");
        let CommandCheck::Fails(why) = runtime.check_command(&spec(&["agent-server"]), &env) else {
            panic!("a script without its interpreter runs");
        };
        assert!(why.contains("/nonexistent/python3"), "{why}");
        // A plain program runs.
        assert_eq!(
            runtime.check_command(&spec(&["sh"]), &env),
            CommandCheck::Runs
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Sandbox specs: what a sandbox runs. A spec has OpenHands' `SandboxSpecInfo` fields
//! (reference app-server §4); Switchboard reads them from the operator's `--sandbox-specs`
//! file ([`parse_sandbox_specs`]) or, with none given, uses one built-in preset for the process
//! runtime ([`process_preset`]) or the Docker runtime ([`docker_preset`]), issue 9 "Sandbox
//! specs", issue 12.
//!
//! A runtime appends `--host <address> --port <port>` to a spec's command; the spec never
//! names the port. Optional resource limits (`memory_mb`, `cpus`) are in
//! [`crate::sandboxes::limits`].

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;
use time::OffsetDateTime;

use crate::sandboxes::egress::EgressLists;
use crate::sandboxes::limits::{self, ResourceLimits};
use crate::sandboxes::services::ExposedService;

/// The id of the built-in process preset.
pub const PROCESS_PRESET_ID: &str = "agent-server";

/// The image the built-in Docker preset runs unless `--agent-server-image` names another: the
/// tag `scripts/agent-server-image.sh` gives (issue 12).
pub const DEFAULT_AGENT_SERVER_IMAGE: &str = "switchboard/agent-server:local";

/// The working directory of the built-in Docker preset: the project directory of the agent
/// server image's workspace, as in OpenHands' Docker preset (reference app-server §4).
pub const DOCKER_PRESET_WORKING_DIR: &str = "/workspace/project";

/// The program the built-in preset runs when it is found on `PATH` (the OpenHands agent
/// server's console script, reference agent-server-webhooks §1).
pub const AGENT_SERVER_PROGRAM: &str = "agent-server";

/// The command of the built-in preset when [`AGENT_SERVER_PROGRAM`] is not on `PATH`.
pub const AGENT_SERVER_MODULE_COMMAND: [&str; 3] = ["python3", "-m", "openhands.agent_server"];

/// The working directory a spec gets when its file leaves `working_dir` out: the sandbox's
/// own directory. (OpenHands' default, `/home/openhands/workspace`, is a path inside a
/// container image and means nothing to the process runtime.)
pub const DEFAULT_WORKING_DIR: &str = ".";

/// A sandbox spec: OpenHands' `SandboxSpecInfo` (reference app-server §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// Unique, non-empty; for OpenHands' container runtimes it is the image reference.
    pub id: String,
    /// The program and its arguments (never empty; the program is a non-empty string). The
    /// runtime appends `--host 127.0.0.1 --port <port>`.
    pub command: Vec<String>,
    /// Environment variables the sandbox starts with, on top of a cleared environment.
    pub initial_env: BTreeMap<String, String>,
    /// Where the command runs. The process runtime takes a relative path inside the sandbox's
    /// directory (`.` is that directory itself); the Docker runtime an absolute path inside
    /// the container (`.`: the image's own working directory).
    pub working_dir: String,
    /// Optional memory and CPU limits (`memory_mb`, `cpus`), enforced by the Docker runtime and, as root, the process runtime (issue 33).
    pub limits: ResourceLimits,
    /// When Switchboard loaded the spec.
    pub created_at: OffsetDateTime,
    /// The runtime that runs it (`process`, `docker`, …); `None`: the server's default
    /// (`--sandbox-runtime`).
    pub runtime: Option<String>,
    /// The services it exposes besides `AGENT_SERVER` (always exposed): `VSCODE`,
    /// `WORKER_1`, `WORKER_2` (issue 22), sorted, each once, never `AGENT_SERVER`. Empty
    /// (the default): the agent server only.
    pub exposed_services: Vec<ExposedService>,
    /// Its own egress lists (`egress_allow`, `egress_deny`; issue 33), on top of the
    /// operator's. Empty (the default): the operator's alone.
    pub egress: EgressLists,
}

/// A sandbox spec that cannot be used, with where it came from.
///
/// Displayed as `<source>: <location>: <message>`, e.g.
/// `specs.json: [1].command: expected a non-empty array of strings`, so the operator can find
/// the field (issue 9: "a bad specs file stops `serve` with a message that names the file and
/// the field").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {}{message}", location_prefix(.location))]
pub struct SpecError {
    /// The file name or flag the spec came from (e.g. `specs.json`, `--agent-server-command`).
    pub source_name: String,
    /// The JSON path of the field in error (`[1].command`); empty for the whole document.
    pub location: String,
    /// What is wrong, in words.
    pub message: String,
}

fn location_prefix(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!("{location}: ")
    }
}

/// The fields a spec object may have; `created_at` is accepted (so a spec copied from an API
/// answer loads) and ignored: it is always the load time.
const KNOWN_FIELDS: [&str; 11] = [
    "id",
    "command",
    "initial_env",
    "working_dir",
    "memory_mb",
    "cpus",
    "created_at",
    "runtime",
    "exposed_services",
    "egress_allow",
    "egress_deny",
];

// Over 100 lines, on purpose: one pass over a spec's fields, a match arm per field (each
// short), so the accepted fields and their errors stand together as a table.
/// Parses the operator's sandbox specs file: a non-empty JSON array of objects with the fields
/// `id` (non-empty string, unique), `command` (non-empty array of strings, the first
/// non-empty), `initial_env` (object of strings, optional, default `{}`), `working_dir`
/// (non-empty string, optional, default [`DEFAULT_WORKING_DIR`]), `memory_mb` (whole MiB,
/// optional, [`limits::MIN_MEMORY_MB`]..=[`limits::MAX_MEMORY_MB`]), `cpus` (a number of
/// CPUs, optional, [`limits::MIN_CPUS`]..=[`limits::MAX_CPUS`]) and `runtime` (the name of
/// the runtime that runs it, optional: the server's default) and `exposed_services` (an
/// array of `VSCODE`, `WORKER_1`, `WORKER_2`, optional, default none: the services exposed
/// besides `AGENT_SERVER`, which is always exposed and may be listed), `egress_allow` and
/// `egress_deny` (arrays of IP addresses, CIDR ranges or host names, optional:
/// [`EgressLists`]). Every spec's `created_at` is `now`.
///
/// # Errors
/// A [`SpecError`] naming `source_name` and the first field in error: JSON syntax (with line
/// and column), a missing or mistyped field, an unknown field (a typo would otherwise be
/// silently dropped), a duplicate id, a variable name that cannot be one (`=`, NUL, empty).
pub fn parse_sandbox_specs(
    json_text: &str,
    source_name: &str,
    now: OffsetDateTime,
) -> Result<Vec<SandboxSpec>, SpecError> {
    let err = |location: String, message: String| SpecError {
        source_name: source_name.to_owned(),
        location,
        message,
    };
    let doc: Value = serde_json::from_str(json_text)
        .map_err(|e| err(String::new(), format!("not valid JSON: {e}")))?;
    let items = match doc {
        Value::Array(items) if !items.is_empty() => items,
        _ => {
            return Err(err(
                String::new(),
                "expected a non-empty JSON array of sandbox specs".into(),
            ));
        }
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut specs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str| format!("[{i}].{field}");
        let Value::Object(fields) = item else {
            return Err(err(format!("[{i}]"), "expected an object".into()));
        };
        if let Some(unknown) = fields.keys().find(|k| !KNOWN_FIELDS.contains(&k.as_str())) {
            return Err(err(
                at(unknown),
                "unknown field (expected id, command, initial_env, working_dir, memory_mb, \
                 cpus, runtime, exposed_services, egress_allow, egress_deny)"
                    .into(),
            ));
        }
        let id = match fields.get("id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(_) => return Err(err(at("id"), "expected a non-empty string".into())),
            None => {
                return Err(err(
                    at("id"),
                    "missing (expected a non-empty string)".into(),
                ));
            }
        };
        if let Some(first) = seen.insert(id.clone(), i) {
            return Err(err(
                at("id"),
                format!("duplicate id {id:?} (also [{first}].id)"),
            ));
        }
        let command = command_of(fields.get("command")).map_err(|m| err(at("command"), m))?;
        let initial_env = match fields.get("initial_env") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(env)) => {
                let mut out = BTreeMap::new();
                for (name, value) in env {
                    let loc = format!("[{i}].initial_env.{name}");
                    if let Some(problem) = env_name_problem(name) {
                        return Err(err(loc, problem.into()));
                    }
                    match value {
                        Value::String(v) if !v.contains('\0') => {
                            out.insert(name.clone(), v.clone());
                        }
                        _ => return Err(err(loc, "expected a string without NUL".into())),
                    }
                }
                out
            }
            Some(_) => {
                return Err(err(
                    at("initial_env"),
                    "expected an object of strings".into(),
                ));
            }
        };
        let working_dir = match fields.get("working_dir") {
            None | Some(Value::Null) => DEFAULT_WORKING_DIR.to_owned(),
            Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => s.clone(),
            Some(_) => {
                return Err(err(at("working_dir"), "expected a non-empty string".into()));
            }
        };
        let runtime = match fields.get("runtime") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => return Err(err(at("runtime"), "expected a non-empty string".into())),
        };
        let limits = ResourceLimits {
            memory_mb: limits::parse_memory_mb(fields.get("memory_mb"))
                .map_err(|m| err(at("memory_mb"), m))?,
            cpus: limits::parse_cpus(fields.get("cpus")).map_err(|m| err(at("cpus"), m))?,
        };
        let exposed_services = ExposedService::parse_list(fields.get("exposed_services"))
            .map_err(|m| err(at("exposed_services"), m))?;
        let list =
            |field: &str| EgressLists::parse_list(fields.get(field)).map_err(|m| err(at(field), m));
        let egress = EgressLists {
            allow: list("egress_allow")?,
            deny: list("egress_deny")?,
        };
        specs.push(SandboxSpec {
            id,
            command,
            initial_env,
            working_dir,
            limits,
            created_at: now,
            runtime,
            exposed_services,
            egress,
        });
    }
    Ok(specs)
}

fn command_of(value: Option<&Value>) -> Result<Vec<String>, String> {
    const EXPECTED: &str = "expected a non-empty array of strings";
    let Some(Value::Array(parts)) = value else {
        return Err(if value.is_none() {
            format!("missing ({EXPECTED})")
        } else {
            EXPECTED.to_owned()
        });
    };
    let mut command = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Value::String(s) if !s.contains('\0') => command.push(s.clone()),
            _ => return Err(EXPECTED.to_owned()),
        }
    }
    match command.first() {
        None => Err(EXPECTED.to_owned()),
        Some(program) if program.is_empty() => Err("the program (first item) is empty".into()),
        Some(_) => Ok(command),
    }
}

/// Why `name` cannot be an environment variable name, if it cannot.
fn env_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("an environment variable name cannot be empty")
    } else if name.contains('=') || name.contains('\0') {
        Some("an environment variable name cannot contain `=` or NUL")
    } else {
        None
    }
}

/// The built-in process preset (issue 9): runs `agent_server_command`, a program and its
/// arguments split as a POSIX shell would (quotes and backslashes; no expansion), or, when
/// `None`, [`default_agent_server_command`] for `path_env`. Its environment quiets the agent
/// server's start-up (reference agent-server-webhooks §1: no model cost map download, no
/// banner, no VSCode, VNC or tool preloading; unbuffered output for the log). Its working
/// directory is the sandbox's directory.
///
/// # Errors
/// A [`SpecError`] with source `--agent-server-command` when the string has unbalanced quotes
/// or names no program.
pub fn process_preset(
    agent_server_command: Option<&str>,
    path_env: Option<&OsStr>,
    now: OffsetDateTime,
) -> Result<SandboxSpec, SpecError> {
    let command = match agent_server_command {
        None => default_agent_server_command(path_env),
        Some(text) => {
            let err = |message: &str| SpecError {
                source_name: "--agent-server-command".into(),
                location: String::new(),
                message: message.into(),
            };
            let words = shlex::split(text)
                .ok_or_else(|| err("cannot be split as a shell would: unbalanced quotes"))?;
            match words.first() {
                Some(program) if !program.is_empty() => words,
                _ => return Err(err("names no program")),
            }
        }
    };
    Ok(SandboxSpec {
        id: PROCESS_PRESET_ID.to_owned(),
        command,
        initial_env: quiet_start_env(),
        working_dir: DEFAULT_WORKING_DIR.to_owned(),
        limits: ResourceLimits::default(),
        created_at: now,
        runtime: None,
        exposed_services: Vec::new(),
        egress: EgressLists::default(),
    })
}

/// The built-in Docker preset (issue 12): runs `image` (`--agent-server-image`, default
/// [`DEFAULT_AGENT_SERVER_IMAGE`]; the spec's id is the image, as in OpenHands, reference
/// app-server §4) with OpenHands' Docker preset command `["--port", "8000"]` (the image's
/// entry point is the agent server), in [`DOCKER_PRESET_WORKING_DIR`], with the same quiet
/// start-up environment as the process preset and no resource limits.
///
/// # Errors
/// A [`SpecError`] with source `--agent-server-image` when `image` is empty or has
/// whitespace or NUL (it cannot be an image reference).
pub fn docker_preset(image: &str, now: OffsetDateTime) -> Result<SandboxSpec, SpecError> {
    if image.is_empty() || image.contains(|c: char| c.is_whitespace() || c == '\0') {
        return Err(SpecError {
            source_name: "--agent-server-image".into(),
            location: String::new(),
            message: format!("{image:?} is not an image reference"),
        });
    }
    Ok(SandboxSpec {
        id: image.to_owned(),
        command: vec!["--port".into(), "8000".into()],
        initial_env: quiet_start_env(),
        working_dir: DOCKER_PRESET_WORKING_DIR.to_owned(),
        limits: ResourceLimits::default(),
        created_at: now,
        runtime: None,
        exposed_services: Vec::new(),
        egress: EgressLists::default(),
    })
}

/// The presets' environment: quiets the agent server's start-up (reference
/// agent-server-webhooks §1: no model cost map download, no banner, no VSCode, VNC or tool
/// preloading; unbuffered output for the log).
fn quiet_start_env() -> BTreeMap<String, String> {
    [
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ("OPENHANDS_SUPPRESS_BANNER", "1"),
        ("OH_ENABLE_VSCODE", "false"),
        ("OH_ENABLE_VNC", "false"),
        ("OH_PRELOAD_TOOLS", "false"),
        ("PYTHONUNBUFFERED", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The default agent-server command: [`AGENT_SERVER_PROGRAM`] when an executable file of
/// that name is in one of `path_env`'s directories, else [`AGENT_SERVER_MODULE_COMMAND`].
pub fn default_agent_server_command(path_env: Option<&OsStr>) -> Vec<String> {
    let on_path = path_env.is_some_and(|path| {
        std::env::split_paths(path).any(|dir| is_executable(&dir.join(AGENT_SERVER_PROGRAM)))
    });
    if on_path {
        vec![AGENT_SERVER_PROGRAM.to_owned()]
    } else {
        AGENT_SERVER_MODULE_COMMAND
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[path = "specs_tests.rs"]
mod tests;

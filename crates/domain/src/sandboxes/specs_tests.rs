//! Tests of the specs file parser and the presets (`specs.rs`).

use super::*;
use crate::sandboxes::egress::Destination;

fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap()
}

fn parse(text: &str) -> Result<Vec<SandboxSpec>, String> {
    parse_sandbox_specs(text, "specs.json", now()).map_err(|e| e.to_string())
}

#[test]
fn parses_full_and_minimal_specs() {
    let specs = parse(
        r#"[{"id":"a","command":["srv","--x"],"initial_env":{"K":"v"},"working_dir":"w",
             "memory_mb":512,"cpus":1.5,"runtime":"docker",
             "exposed_services":["WORKER_2","AGENT_SERVER","VSCODE","WORKER_2"]},
            {"id":"b","command":["other"],"created_at":"2020-01-01T00:00:00Z"}]"#,
    )
    .unwrap();
    assert_eq!(specs.len(), 2);
    assert_eq!(specs[0].command, ["srv", "--x"]);
    assert_eq!(specs[0].initial_env.get("K").map(String::as_str), Some("v"));
    assert_eq!(specs[0].working_dir, "w");
    assert_eq!(specs[0].limits.memory_mb, Some(512));
    assert_eq!(
        specs[0].limits.cpus.map(|c| c.nano_cpus()),
        Some(1_500_000_000)
    );
    assert_eq!(specs[1].working_dir, DEFAULT_WORKING_DIR);
    assert_eq!(specs[1].limits, ResourceLimits::default());
    assert!(specs[1].initial_env.is_empty());
    assert_eq!(specs[1].created_at, now(), "created_at is the load time");
    assert_eq!(specs[0].runtime.as_deref(), Some("docker"));
    assert_eq!(specs[1].runtime, None);
    let (vscode, worker2) = (ExposedService::Vscode, ExposedService::Worker2);
    assert_eq!(specs[0].exposed_services, [vscode, worker2]);
    assert!(specs[1].exposed_services.is_empty(), "none by default");
}

#[test]
fn bad_files_name_the_file_and_the_field() {
    let cases = [
        (
            "{",
            "specs.json: not valid JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "{}",
            "specs.json: expected a non-empty JSON array of sandbox specs",
        ),
        (
            "[]",
            "specs.json: expected a non-empty JSON array of sandbox specs",
        ),
        ("[1]", "specs.json: [0]: expected an object"),
        (
            r#"[{"command":["x"]}]"#,
            "specs.json: [0].id: missing (expected a non-empty string)",
        ),
        (
            r#"[{"id":" ","command":["x"]}]"#,
            "specs.json: [0].id: expected a non-empty string",
        ),
        (
            r#"[{"id":"a","command":["x"]},{"id":"b","command":[]}]"#,
            "specs.json: [1].command: expected a non-empty array of strings",
        ),
        (
            r#"[{"id":"a","command":"srv"}]"#,
            "specs.json: [0].command: expected a non-empty array of strings",
        ),
        (
            r#"[{"id":"a","command":["srv",3]}]"#,
            "specs.json: [0].command: expected a non-empty array of strings",
        ),
        (
            r#"[{"id":"a"}]"#,
            "specs.json: [0].command: missing (expected a non-empty array of strings)",
        ),
        (
            r#"[{"id":"a","command":[""]}]"#,
            "specs.json: [0].command: the program (first item) is empty",
        ),
        (
            r#"[{"id":"a","command":["x"]},{"id":"a","command":["y"]}]"#,
            "specs.json: [1].id: duplicate id \"a\" (also [0].id)",
        ),
        (
            r#"[{"id":"a","command":["x"],"initial_env":{"K":1}}]"#,
            "specs.json: [0].initial_env.K: expected a string without NUL",
        ),
        (
            r#"[{"id":"a","command":["x"],"initial_env":{"A=B":"1"}}]"#,
            "specs.json: [0].initial_env.A=B: an environment variable name cannot contain `=` or NUL",
        ),
        (
            r#"[{"id":"a","command":["x"],"initial_env":["K"]}]"#,
            "specs.json: [0].initial_env: expected an object of strings",
        ),
        (
            r#"[{"id":"a","command":["x"],"working_dir":""}]"#,
            "specs.json: [0].working_dir: expected a non-empty string",
        ),
        (
            r#"[{"id":"a","command":["x"],"initial_evn":{}}]"#,
            "specs.json: [0].initial_evn: unknown field (expected id, command, initial_env, \
             working_dir, memory_mb, cpus, runtime, exposed_services, egress_allow, \
             egress_deny)",
        ),
        (
            r#"[{"id":"a","command":["x"],"exposed_services":"VSCODE"}]"#,
            "specs.json: [0].exposed_services: expected an array of VSCODE, WORKER_1, WORKER_2",
        ),
        (
            r#"[{"id":"a","command":["x"],"runtime":3}]"#,
            "specs.json: [0].runtime: expected a non-empty string",
        ),
        (
            r#"[{"id":"a","command":["x"],"memory_mb":"1g"}]"#,
            "specs.json: [0].memory_mb: expected a whole number of MiB from 6 to 16777216",
        ),
        (
            r#"[{"id":"a","command":["x"],"cpus":0}]"#,
            "specs.json: [0].cpus: expected a number of CPUs from 0.01 to 1024",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(text).unwrap_err(), expected, "{text}");
    }
}

#[test]
fn preset_splits_the_command_as_a_shell_would() {
    let spec = process_preset(
        Some(r#"/opt/venv/bin/agent-server --extra-python-path "/a b" 'c'\ d"#),
        None,
        now(),
    )
    .unwrap();
    assert_eq!(
        spec.command,
        [
            "/opt/venv/bin/agent-server",
            "--extra-python-path",
            "/a b",
            "c d"
        ]
    );
    assert_eq!(spec.id, PROCESS_PRESET_ID);
    assert_eq!(spec.working_dir, ".");
    assert_eq!(spec.initial_env["OPENHANDS_SUPPRESS_BANNER"], "1");

    let unbalanced = process_preset(Some("agent-server \"oops"), None, now()).unwrap_err();
    assert_eq!(
        unbalanced.to_string(),
        "--agent-server-command: cannot be split as a shell would: unbalanced quotes"
    );
    let empty = process_preset(Some("  "), None, now()).unwrap_err();
    assert_eq!(
        empty.to_string(),
        "--agent-server-command: names no program"
    );
}

#[test]
fn docker_preset_runs_the_image_with_openhands_docker_command() {
    let spec = docker_preset(DEFAULT_AGENT_SERVER_IMAGE, now()).unwrap();
    assert_eq!(spec.id, "switchboard/agent-server:local");
    assert_eq!(spec.command, ["--port", "8000"]);
    assert_eq!(spec.working_dir, "/workspace/project");
    assert_eq!(spec.initial_env["LITELLM_LOCAL_MODEL_COST_MAP"], "True");
    assert_eq!(spec.limits, ResourceLimits::default());
    for bad in ["", "a b", "x\0"] {
        let e = docker_preset(bad, now()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--agent-server-image: {bad:?} is not an image reference")
        );
    }
}

#[test]
fn default_command_prefers_agent_server_on_path() {
    let dir = std::env::temp_dir().join(format!("sb-spec-test-{}", std::process::id()));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let program = bin.join(AGENT_SERVER_PROGRAM);
    std::fs::write(&program, "#!/bin/sh\n").unwrap();

    // Present but not executable: not found.
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = std::env::join_paths([&empty, &bin]).unwrap();
    assert_eq!(
        default_agent_server_command(Some(&path)),
        AGENT_SERVER_MODULE_COMMAND
    );
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(default_agent_server_command(Some(&path)), ["agent-server"]);
    let only_empty = std::env::join_paths([&empty]).unwrap();
    assert_eq!(
        default_agent_server_command(Some(&only_empty)),
        AGENT_SERVER_MODULE_COMMAND
    );
    assert_eq!(
        default_agent_server_command(None),
        AGENT_SERVER_MODULE_COMMAND
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_spec_has_egress_lists_of_its_own() {
    let specs = parse(
        r#"[{"id":"a","command":["x"],"egress_allow":["10.9.0.0/16","git.internal"],
             "egress_deny":["203.0.113.7"]},
            {"id":"b","command":["x"]}]"#,
    )
    .unwrap();
    assert_eq!(
        specs[0].egress.allow,
        [
            "10.9.0.0/16".parse().unwrap(),
            Destination::Host("git.internal".into())
        ]
    );
    assert_eq!(specs[0].egress.deny, ["203.0.113.7/32".parse().unwrap()]);
    assert!(specs[1].egress.is_empty(), "none by default");
    assert_eq!(
        parse(r#"[{"id":"a","command":["x"],"egress_deny":["ok.example","no way"]}]"#).unwrap_err(),
        "specs.json: [0].egress_deny: [1]: \"no way\": expected an IP address, a CIDR range \
         (10.1.0.0/16, fd00::/8) or a host name (git.internal.example)"
    );
}

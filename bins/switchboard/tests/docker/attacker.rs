//! Issue 18, Docker runtime: a sandbox cannot touch what is not its own, tried as an attacker
//! would, through its agent server's own command API (`sandbox_probe.py`), while it still
//! does its job (clone an allowed local repository, run its tests through the agent's
//! terminal, reach the LLM and Switchboard's webhooks). Once with the daemon's default
//! runtime (runc) and once under gVisor (`--docker-oci-runtime runsc`) where the daemon has
//! it. Each run shares two containers across every assertion: sandbox A (the attacker, also
//! running a conversation) and sandbox B (the victim, another sandbox with a secret file, a
//! process and its own session key).

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;
use crate::docker::helpers::*;

/// The probe run inside sandbox A.
const PROBE: &str = include_str!("sandbox_probe.py");
/// `--docker-pids-limit` of the runc run; the probe tries to start more processes than this.
const PIDS_LIMIT: &str = "200";

#[test]
fn a_sandbox_cannot_touch_what_is_not_its_own() {
    if !docker_ready("a_sandbox_cannot_touch_what_is_not_its_own") {
        return;
    }
    attack(None);
}

#[test]
fn a_sandbox_under_gvisor_cannot_touch_what_is_not_its_own() {
    if !docker_ready("a_sandbox_under_gvisor_cannot_touch_what_is_not_its_own") {
        return;
    }
    let runtimes = docker(&["info", "--format", "{{json .Runtimes}}"]).unwrap_or_default();
    if !runtimes.contains("\"runsc\"") {
        let message = format!(
            "a_sandbox_under_gvisor_cannot_touch_what_is_not_its_own: the Docker daemon has no \
             runsc runtime (it has {runtimes}); scripts/ci-docker.sh registers it"
        );
        if std::env::var("SWITCHBOARD_REQUIRE_RUNSC").as_deref() == Ok("1") {
            panic!("{message} (SWITCHBOARD_REQUIRE_RUNSC=1)");
        }
        eprintln!("SKIPPED {message}");
        return;
    }
    attack(Some("runsc"));
}

/// `--docker-oci-runtime` naming a runtime the daemon does not have: `serve` refuses to start
/// and says which runtimes the daemon has and how to register one.
#[test]
fn an_unknown_oci_runtime_is_refused_at_start() {
    if !docker_ready("an_unknown_oci_runtime_is_refused_at_start") {
        return;
    }
    let data = TempDir::new();
    let out = output({
        let mut c = command(data.path());
        c.args(["--data-dir", &data.path().display().to_string(), "serve"])
            .args(["--bind", "127.0.0.1:0", "--sandbox-runtime", "docker"])
            .args(["--docker-oci-runtime", "no-such-runtime"]);
        c
    });
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stderr
            .contains("has no OCI runtime \"no-such-runtime\" (it has: ")
            && out.stderr.contains("runc")
            && out.stderr.contains("/etc/docker/daemon.json"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("listening"), "{}", out.stdout);
}

/// One run: Switchboard with its data directory (SQLite database, `secret.key`, an LLM key
/// file), a fake LLM on the bridge gateway, an allowed local repository; sandbox A runs a
/// conversation whose agent clones the repository and runs its tests, then probes; sandbox B
/// is the victim.
fn attack(oci_runtime: Option<&str>) {
    let gvisor = oci_runtime.is_some();
    let installation = Installation::new(if gvisor { "attack-gvisor" } else { "attack" });
    let data = TempDir::new();
    let repos = TempDir::new();
    let marker = unique("probe");
    let repository = make_repository(repos.path(), &marker);
    let llm_key_file = data.path().join("llm.key");
    std::fs::write(&llm_key_file, unique("llm-key")).unwrap();
    let host_secret = unique("host-secret");
    let gateway = bridge_gateway();
    let (_llm, llm_port) = fake_llm_port(&gateway.to_string());
    let db_file = data.path().join("switchboard.sqlite");
    let db_url = format!("sqlite://{}", db_file.display());
    let llm_url = format!("http://host.docker.internal:{llm_port}/v1");
    let key_file = llm_key_file.display().to_string();
    let repos_dir = repos.path().display().to_string();
    let mut args = vec![
        "--sandbox-runtime",
        "docker",
        "--llm-model",
        "openai/fake-model",
    ];
    args.extend(["--llm-base-url", &llm_url, "--llm-api-key-file", &key_file]);
    args.extend(["--allow-local-repositories", &repos_dir]);
    if let Some(runtime) = oci_runtime {
        args.extend(["--docker-oci-runtime", runtime]);
    } else {
        args.extend(["--docker-pids-limit", PIDS_LIMIT]);
    }
    let server = serve(
        &db_url,
        &data,
        &installation,
        &args,
        &[("SB_PROBE_HOST_SECRET", host_secret.as_str())],
    );
    let key = server.bootstrap_key();

    // A: a conversation whose agent clones the allowed repository and runs its tests; B: a
    // sandbox of its own. Both start at once.
    let task_id = start_conversation(&server, &key, &repository);
    let b = start(&server, &key, None);
    let b_id = b["id"].as_str().unwrap().to_owned();
    let task = wait_task_ready(&server, &key, &task_id);
    let a_id = task["sandbox_id"].as_str().unwrap().to_owned();
    let conversation = task["app_conversation_id"].as_str().unwrap().to_owned();
    let a = wait_status(&server, &key, &a_id, "RUNNING", RUNNING_LIMIT);
    let b = wait_status(&server, &key, &b_id, "RUNNING", RUNNING_LIMIT);
    let container = inspect(&container_of(&a_id)).unwrap();
    assert_confined(&container, oci_runtime, &repos_dir);

    // The job: the agent's terminal cloned the repository and ran its tests; every event
    // reached Switchboard through the webhooks, the LLM was called.
    let needles = [marker.as_str(), "Ran 1 test", "\\nOK\\n"];
    wait_job(&server, &key, &conversation, &needles, &repository);

    // The attacker, after the victim made its secrets.
    let victim = Victim::prepare(&b, &b_id);
    let mut secrets = vec![
        victim.key.clone(),
        victim.secret.clone(),
        host_secret,
        key.clone(),
    ];
    if let Ok(text) = String::from_utf8(std::fs::read(data.path().join("secret.key")).unwrap()) {
        secrets.push(text.trim().to_owned());
    }
    // A service of the host on every address (as a database or a cache may be): out of a
    // sandbox's reach but through the webhook's and the operator's ports (issue 33, egress
    // rules on the Docker host's bridge). So is the cloud's metadata address.
    let host_service = TcpListener::bind("0.0.0.0:0").unwrap();
    let host_service = host_service.local_addr().unwrap().port();
    let probe_args = json!({
        "data_paths": [
            data.path(), data.path().join("secret.key"), db_file, llm_key_file,
        ],
        "secrets": secrets,
        "markers": [Victim::MARKER, installation.0],
        "switchboard_pid": server.pid(),
        "repository": repos_dir,
        "other_agent": format!("http://{}:8000", victim.ip),
        "refused": [
            format!("{gateway}:5432"), format!("{gateway}:{}", victim.port),
            format!("{gateway}:2375"), format!("127.0.0.1:{}", victim.port),
            format!("{gateway}:{host_service}"),
            format!("host.docker.internal:{host_service}"), "169.254.169.254:80",
        ],
        "pids": if gvisor { 0 } else { 300 },
    });
    let report = probe(&a, &probe_args);
    eprintln!(
        "probe report ({}): {report:#}",
        oci_runtime.unwrap_or("runc")
    );
    assert_report(&report, gvisor);
    // Still its job after all that: B is untouched, A still answers.
    let out = execute(&b, "cat /workspace/project/secret.txt");
    assert_eq!(out["stdout"].as_str().unwrap().trim(), victim.secret);
    let out = execute(
        &a,
        "cd /workspace/project/clone && git status --short && echo alive",
    );
    assert_eq!(out["exit_code"], 0, "{out}");

    // Delete: both containers and volumes gone.
    delete_all(&server, &key, &installation, &[&a_id, &b_id]);
}

/// Every attempt of the probe failed (under gVisor, `unshare` of a user namespace succeeds
/// inside gVisor's own kernel, which is no privilege on the host), and the facts it saw.
fn assert_report(report: &Value, gvisor: bool) {
    let attempts = report["attempts"].as_object().unwrap();
    assert!(attempts.len() >= 20, "{report:#}");
    for (name, outcome) in attempts {
        if gvisor && name == "unshare a user namespace" {
            // Inside gVisor's own kernel: a namespace of the sandbox, not of the host.
            continue;
        }
        assert_eq!(
            outcome["blocked"], true,
            "{name} was not blocked: {outcome}"
        );
    }
    let facts = &report["facts"];
    assert_eq!(facts["uid"], 10001, "{facts}");
    assert_eq!(facts["CapEff"], "0000000000000000", "{facts}");
    assert_eq!(facts["CapBnd"], "0000000000000000", "{facts}");
    // Switchboard's network has inter-container traffic off: not even a 401 comes back.
    assert!(facts.get("other_agent_status").is_none(), "{facts}");
    if !gvisor {
        // gVisor's statfs does not report the flag; the write to /var/tmp above is refused
        // under both.
        assert_eq!(facts["root_read_only"], true, "{facts}");
        assert_eq!(facts["NoNewPrivs"], "1", "{facts}");
        let spawned = facts["spawned_before_refusal"].as_u64().unwrap();
        assert!(spawned < 200, "{facts}");
    }
}

/// Deletes the sandboxes `ids` and waits until their containers and volumes are gone.
fn delete_all(server: &Server, key: &str, installation: &Installation, ids: &[&str]) {
    for id in ids {
        let (code, body) = send_json(
            client()
                .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
                .header("X-Access-Token", key),
        );
        assert_eq!(code, 200, "{body}");
    }
    wait_until("the containers removed", Duration::from_secs(60), || {
        installation.containers().is_empty() && ids.iter().all(|id| !volume_exists(&volume_of(id)))
    });
}

/// The victim, sandbox B: a file with a secret in its workspace, a process of its own, its
/// session key, its address on the sandbox network and its published port.
struct Victim {
    key: String,
    secret: String,
    ip: String,
    port: String,
}

impl Victim {
    /// The command line of B's own process.
    const MARKER: &str = "sleep 4242";

    /// Writes the secret file and starts the process through B's command API.
    fn prepare(b: &Value, b_id: &str) -> Victim {
        let secret = unique("b-secret");
        let out = execute(
            b,
            &format!(
                "echo {secret} > /workspace/project/secret.txt && \
                 (nohup {} >/dev/null 2>&1 &) && echo ok",
                Victim::MARKER
            ),
        );
        assert_eq!(out["exit_code"], 0, "{out}");
        let container = inspect(&container_of(b_id)).unwrap();
        let ip = container["NetworkSettings"]["Networks"]["switchboard-sandboxes"]["IPAddress"]
            .as_str()
            .filter(|ip| !ip.is_empty())
            .unwrap_or_else(|| panic!("B has no address: {container}"))
            .to_owned();
        Victim {
            key: b["session_api_key"].as_str().unwrap().to_owned(),
            secret,
            ip,
            port: agent_url(b).rsplit(':').next().unwrap().to_owned(),
        }
    }
}

/// `POST /api/v1/app-conversations` whose message has the fake LLM's agent clone
/// `repository` and run its tests; the start task's id.
fn start_conversation(server: &Server, key: &str, repository: &Path) -> String {
    let command = job(repository);
    let (code, task) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", key)
            .json(&json!({"initial_message": {"role": "user",
                "content": [{"type": "text", "text": command}]}})),
    );
    assert_eq!(code, 200, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// What `docker inspect` shows of a sandbox's container: confined as issue 18 says.
fn assert_confined(c: &Value, oci_runtime: Option<&str>, repos_dir: &str) {
    let host = &c["HostConfig"];
    assert_eq!(host["Privileged"], false);
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges"]));
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert!(host["CapAdd"].is_null(), "{}", host["CapAdd"]);
    assert_eq!(host["ReadonlyRootfs"], true);
    assert_eq!(host["IpcMode"], "private");
    assert_eq!(host["PidMode"], "");
    assert_eq!(host["UsernsMode"], "");
    assert_eq!(host["NetworkMode"], "switchboard-sandboxes");
    assert_eq!(host["Runtime"], oci_runtime.unwrap_or("runc"));
    let pids = host["PidsLimit"].as_i64().unwrap();
    assert_eq!(pids, if oci_runtime.is_some() { 1024 } else { 200 });
    // Its own volume, the allowed directory read-only; nothing else of the host's.
    let mounts = c["Mounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 2, "{mounts:?}");
    let volume = mounts.iter().find(|m| m["Type"] == "volume").unwrap();
    assert_eq!(volume["Destination"], "/workspace");
    let bind = mounts.iter().find(|m| m["Type"] == "bind").unwrap();
    assert_eq!(bind["Source"], repos_dir);
    assert_eq!(bind["Destination"], repos_dir);
    assert_eq!(bind["RW"], false);
    let tmpfs = host["Tmpfs"].as_object().unwrap();
    assert!(tmpfs.contains_key("/tmp") && tmpfs.contains_key("/home/openhands"));
}

/// Runs the probe in `sandbox` through its command API; its JSON report. The arguments go
/// hex-encoded, so the secrets they name appear nowhere in plain text (the agent server keeps
/// each command it ran in the workspace).
fn probe(sandbox: &Value, args: &Value) -> Value {
    let hex: String = args
        .to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    let command = format!(
        "cat > /tmp/probe.py <<'SB_PROBE_END'\n{PROBE}\nSB_PROBE_END\npython3 /tmp/probe.py {hex}"
    );
    let out = execute(sandbox, &command);
    let stdout = out["stdout"].as_str().unwrap_or_default();
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("probe output: {e}: {out}"))
}

/// `POST /api/bash/execute_bash_command` on a sandbox's agent server, with its session key.
fn execute(sandbox: &Value, command: &str) -> Value {
    let url = format!("{}/api/bash/execute_bash_command", agent_url(sandbox));
    let response = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(180))
        .build()
        .unwrap()
        .post(url)
        .header(
            "X-Session-API-Key",
            sandbox["session_api_key"].as_str().unwrap(),
        )
        .json(&json!({"command": command, "timeout": 150}))
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().unwrap()
}

/// Waits for the start task to be `READY`.
fn wait_task_ready(server: &Server, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + RUNNING_LIMIT;
    loop {
        let (code, body) = send_json(
            client()
                .get(server.url(&format!("/api/v1/app-conversations/start-tasks?ids={id}")))
                .header("X-Access-Token", key),
        );
        assert_eq!(code, 200, "{body}");
        match body[0]["status"].as_str() {
            Some("READY") => return body[0].clone(),
            Some("ERROR") => panic!("the start failed: {body}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "start task not READY: {body}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The fake LLM's message: clone `repository` (afresh) and run its tests. It leaves the clone
/// first: the terminal keeps its working directory between commands, and a second run (see
/// `wait_job`) that removed the directory it stands in would fail in `git clone` (`getcwd()
/// failed`).
fn job(repository: &Path) -> String {
    format!(
        "run: cd /workspace/project && rm -rf /workspace/project/clone && \
         git clone -q {} /workspace/project/clone && \
         cd /workspace/project/clone && python3 -m unittest -v 2>&1 | tail -n 4 && \
         git log --format=%s -1",
        repository.display()
    )
}

/// Waits until the conversation's events in Switchboard hold every one of `needles`. The
/// agent server's terminal tool once, under gVisor on a loaded machine, returned an empty
/// observation for a command that exited 0 (its tmux pane read before the output was drawn):
/// a run that finished without the output is asked once more (the same job, through the
/// pending-messages route), and fails if its second run finishes without it too.
fn wait_job(server: &Server, key: &str, conversation: &str, needles: &[&str], repository: &Path) {
    const FINISHED: &str = r#""key":"execution_status","value":"finished""#;
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut asked_again = false;
    loop {
        let (_, body) = send_json(
            client()
                .get(server.url(&format!(
                    "/api/v1/conversation/{conversation}/events/search?limit=100"
                )))
                .header("X-Access-Token", key),
        );
        let text = body.to_string();
        if needles.iter().all(|n| text.contains(n)) {
            return;
        }
        let finishes = text.matches(FINISHED).count();
        assert!(
            Instant::now() < deadline && finishes < 2,
            "the agent's output is not in Switchboard's events: {needles:?}; events: {text}"
        );
        if finishes == 1 && !asked_again {
            eprintln!("the job finished without its output in the observation; asking once more");
            let (code, body) = send_json(
                client()
                    .post(server.url(&format!(
                        "/api/v1/conversations/{conversation}/pending-messages"
                    )))
                    .header("X-Access-Token", key)
                    .json(&json!({"role": "user",
                        "content": [{"type": "text", "text": job(repository)}]})),
            );
            assert_eq!(code, 201, "{body}");
            asked_again = true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A git repository under `dir` (readable by the container's user) with one test and one
/// commit whose message is `marker`.
fn make_repository(dir: &Path, marker: &str) -> std::path::PathBuf {
    let repo = dir.join("project");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("test_probe.py"),
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_it_works(self):\n        \
         self.assertEqual(2 + 2, 4)\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", marker]);
    let status = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    repo
}

/// The default bridge's gateway: its `Gateway`, else the first address of its subnet
/// (Debian's daemon names only the subnet).
fn bridge_gateway() -> Ipv4Addr {
    let format = "{{range .IPAM.Config}}{{.Gateway}}|{{.Subnet}} {{end}}";
    let text = docker(&["network", "inspect", "bridge", "--format", format]).unwrap();
    let (gateway, subnet) = text
        .split_whitespace()
        .next()
        .unwrap()
        .split_once('|')
        .unwrap();
    if let Ok(ip) = gateway.parse() {
        return ip;
    }
    let network: Ipv4Addr = subnet.split('/').next().unwrap().parse().unwrap();
    Ipv4Addr::from(u32::from(network) + 1)
}

/// `prefix-` and 32 random hex digits.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

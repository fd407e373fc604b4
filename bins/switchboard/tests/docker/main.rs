//! The Docker runtime through the real server (issue 12): sandboxes as containers of the
//! agent-server image, driven over HTTP, checked with the `docker` CLI behind Switchboard's
//! back. Each test has an installation id of its own (its containers and volumes are removed
//! when it ends). Without a daemon or the image each test says so and passes; with
//! `SWITCHBOARD_REQUIRE_DOCKER=1` it fails instead.

mod attacker;
use crate::common;
mod helpers;
mod unpublished;
mod workers;

use std::time::{Duration, Instant};

use common::*;
use helpers::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

/// A specs file in `dir` holding `specs`; its path.
fn specs_file(dir: &TempDir, specs: &Value) -> String {
    let path = dir.path().join("specs.json");
    std::fs::write(&path, specs.to_string()).unwrap();
    path.display().to_string()
}

fn post(server: &Server, key: &str, path: &str) -> (u16, Value) {
    send_json(
        client()
            .post(server.url(path))
            .header("X-Access-Token", key),
    )
}

/// A spec naming the Docker runtime (the server's default stays `process`), with limits, an
/// `initial_env` and an operator's passthrough variable: start → RUNNING; the container has
/// the memory and CPU limits, its port on 127.0.0.1 only, exactly the expected environment
/// (no variable of Switchboard's own), and reaches Switchboard through host.docker.internal;
/// pause freezes it (the agent server stops answering), resume thaws it, delete removes the
/// container and its volume.
#[test]
fn a_container_starts_pauses_resumes_and_is_deleted() {
    if !docker_ready("a_container_starts_pauses_resumes_and_is_deleted") {
        return;
    }
    let installation = Installation::new("lifecycle");
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let specs = specs_file(
        &data,
        &json!([{
            "id": IMAGE, "runtime": "docker", "command": ["--port", "8000"],
            "working_dir": "/workspace/project", "memory_mb": 768, "cpus": 1.5,
            "initial_env": {"SPEC_VARIABLE": "from-the-spec"},
        }]),
    );
    let server = serve(
        db.url(),
        &data,
        &installation,
        &["--sandbox-specs", &specs, "--sandbox-env", "SB_TEST_PASSED"],
        &[
            ("SB_TEST_PASSED", "passed-on"),
            ("SB_TEST_NOT_PASSED", "must-not-leak"),
        ],
    );
    let key = server.bootstrap_key();
    let started = start(&server, &key, None);
    assert_eq!(started["status"], "STARTING", "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let running = wait_status(&server, &key, &id, "RUNNING", RUNNING_LIMIT);
    let url = agent_url(&running);
    let session_key = running["session_api_key"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Clients reach it through Switchboard (issue 22): the URL shown is the proxy's, and it
    // answers with the session key, and not without.
    let shown = shown_url(&running);
    assert!(shown.starts_with(&server.address), "{shown}");
    let info = reqwest::blocking::Client::new()
        .get(format!("{shown}/server_info"))
        .header("X-Session-API-Key", &session_key)
        .send()
        .unwrap();
    assert_eq!(info.status().as_u16(), 200);
    let refused = reqwest::blocking::Client::new()
        .get(format!("{shown}/server_info"))
        .send()
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    assert_eq!(running["exposed_urls"][0]["port"], 8000);
    assert!(alive(&url));

    let name = container_of(&id);
    let c = inspect(&name).expect("the container exists");
    // Limits, enforced by the engine.
    assert_eq!(c["HostConfig"]["Memory"], 768 * 1024 * 1024);
    assert_eq!(c["HostConfig"]["MemorySwap"], 768 * 1024 * 1024);
    assert_eq!(c["HostConfig"]["NanoCpus"], 1_500_000_000i64);
    // Published on 127.0.0.1 only.
    let host_port = url.rsplit(':').next().unwrap();
    let ports = c["NetworkSettings"]["Ports"].as_object().unwrap();
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(
        ports["8000/tcp"],
        json!([{"HostIp": "127.0.0.1", "HostPort": host_port}])
    );
    // Labels.
    let labels = &c["Config"]["Labels"];
    assert_eq!(
        labels["io.switchboard.installation"],
        installation.0.as_str()
    );
    assert_eq!(labels["io.switchboard.sandbox-id"], id.as_str());
    assert_eq!(labels["io.switchboard.sandbox-spec-id"], IMAGE);
    // The environment: the image's, the spec's, the operator's passthrough name, the session
    // key, the webhook URL and its fast-path settings; nothing else of Switchboard's.
    let env: Vec<&str> = c["Config"]["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let port = server.socket_addr().port();
    for expected in [
        format!("OH_SESSION_API_KEYS_0={session_key}"),
        format!("OH_WEBHOOKS_0_BASE_URL=http://host.docker.internal:{port}/api/v1/webhooks"),
        "SPEC_VARIABLE=from-the-spec".to_owned(),
        "SB_TEST_PASSED=passed-on".to_owned(),
        // The webhook's fast path (issue 19).
        "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE=1".to_owned(),
        "OH_WEBHOOKS_0_FLUSH_DELAY=0.1".to_owned(),
        // The agent server's address inside (issue 31).
        "AGENT_SERVER_PORT=8000".to_owned(),
        "AGENT_SERVER=8000".to_owned(),
        format!("SANDBOX_ID={id}"),
    ] {
        assert!(
            env.contains(&expected.as_str()),
            "{expected} not in {env:?}"
        );
    }
    let host_path = std::env::var("PATH").unwrap();
    for e in &env {
        assert!(!e.contains("must-not-leak"), "{e}");
        assert!(!e.starts_with("SWITCHBOARD_"), "{e}");
        assert_ne!(*e, format!("PATH={host_path}"), "the host's PATH leaked");
    }
    let image_env = docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Env}}",
        IMAGE,
    ])
    .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
    .unwrap();
    let ours = [
        "OH_SESSION_API_KEYS_0",
        "OH_WEBHOOKS_0_BASE_URL",
        "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE",
        "OH_WEBHOOKS_0_FLUSH_DELAY",
        "SPEC_VARIABLE",
        "SB_TEST_PASSED",
        "AGENT_SERVER_PORT",
        "AGENT_SERVER",
        "SANDBOX_ID",
    ];
    for e in &env {
        let name = e.split('=').next().unwrap();
        assert!(
            ours.contains(&name) || image_env.iter().any(|i| i == e),
            "unexpected variable {e}"
        );
    }
    // The container reaches Switchboard where its webhooks go.
    let reached = docker(&[
        "exec",
        &name,
        "python3",
        "-c",
        &format!(
            "import urllib.request;print(urllib.request.urlopen('http://host.docker.internal:{port}/health').status)"
        ),
    ]);
    assert_eq!(reached.as_deref(), Some("200"), "{reached:?}");

    // Pause: the container is frozen and the agent server does not answer.
    let (code, body) = post(&server, &key, &format!("/api/v1/sandboxes/{id}/pause"));
    assert_eq!(code, 200, "{body}");
    assert_eq!(inspect(&name).unwrap()["State"]["Status"], "paused");
    assert!(!alive(&url), "a paused agent server answered");
    std::thread::sleep(Duration::from_secs(4)); // a reconciliation pass
    assert_eq!(get(&server, &key, &id)["status"], "PAUSED");

    // Resume.
    let (code, body) = post(&server, &key, &format!("/api/v1/sandboxes/{id}/resume"));
    assert_eq!(code, 200, "{body}");
    let running = wait_status(&server, &key, &id, "RUNNING", RUNNING_LIMIT);
    assert_eq!(agent_url(&running), url, "the URL is kept");
    assert_eq!(inspect(&name).unwrap()["State"]["Status"], "running");
    assert!(alive(&url));

    // Delete: the container and its volume are gone.
    let (code, body) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200, "{body}");
    wait_until(
        "the container and volume removed",
        Duration::from_secs(60),
        || inspect(&name).is_none() && !volume_exists(&volume_of(&id)),
    );
    assert!(installation.containers().is_empty());
}

/// With `--sandbox-runtime docker` and no specs file (the built-in preset of
/// `--agent-server-image`): Switchboard killed with SIGKILL and started again on the same
/// database finds its containers running and restarts none (same container start time), all
/// `RUNNING`; then a container killed with `docker kill` behind its back is `MISSING` (it had
/// answered; the exit is logged), and one removed with `docker rm -f` is `MISSING`.
#[test]
fn a_restart_restarts_nothing_and_containers_killed_behind_its_back_are_missing() {
    if !docker_ready("a_restart_restarts_nothing_and_containers_killed_behind_its_back_are_missing")
    {
        return;
    }
    let installation = Installation::new("restart");
    let db = TestDatabase::new(Backend::Postgres);
    let data = TempDir::new();
    let args = ["--sandbox-runtime", "docker", "--agent-server-image", IMAGE];
    let server = serve(db.url(), &data, &installation, &args, &[]);
    let key = server.bootstrap_key();
    let ids: Vec<String> = (0..3)
        .map(|_| {
            start(&server, &key, None)["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut started_at = Vec::new();
    for id in &ids {
        let running = wait_status(&server, &key, id, "RUNNING", RUNNING_LIMIT);
        assert_eq!(running["sandbox_spec_id"], IMAGE);
        started_at.push(inspect(&container_of(id)).unwrap()["State"]["StartedAt"].clone());
    }

    drop(server); // SIGKILL: no shutdown of any kind
    let server = serve(db.url(), &data, &installation, &args, &[]);
    assert!(server.bootstrapped.is_none());
    for (id, before) in ids.iter().zip(&started_at) {
        let sandbox = wait_status(&server, &key, id, "RUNNING", Duration::from_secs(30));
        assert!(alive(&agent_url(&sandbox)));
        let c = inspect(&container_of(id)).unwrap();
        assert_eq!(
            &c["State"]["StartedAt"], before,
            "container {id} was restarted"
        );
    }
    assert_eq!(installation.containers().len(), 3);

    docker(&["kill", &container_of(&ids[0])]).expect("docker kill");
    wait_status(&server, &key, &ids[0], "MISSING", Duration::from_secs(30));
    server
        .wait_for_stderr("killed by signal 9 (SIGKILL)", Duration::from_secs(5))
        .expect("the exit is logged");
    docker(&["rm", "-f", &container_of(&ids[1])]).expect("docker rm");
    wait_status(&server, &key, &ids[1], "MISSING", Duration::from_secs(30));
    assert_eq!(get(&server, &key, &ids[2])["status"], "RUNNING");
    // Never restarted behind the operator's back either.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        inspect(&container_of(&ids[0])).unwrap()["State"]["Status"],
        "exited"
    );
    assert_eq!(get(&server, &key, &ids[0])["status"], "MISSING");
}

/// A spec whose image is not on the Docker host is `ERROR` at once, with a log line saying
/// so and how to fix it (nothing is pulled on the request path; the background pull at start
/// reports its failure); a container whose agent server exits before answering is `ERROR`
/// with its exit. `switchboard specs pull` reports the present image and the failed pull
/// (no registry here) and exits non-zero.
#[test]
fn a_missing_image_or_a_failing_start_is_error_and_specs_pull_says_why() {
    if !docker_ready("a_missing_image_or_a_failing_start_is_error_and_specs_pull_says_why") {
        return;
    }
    let installation = Installation::new("missing");
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let absent = "switchboard/absent-image:none";
    let specs = specs_file(
        &data,
        &json!([
            {"id": IMAGE, "runtime": "docker", "command": ["--no-such-flag"]},
            {"id": absent, "runtime": "docker", "command": ["--port", "8000"]},
        ]),
    );
    let server = serve(
        db.url(),
        &data,
        &installation,
        &["--sandbox-specs", &specs],
        &[],
    );
    let key = server.bootstrap_key();
    server
        .wait_for_stderr("pulling a sandbox image failed", Duration::from_secs(60))
        .expect("the background pull reports its failure");

    let began = Instant::now();
    let missing = start(&server, &key, Some(absent));
    let missing_id = missing["id"].as_str().unwrap();
    wait_status(&server, &key, missing_id, "ERROR", Duration::from_secs(10));
    assert!(began.elapsed() < Duration::from_secs(10));
    let line = server
        .wait_for_stderr(
            "images are never pulled when a sandbox starts",
            Duration::from_secs(5),
        )
        .expect("the reason is logged");
    assert!(
        line.contains(absent) && line.contains("switchboard specs pull"),
        "{line}"
    );
    assert!(inspect(&container_of(missing_id)).is_none());
    assert!(!volume_exists(&volume_of(missing_id)));

    let failing = start(&server, &key, Some(IMAGE));
    let failing_id = failing["id"].as_str().unwrap();
    let failed = wait_status(&server, &key, failing_id, "ERROR", RUNNING_LIMIT);
    server
        .wait_for_stderr(
            "the agent server exited with status 2 before it was ready",
            Duration::from_secs(5),
        )
        .expect("the exit is logged");
    assert!(
        failed["status_message"]
            .as_str()
            .is_some_and(|m| m.contains("exited with status 2 before it was ready")),
        "the reason is in the API: {failed}"
    );

    let out = output({
        let mut c = command(data.path());
        c.args(["specs", "pull", "--sandbox-specs", &specs]);
        c
    });
    assert!(!out.status.success(), "{out:?}");
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], json!({"image": IMAGE, "result": "present"}));
    assert_eq!(lines[1]["image"], absent);
    assert_eq!(lines[1]["result"], "failed");
    let detail = lines[1]["detail"].as_str().unwrap();
    assert!(detail.contains("switchboard/absent-image:none"), "{detail}");
    assert!(
        out.stderr
            .contains("could not pull: switchboard/absent-image:none"),
        "{}",
        out.stderr
    );
}

/// Ten starts at once: all `RUNNING`, each on its own port of 127.0.0.1 with its own
/// container; all deleted, nothing is left.
#[test]
fn ten_concurrent_starts_all_run() {
    if !docker_ready("ten_concurrent_starts_all_run") {
        return;
    }
    let installation = Installation::new("ten");
    let db = TestDatabase::new(Backend::Postgres);
    let data = TempDir::new();
    let server = serve(
        db.url(),
        &data,
        &installation,
        &[
            "--sandbox-runtime",
            "docker",
            "--max-running-sandboxes",
            "10",
        ],
        &[],
    );
    let key = server.bootstrap_key();
    let url = server.url("/api/v1/sandboxes");
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..10)
            .map(|_| {
                s.spawn(|| {
                    let (code, body) =
                        send_json(client().post(&url).header("X-Access-Token", &key));
                    assert_eq!(code, 200, "{body}");
                    body["id"].as_str().unwrap().to_owned()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut urls: Vec<String> = ids
        .iter()
        .map(|id| agent_url(&wait_status(&server, &key, id, "RUNNING", RUNNING_LIMIT)))
        .collect();
    for url in &urls {
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(alive(url));
    }
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), 10, "ports are not distinct");
    assert_eq!(installation.containers().len(), 10);
    for id in &ids {
        let (code, _) = send_json(
            client()
                .delete(server.url(&format!("/api/v1/sandboxes/{id}")))
                .header("X-Access-Token", &key),
        );
        assert_eq!(code, 200);
    }
    wait_until("every container removed", Duration::from_secs(120), || {
        installation.containers().is_empty()
    });
    for id in &ids {
        assert!(!volume_exists(&volume_of(id)));
    }
}

/// The warm pool and the running limit with containers: a start claims the warm container
/// (`RUNNING` at once, the same container), the pool refills; a second start beyond the
/// limit of one pauses the first container. Meanwhile a container and a volume of this
/// installation that no record names are logged and removed after the grace period, while
/// another installation's container on the same daemon is left alone.
#[test]
fn warm_pool_running_limit_and_orphans_with_containers() {
    if !docker_ready("warm_pool_running_limit_and_orphans_with_containers") {
        return;
    }
    let installation = Installation::new("warm");
    let other = Installation::new("other");
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let server = serve(
        db.url(),
        &data,
        &installation,
        &[
            "--sandbox-runtime",
            "docker",
            "--warm-sandboxes",
            "1",
            "--max-running-sandboxes",
            "1",
            "--docker-orphan-grace",
            "3",
        ],
        &[],
    );
    let key = server.bootstrap_key();

    // Orphans: a container and a lone volume with this installation's label and no record;
    // a container of another installation.
    let orphan_sandbox = "00000000-0000-4000-8000-00000000000a";
    let lone_volume = "switchboard-workspace-00000000-0000-4000-8000-00000000000b";
    let ours = format!("io.switchboard.installation={}", installation.0);
    let theirs = format!("io.switchboard.installation={}", other.0);
    let orphan_name = format!("{}-orphan", installation.0);
    let other_name = format!("{}-kept", other.0);
    docker(&[
        "create",
        "--label",
        &ours,
        "--label",
        &format!("io.switchboard.sandbox-id={orphan_sandbox}"),
        "--name",
        &orphan_name,
        IMAGE,
    ])
    .expect("docker create");
    docker(&[
        "volume",
        "create",
        "--label",
        &ours,
        "--label",
        "io.switchboard.sandbox-id=00000000-0000-4000-8000-00000000000b",
        lone_volume,
    ])
    .expect("docker volume create");
    docker(&[
        "create",
        "--label",
        &theirs,
        "--label",
        &format!("io.switchboard.sandbox-id={orphan_sandbox}"),
        "--name",
        &other_name,
        IMAGE,
    ])
    .expect("docker create");

    // The warm container becomes ready.
    wait_until("a warm container RUNNING", RUNNING_LIMIT, || {
        let metrics = client()
            .get(server.url("/metrics"))
            .send()
            .and_then(|r| r.text())
            .unwrap_or_default();
        metrics
            .lines()
            .any(|l| l.contains("warm_pool_ready") && !l.starts_with('#') && l.ends_with(" 1"))
    });
    let warm_containers = installation.containers();
    let began = Instant::now();
    let first = start(&server, &key, None);
    assert_eq!(first["status"], "RUNNING", "claimed from the pool: {first}");
    assert!(began.elapsed() < Duration::from_secs(5));
    let first_id = first["id"].as_str().unwrap().to_owned();
    assert!(
        warm_containers.contains(&container_of(&first_id)),
        "the claimed sandbox is the warm container: {warm_containers:?}"
    );
    assert!(alive(&agent_url(&first)));

    // The orphans are gone by now (grace 3 s), the other installation's container is not.
    wait_until("the orphans removed", Duration::from_secs(30), || {
        inspect(&orphan_name).is_none() && !volume_exists(lone_volume)
    });
    server
        .wait_for_stderr("has no sandbox record", Duration::from_secs(5))
        .expect("the orphan is logged");
    assert!(
        inspect(&other_name).is_some(),
        "another installation's container was touched"
    );
    assert!(inspect(&container_of(&first_id)).is_some());

    // A second start beyond the limit of one pauses the first.
    let second = start(&server, &key, None);
    let second_id = second["id"].as_str().unwrap().to_owned();
    assert_eq!(get(&server, &key, &first_id)["status"], "PAUSED");
    assert_eq!(
        inspect(&container_of(&first_id)).unwrap()["State"]["Status"],
        "paused"
    );
    wait_status(&server, &key, &second_id, "RUNNING", RUNNING_LIMIT);
    // The pool refills with a container of its own.
    wait_until("the pool refilled", RUNNING_LIMIT, || {
        installation.containers().len() == 3
    });
}

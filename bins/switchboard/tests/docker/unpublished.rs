//! Docker sandboxes without a published port (issue 22, `--docker-publish-ports false`): the
//! container publishes nothing on the host (`docker port` lists nothing), Switchboard reaches
//! its agent server at the container's address on the sandbox network, and clients reach it
//! only through Switchboard's proxy URL, where an app conversation runs with the fake LLM.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::docker::helpers::*;

/// Docker's default bridge's gateway: the host as containers reach it (`host.docker.internal`);
/// Debian's daemon names only the subnet, whose first address it is.
fn bridge_gateway() -> String {
    let config = docker(&[
        "network",
        "inspect",
        "bridge",
        "--format",
        "{{range .IPAM.Config}}{{.Gateway}}|{{.Subnet}} {{end}}",
    ])
    .expect("Docker's bridge network");
    let (gateway, subnet) = config
        .split_whitespace()
        .next()
        .and_then(|c| c.split_once('|'))
        .unwrap_or_else(|| panic!("no IPAM configuration: {config}"));
    if !gateway.is_empty() {
        return gateway.to_owned();
    }
    let base: std::net::Ipv4Addr = subnet
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("not an IPv4 subnet: {subnet}"));
    std::net::Ipv4Addr::from(u32::from(base) + 1).to_string()
}

/// `GET url` with the member's API key, through the proxy; the JSON answer when 200.
fn proxied(url: &str, key: &str) -> Option<Value> {
    let (code, body) = send_json(client().get(url).header("X-Access-Token", key));
    (code == 200).then_some(body)
}

#[test]
fn an_unpublished_sandbox_is_reached_through_the_proxy_alone() {
    if !docker_ready("an_unpublished_sandbox_is_reached_through_the_proxy_alone") {
        return;
    }
    let installation = Installation::new("unpublished");
    let (_llm, llm_port) = fake_llm_port(&bridge_gateway());
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{
            "id": IMAGE, "runtime": "docker", "command": ["--port", "8000"],
            "working_dir": "/workspace/project", "memory_mb": 2048,
            "initial_env": {
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
                "OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false",
                "OH_PRELOAD_TOOLS": "false", "PYTHONUNBUFFERED": "1",
            },
        }])
        .to_string(),
    )
    .unwrap();
    let specs = specs.display().to_string();
    let llm_base = format!("http://host.docker.internal:{llm_port}/v1");
    let server = serve(
        db.url(),
        &data,
        &installation,
        &[
            "--sandbox-specs",
            &specs,
            "--docker-publish-ports",
            "false",
            "--llm-model",
            "openai/fake-model",
            "--llm-base-url",
            &llm_base,
        ],
        &[("LLM_API_KEY", "fake-key")],
    );
    let key = server.bootstrap_key();
    let (code, task) = send_json(
        client()
            .post(server.url("/api/v1/app-conversations"))
            .header("X-Access-Token", &key)
            .json(&json!({"initial_message": {"content": [
                {"type": "text", "text": "run: echo through-the-proxy"}]}})),
    );
    assert_eq!(code, 200, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + RUNNING_LIMIT;
    let task = loop {
        let (_, tasks) = send_json(
            client()
                .get(server.url(&format!(
                    "/api/v1/app-conversations/start-tasks?ids={task_id}"
                )))
                .header("X-Access-Token", &key),
        );
        let t = tasks[0].clone();
        if t["status"] == "READY" || t["status"] == "ERROR" {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "{t}\n{}",
            server.stderr_lines().join("\n")
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(
        task["status"],
        "READY",
        "{task}\n{}",
        server.stderr_lines().join("\n")
    );
    let (cid, sid) = (
        task["app_conversation_id"].as_str().unwrap().to_owned(),
        task["sandbox_id"].as_str().unwrap().to_owned(),
    );

    // Nothing published: `docker port` lists nothing, no binding.
    let container = container_of(&sid);
    assert_eq!(docker(&["port", &container]).as_deref(), Some(""));
    let c = inspect(&container).unwrap();
    assert!(
        c["HostConfig"]["PortBindings"]
            .as_object()
            .is_none_or(|b| b.is_empty()),
        "{}",
        c["HostConfig"]["PortBindings"]
    );
    // (The image may expose 8000: exposed, bound to nothing.)
    assert!(
        c["NetworkSettings"]["Ports"]
            .as_object()
            .is_none_or(|p| p.values().all(Value::is_null)),
        "{}",
        c["NetworkSettings"]["Ports"]
    );
    // Switchboard reaches it at its address on the sandbox network (as this host does).
    let ip = c["NetworkSettings"]["Networks"]["switchboard-sandboxes"]["IPAddress"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(alive(&format!("http://{ip}:8000")), "{ip}");

    // Clients: the proxy's URL, with the member's API key (no session key needed).
    let sandbox = get(&server, &key, &sid);
    let shown = shown_url(&sandbox);
    assert_eq!(
        shown,
        format!("{}/sandboxes/{sid}/agent_server", server.address)
    );
    let conversation_url = format!("{shown}/api/conversations/{cid}");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let status = proxied(&conversation_url, &key).map(|c| c["execution_status"].clone());
        if status == Some(json!("finished")) {
            break;
        }
        assert!(Instant::now() < deadline, "the run: {status:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
    let events = proxied(&format!("{conversation_url}/events/search?limit=100"), &key)
        .expect("the events through the proxy");
    assert!(
        events["items"].as_array().unwrap().iter().any(|e| {
            e["kind"] == "ObservationEvent" && e.to_string().contains("through-the-proxy")
        }),
        "{events}"
    );
    let refused = client().get(&conversation_url).send().unwrap();
    assert_eq!(refused.status().as_u16(), 401);

    let (code, _) = send_json(
        client()
            .delete(server.url(&format!("/api/v1/sandboxes/{sid}")))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 200);
    wait_until("the container removed", Duration::from_secs(60), || {
        inspect(&container).is_none()
    });
}

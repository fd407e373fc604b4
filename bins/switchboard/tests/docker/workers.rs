//! The workers a Docker sandbox's spec exposes (issue 22: `WORKER_1`, `WORKER_2` on OpenHands'
//! container ports 8011 and 8012): told to the container as `WORKER_1=8011`, published on
//! the host's loopback (or nothing published, with `--docker-publish-ports false`), listed in
//! `exposed_urls` under Switchboard's address, and a real HTTP server on the worker's port
//! (`python3 -m http.server "$WORKER_1"` started in the container) read through the proxy.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

use crate::common::*;
use crate::docker::helpers::*;

#[test]
fn workers_are_reached_through_the_proxy_published_or_not() {
    if !docker_ready("workers_are_reached_through_the_proxy_published_or_not") {
        return;
    }
    for publish in [false, true] {
        workers(publish);
    }
}

fn workers(publish: bool) {
    let installation = Installation::new(if publish { "workers-pub" } else { "workers" });
    let db = TestDatabase::new(Backend::Sqlite);
    let data = TempDir::new();
    let specs = data.path().join("specs.json");
    std::fs::write(
        &specs,
        json!([{
            "id": IMAGE, "runtime": "docker", "command": ["--port", "8000"],
            "working_dir": "/workspace/project",
            "exposed_services": ["WORKER_1", "WORKER_2"],
            "initial_env": {"OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false",
                            "OH_PRELOAD_TOOLS": "false"},
        }])
        .to_string(),
    )
    .unwrap();
    let specs = specs.display().to_string();
    let publish_flag = publish.to_string();
    let server = serve(
        db.url(),
        &data,
        &installation,
        &[
            "--sandbox-specs",
            &specs,
            "--docker-publish-ports",
            &publish_flag,
        ],
        &[],
    );
    let key = server.bootstrap_key();
    let sandbox = start(&server, &key, None);
    let sid = sandbox["id"].as_str().unwrap().to_owned();
    let info = wait_status(&server, &key, &sid, "RUNNING", RUNNING_LIMIT);
    let urls = info["exposed_urls"].as_array().unwrap().clone();
    let shown: Vec<(String, String, u64)> = urls
        .iter()
        .map(|u| {
            (
                u["name"].as_str().unwrap().to_owned(),
                u["url"].as_str().unwrap().to_owned(),
                u["port"].as_u64().unwrap(),
            )
        })
        .collect();
    let base = format!("{}/sandboxes/{sid}", server.address);
    assert_eq!(
        shown,
        [
            ("AGENT_SERVER".into(), format!("{base}/agent_server"), 8000),
            ("WORKER_1".into(), format!("{base}/worker_1"), 8011),
            ("WORKER_2".into(), format!("{base}/worker_2"), 8012),
        ],
        "publish={publish}"
    );

    // The container's ports: published on loopback, or nothing published.
    let container = container_of(&sid);
    let ports = docker(&["port", &container]).unwrap_or_default();
    if publish {
        for port in ["8000/tcp", "8011/tcp", "8012/tcp"] {
            assert!(
                ports
                    .lines()
                    .any(|l| l.starts_with(port) && l.contains("127.0.0.1:")),
                "{port} not on loopback: {ports}"
            );
        }
    } else {
        assert_eq!(ports, "", "nothing published");
    }

    // A real server on WORKER_1's port, started in the container with its environment.
    let env = docker(&["exec", &container, "printenv", "WORKER_1", "WORKER_2"]).unwrap();
    assert_eq!(env.split_whitespace().collect::<Vec<_>>(), ["8011", "8012"]);
    docker(&[
        "exec",
        "-d",
        &container,
        "sh",
        "-c",
        "mkdir -p /tmp/site && echo served-in-the-container > /tmp/site/hello.txt && \
         exec python3 -m http.server \"$WORKER_1\" --bind 0.0.0.0 --directory /tmp/site",
    ])
    .expect("the worker started");
    let hello = format!("{base}/worker_1/hello.txt");
    let mut body = String::new();
    wait_until(
        "the worker answers through the proxy",
        Duration::from_secs(30),
        || match client().get(&hello).header("X-Access-Token", &key).send() {
            Ok(r) if r.status().as_u16() == 200 => {
                body = r.text().unwrap_or_default();
                true
            }
            _ => false,
        },
    );
    assert_eq!(body.trim(), "served-in-the-container", "publish={publish}");
    let refused = client().get(&hello).send().unwrap();
    assert_eq!(refused.status().as_u16(), 401, "publish={publish}");
    // Nothing on WORKER_2: 502.
    let (code, _): (u16, Value) = send_json(
        client()
            .get(format!("{base}/worker_2/"))
            .header("X-Access-Token", &key),
    );
    assert_eq!(code, 502, "publish={publish}");

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

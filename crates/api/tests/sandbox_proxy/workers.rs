//! The services a spec exposes besides the agent server (`WORKER_1`, `WORKER_2`; issue 22):
//! a port each, given to the sandbox in its environment, listed in `exposed_urls` under the
//! public URL, and reached through the proxy alone with the agent server's credentials. The
//! server behind `WORKER_1` is a real one, `python3 -m http.server`, started inside the
//! sandbox through the agent server's bash endpoint, itself reached through the proxy.

use super::*;

/// The spec exposing both workers.
pub(crate) const WORKERS: &str = "workers";

pub(crate) async fn workers_through_the_proxy(backend: Backend) {
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(proxy_config()),
            exposing: vec![(
                WORKERS,
                vec![ExposedService::Worker1, ExposedService::Worker2],
            )],
            ..SandboxOptions::default()
        },
    )
    .await;
    let key = app.owner.key.clone();
    let started = app.start(&key, Some(WORKERS)).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let info = app.wait_status(&key, &id, "RUNNING").await;
    let session = info["session_api_key"].as_str().unwrap().to_owned();

    // exposed_urls: the agent server first, then the workers, all under the public URL, each
    // with its port inside the sandbox.
    let urls = info["exposed_urls"].as_array().unwrap();
    let names: Vec<&str> = urls.iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["AGENT_SERVER", "WORKER_1", "WORKER_2"], "{backend}");
    for (u, service) in urls.iter().zip(["agent_server", "worker_1", "worker_2"]) {
        assert_eq!(
            u["url"],
            format!("{}/sandboxes/{id}/{service}", app.base),
            "{backend}: {u}"
        );
    }
    let ports: Vec<u64> = urls.iter().map(|u| u["port"].as_u64().unwrap()).collect();
    assert!(
        ports.iter().all(|p| *p > 0) && ports[0] != ports[1] && ports[1] != ports[2],
        "{backend}: {ports:?}"
    );
    let agent = urls[0]["url"].as_str().unwrap().to_owned();
    let worker1 = urls[1]["url"].as_str().unwrap().to_owned();
    let worker2 = urls[2]["url"].as_str().unwrap().to_owned();

    // The sandbox was told its ports: start a real HTTP server on WORKER_1's, in the sandbox,
    // through the proxy (the agent server's bash endpoint).
    let command = format!(
        "mkdir -p site && echo served-from-worker-1 > site/hello.txt && \
         echo \"$WORKER_1 $WORKER_2\" > ports.txt && \
         nohup {} -m http.server \"$WORKER_1\" --bind 127.0.0.1 --directory site \
         > worker.log 2>&1 &",
        common::sandboxes::python()
    );
    let (status, ran) = send(
        Method::POST,
        &format!("{agent}/api/bash/execute_bash_command"),
        &Cred::Session(&session),
        Some(json!({"command": command, "cwd": null, "timeout": 10})),
    )
    .await;
    assert_eq!(
        (status, &ran["exit_code"]),
        (200, &json!(0)),
        "{backend}: {ran}"
    );
    let (_, ran) = send(
        Method::POST,
        &format!("{agent}/api/bash/execute_bash_command"),
        &Cred::Session(&session),
        Some(json!({"command": "cat ports.txt", "cwd": null, "timeout": 10})),
    )
    .await;
    assert_eq!(
        ran["stdout"].as_str().unwrap().trim(),
        format!("{} {}", ports[1], ports[2]),
        "{backend}: WORKER_1 and WORKER_2 in the sandbox's environment"
    );

    // The worker answers through the proxy (it may take a moment to listen).
    let hello = format!("{worker1}/hello.txt");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let res = client
            .get(&hello)
            .header("X-Session-API-Key", &session)
            .send()
            .await
            .unwrap();
        if res.status().as_u16() == 200 {
            break res.text().await.unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "{backend}: the worker never answered: {}",
            res.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(body.trim(), "served-from-worker-1", "{backend}");

    // Credentials as for the agent server.
    let other = app.start(&app.member.key, None).await;
    let other_id = other["id"].as_str().unwrap().to_owned();
    let other_info = app.wait_status(&app.member.key, &other_id, "RUNNING").await;
    let their_session = other_info["session_api_key"].as_str().unwrap();
    let cases: Vec<(&str, Cred<'_>, u16)> = vec![
        ("no credentials", Cred::None, 401),
        ("owner bearer", Cred::Bearer(&key), 200),
        ("owner token", Cred::AccessToken(&key), 200),
        ("session key", Cred::Session(&session), 200),
        ("session query", Cred::SessionQuery(&session), 200),
        ("admin", Cred::Bearer(&app.admin.key), 200),
        ("another member", Cred::Bearer(&app.member.key), 404),
        (
            "another sandbox's session key",
            Cred::Session(their_session),
            404,
        ),
        ("another org", Cred::Bearer(&app.non_member.key), 404),
        ("unknown key", Cred::Bearer("sb_nope"), 401),
    ];
    for (what, cred, expected) in &cases {
        let (status, _) = get_text(&hello, cred).await;
        assert_eq!(status, *expected, "{backend}: {what}");
    }
    // The dashed name and the host of the agent server's own probes are not the worker's:
    // an unauthenticated /health of a worker is 401, not answered by Switchboard.
    let (status, _) = get_text(&format!("{worker1}/health"), &Cred::None).await;
    assert_eq!(status, 401, "{backend}");
    let (status, text) = get_text(
        &format!("{}/sandboxes/{id}/worker-1/hello.txt", app.base),
        &Cred::Session(&session),
    )
    .await;
    assert_eq!(
        (status, text.trim()),
        (200, "served-from-worker-1"),
        "{backend}"
    );
    // Nothing listens on WORKER_2: 502. VSCODE is not exposed by this spec, nor WORKER_1 by
    // the default one: 404.
    let (status, _) = get_text(&format!("{worker2}/"), &Cred::Session(&session)).await;
    assert_eq!(status, 502, "{backend}");
    let (status, _) = get_text(
        &format!("{}/sandboxes/{id}/vscode/", app.base),
        &Cred::Session(&session),
    )
    .await;
    assert_eq!(status, 404, "{backend}");
    let names: Vec<&str> = other_info["exposed_urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["AGENT_SERVER"], "{backend}: the default spec");
    let (status, _) = get_text(
        &format!("{}/sandboxes/{other_id}/worker_1/", app.base),
        &Cred::Session(their_session),
    )
    .await;
    assert_eq!(status, 404, "{backend}");

    // Paused: 409 for the worker too; resumed, it answers again.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    app.wait_status(&key, &id, "PAUSED").await;
    let (status, _) = get_text(&hello, &Cred::Session(&session)).await;
    assert_eq!(status, 409, "{backend}");
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/resume"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{backend}");
    app.wait_status(&key, &id, "RUNNING").await;
    let (status, text) = get_text(&hello, &Cred::Bearer(&key)).await;
    assert_eq!(
        (status, text.trim()),
        (200, "served-from-worker-1"),
        "{backend}"
    );
}

/// `GET url` with `cred`: status and body text.
async fn get_text(url: &str, cred: &Cred<'_>) -> (u16, String) {
    let client = reqwest::Client::new();
    let url = match cred {
        Cred::SessionQuery(k) => format!("{url}?session_api_key={k}"),
        _ => url.to_owned(),
    };
    let r = client.get(&url);
    let r = match cred {
        Cred::Bearer(k) => r.header("Authorization", format!("Bearer {k}")),
        Cred::AccessToken(k) => r.header("X-Access-Token", *k),
        Cred::Session(k) => r.header("X-Session-API-Key", *k),
        _ => r,
    };
    let res = r.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap_or_default())
}

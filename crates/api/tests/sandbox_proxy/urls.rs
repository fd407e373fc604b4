//! The URLs the API shows under the public URL, path-based and host-based.

use super::*;

pub(crate) async fn urls_point_at_the_proxy(backend: Backend) {
    let app = app(backend).await;
    let key = app.owner.key.clone();
    let (status, task) = app
        .call(
            Method::POST,
            "/api/v1/app-conversations",
            Some(&key),
            Some(
                json!({"llm_model": "openai/fake-model", "initial_message": {"role": "user",
                "content": [{"type": "text", "text": "hi"}]}}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {task}");
    let id = task["id"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{backend}: {id}"
    );
    let dashed = uuid::Uuid::parse_str(&id).unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        // Both forms of the id are accepted.
        let (_, tasks) = app
            .call(
                Method::GET,
                &format!("/api/v1/app-conversations/start-tasks?ids={id}"),
                Some(&key),
                None,
            )
            .await;
        let (_, again) = app
            .call(
                Method::GET,
                &format!("/api/v1/app-conversations/start-tasks?ids={dashed}"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(tasks[0]["id"], again[0]["id"], "{backend}");
        match tasks[0]["status"].as_str() {
            Some("READY") => break tasks[0].clone(),
            Some("ERROR") => panic!("{backend}: {tasks}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "{backend}: {tasks}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["id"], id.as_str(), "{backend}");
    let conv = done["app_conversation_id"].as_str().unwrap().to_owned();
    assert!(conv.len() == 32 && !conv.contains('-'), "{backend}: {done}");
    let sandbox = done["sandbox_id"].as_str().unwrap();
    let agent = format!("{}/sandboxes/{sandbox}/agent_server", app.base);
    assert_eq!(
        done["agent_server_url"],
        agent.as_str(),
        "{backend}: {done}"
    );
    let (_, got) = app
        .call(
            Method::GET,
            &format!("/api/v1/app-conversations?ids={conv}"),
            Some(&key),
            None,
        )
        .await;
    let c = &got[0];
    assert_eq!(c["id"], conv.as_str(), "{backend}: {got}");
    assert_eq!(
        c["conversation_url"],
        format!("{agent}/api/conversations/{conv}"),
        "{backend}: {c}"
    );
    // The URL answers, through Switchboard, for the session key shown beside it.
    let session = c["session_api_key"].as_str().unwrap();
    let (status, info) = send(
        Method::GET,
        c["conversation_url"].as_str().unwrap(),
        &Cred::Session(session),
        None,
    )
    .await;
    assert_eq!(status, 200, "{backend}: {info}");
    assert_eq!(
        info["id"].as_str().map(|s| s.replace('-', "")),
        Some(conv.clone()),
        "{backend}: {info}"
    );
    // The stored record keeps the sandbox's own URL.
    let record = app.record(sandbox).unwrap();
    assert!(
        !record.agent_server_url.unwrap().contains("/sandboxes/"),
        "{backend}"
    );
}

/// `--sandbox-host-pattern`: the URL shown is the sandbox's own host under the public URL's
/// scheme and port, and a request with that `Host` reaches the service with its whole path,
/// under the same rules as the path form.
pub(crate) async fn routes_by_host(backend: Backend) {
    use switchboard_api::sandbox_proxy::hosts::HostPattern;
    let app = spawn_sandbox_app(
        backend,
        SandboxOptions {
            proxy: Some(ProxyConfig {
                host_pattern: Some(HostPattern::parse("{id}-{service}.sb.test").unwrap()),
                ..proxy_config()
            }),
            ..SandboxOptions::default()
        },
    )
    .await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let port = app.base.rsplit(':').next().unwrap().to_owned();
    let host = format!("{id}-agent-server.sb.test:{port}");
    assert_eq!(url, format!("http://{host}"), "{backend}");
    let client = reqwest::Client::new();
    let call = |key: Option<&str>, path: &str| {
        let mut r = client
            .post(format!("{}{path}", app.base))
            .header("Host", host.clone())
            .json(&json!({}));
        if let Some(k) = key {
            r = r.header("X-Session-API-Key", k.to_owned());
        }
        r.send()
    };
    let (status, echo) =
        common::status_json(call(Some(&session), "/api/standin/echo").await.unwrap()).await;
    assert_eq!(status, 200, "{backend}: {echo}");
    assert_eq!(echo["path"], "/api/standin/echo", "{backend}");
    let (status, _) = common::status_json(call(None, "/api/standin/echo").await.unwrap()).await;
    assert_eq!(status, 401, "{backend}");
    // The API's own routes on its own host are untouched.
    let (status, _) =
        common::status_json(app.get("/api/v1/users/me", Some(&app.owner.key)).await).await;
    assert_eq!(status, 200, "{backend}");
}

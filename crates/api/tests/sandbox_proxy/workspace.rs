//! A conversation start under `/workspace` into a sandbox that has none (issue 31): these
//! sandboxes run unconfined (`--process-isolation none`), so the proxy answers 422 naming
//! `working_dir` and the sandbox's own project directory; a start in that directory reaches
//! the agent server as any other request.

use super::*;

pub(crate) async fn starts_under_workspace_are_refused_without_one(backend: Backend) {
    let app = app(backend).await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let handle = switchboard_domain::sandboxes::runtime::RuntimeHandle::from_json(
        app.record(&id).unwrap().handle.as_deref().unwrap(),
    )
    .unwrap();
    let project = handle.project_dir.clone().unwrap();
    assert_eq!(
        std::path::Path::new(&project),
        handle.working_dir.join("workspace/project"),
        "{backend}"
    );
    let start = |dir: &str, conv: &str| {
        json!({"agent": {"kind": "Agent", "llm": {"model": "m"}}, "conversation_id": conv,
               "workspace": {"kind": "LocalWorkspace", "working_dir": dir}})
    };
    let starts = format!("{url}/api/conversations");
    for dir in ["/workspace/project", "/workspace", "/workspace/project/x/"] {
        let conv = uuid::Uuid::new_v4().to_string();
        for cred in [Cred::Bearer(&app.owner.key), Cred::Session(&session)] {
            let (status, body) = send(Method::POST, &starts, &cred, Some(start(dir, &conv))).await;
            assert_eq!(status, 422, "{backend} {dir}: {body}");
            let entry = &body["detail"][0];
            assert_eq!(entry["type"], "value_error", "{body}");
            assert_eq!(
                entry["loc"],
                json!(["body", "workspace", "working_dir"]),
                "{body}"
            );
            assert_eq!(entry["input"], dir, "{body}");
            let msg = entry["msg"].as_str().unwrap();
            assert!(
                msg.contains(&format!("working_dir {dir:?}"))
                    && msg.contains(&format!("{project:?}"))
                    && msg.contains("--process-isolation none"),
                "{msg}"
            );
        }
        // Nothing reached the agent server.
        let (status, _) = send(
            Method::GET,
            &format!("{starts}/{}", conv.replace('-', "")),
            &Cred::Session(&session),
            None,
        )
        .await;
        assert_eq!(status, 404, "{backend} {dir}");
    }
    // In the sandbox's project directory (or elsewhere): through, answered by the agent
    // server; a body that is no start is the agent server's to judge.
    let conv = uuid::Uuid::new_v4().to_string();
    let (status, body) = send(
        Method::POST,
        &starts,
        &Cred::Bearer(&app.owner.key),
        Some(start(&project, &conv)),
    )
    .await;
    assert_eq!(status, 201, "{backend}: the stand-in's answer: {body}");
    assert_eq!(body["workspace"]["working_dir"], project.as_str(), "{body}");
    let (status, body) = send(
        Method::POST,
        &starts,
        &Cred::Session(&session),
        Some(json!({"workspace": {"working_dir": "/workspace-other"}})),
    )
    .await;
    assert_eq!(
        (status, &body["detail"][0]["loc"]),
        (422, &json!(["body", "agent"])),
        "{backend}: the stand-in's own answer: {body}"
    );
}

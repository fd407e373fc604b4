//! Who gets through the proxy, and who is stopped before anything reaches the sandbox.

use super::*;

pub(crate) async fn who_gets_through(backend: Backend) {
    let app = app(backend).await;
    let (id, session, url) = running(&app, &app.owner.key).await;
    let (_, their_session, _) = running(&app, &app.member.key).await;
    assert_eq!(
        url,
        format!("{}/sandboxes/{id}/agent_server", app.base),
        "{backend}"
    );
    let conv = uuid::Uuid::new_v4().simple().to_string();
    let send_message = format!("{url}/api/conversations/{conv}/events");
    let message = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let unknown = format!(
        "{}/sandboxes/{}/agent_server/api/conversations/{conv}/events",
        app.base,
        uuid::Uuid::new_v4()
    );
    let garbage = format!("{}/sandboxes/not-a-sandbox/agent_server/api/x", app.base);
    let vscode = format!("{}/sandboxes/{id}/vscode/api/x", app.base);
    let cases: Vec<(&str, &str, Cred<'_>, u16)> = vec![
        ("no credentials", send_message.as_str(), Cred::None, 401),
        (
            "owner bearer",
            send_message.as_str(),
            Cred::Bearer(&app.owner.key),
            200,
        ),
        (
            "owner token",
            send_message.as_str(),
            Cred::AccessToken(&app.owner.key),
            200,
        ),
        (
            "session key",
            send_message.as_str(),
            Cred::Session(&session),
            200,
        ),
        (
            "session query",
            send_message.as_str(),
            Cred::SessionQuery(&session),
            200,
        ),
        (
            "admin",
            send_message.as_str(),
            Cred::Bearer(&app.admin.key),
            200,
        ),
        (
            "another member",
            send_message.as_str(),
            Cred::Bearer(&app.member.key),
            404,
        ),
        (
            "another org",
            send_message.as_str(),
            Cred::Bearer(&app.non_member.key),
            404,
        ),
        (
            "another sandbox's key",
            send_message.as_str(),
            Cred::Session(&their_session),
            404,
        ),
        (
            "unknown session key",
            send_message.as_str(),
            Cred::Session("sbs_nope"),
            401,
        ),
        (
            "expired key",
            send_message.as_str(),
            Cred::Bearer(&app.expired.key),
            401,
        ),
        (
            "revoked key",
            send_message.as_str(),
            Cred::Bearer(&app.revoked.key),
            401,
        ),
        (
            "unknown sandbox",
            unknown.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
        (
            "not a sandbox id",
            garbage.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
        (
            "a service not exposed",
            vscode.as_str(),
            Cred::Bearer(&app.owner.key),
            404,
        ),
    ];
    let mut through = 0;
    for (what, url, cred, want) in &cases {
        let (status, body) = send(Method::POST, url, cred, Some(message.clone())).await;
        assert_eq!(status, *want, "{backend}: {what}: {body}");
        if *want == 200 {
            assert_eq!(body, json!({"success": true}), "{backend}: {what}");
            through += 1;
        } else {
            assert!(body["detail"].is_string(), "{backend}: {what}: {body}");
        }
    }
    // Only the allowed requests reached the sandbox.
    let (_, received) = send(
        Method::GET,
        &format!("{}/standin/received", direct(&app, &id)),
        &Cred::None,
        None,
    )
    .await;
    assert_eq!(
        received.as_array().unwrap().len(),
        through,
        "{backend}: {received}"
    );

    // Upstream, Switchboard presents the session key and nothing of the client's.
    let (status, echo) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::Bearer(&app.owner.key),
        Some(json!({"x": 1})),
    )
    .await;
    assert_eq!(status, 200, "{backend}: {echo}");
    let headers = &echo["headers"];
    assert_eq!(headers["x-session-api-key"], session.as_str(), "{backend}");
    assert!(headers.get("authorization").is_none(), "{backend}: {echo}");
    assert_eq!(
        headers["x-forwarded-prefix"],
        format!("/sandboxes/{id}/agent_server")
    );
    let (_, echo) = send(
        Method::POST,
        &format!("{url}/api/standin/echo"),
        &Cred::SessionQuery(&session),
        None,
    )
    .await;
    assert_eq!(echo["path"], "/api/standin/echo?keep=1", "{backend}");

    // The probes answer without a key, from the sandbox's status.
    let (status, alive) = send(Method::GET, &format!("{url}/alive"), &Cred::None, None).await;
    assert_eq!((status, alive), (200, json!({"status": "ok"})), "{backend}");
    let (status, _) = send(
        Method::GET,
        &format!("{url}/server_info"),
        &Cred::None,
        None,
    )
    .await;
    assert_eq!(status, 401, "{backend}");

    // A paused sandbox: 409 for everyone, probes included.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/sandboxes/{id}/pause"),
            Some(&app.owner.key),
            None,
        )
        .await;
    assert_eq!(status, 200);
    app.wait_status(&app.owner.key, &id, "PAUSED").await;
    for cred in [Cred::Bearer(&app.owner.key), Cred::Session(&session)] {
        let (status, body) = send(Method::POST, &send_message, &cred, Some(message.clone())).await;
        assert_eq!(status, 409, "{backend}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains("PAUSED"),
            "{backend}: {body}"
        );
    }
    let (status, _) = send(Method::GET, &format!("{url}/alive"), &Cred::None, None).await;
    assert_eq!(status, 409, "{backend}");
    // Another member still learns nothing about it.
    let (status, _) = send(
        Method::POST,
        &send_message,
        &Cred::Bearer(&app.member.key),
        Some(message),
    )
    .await;
    assert_eq!(status, 404, "{backend}");
}

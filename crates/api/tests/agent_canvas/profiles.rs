//! `/api/agent-profiles…` as Agent Canvas calls them: list, save (its two save bodies), get,
//! activate by id, rename, delete; the errors it handles (404, 409, 422); one member's
//! profiles are not another's.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::agent_canvas::{fixture, has_reads, method, path, request};
use crate::common::{TestApp, spawn_app, status_json};

on_both_backends!(agent_profiles_as_the_client_uses_them, agent_profile_errors);

/// The client's request `req` (a fixture entry) as `key`, with `Authorization: Bearer`.
pub async fn send(
    app: &TestApp,
    key: &str,
    req: &Value,
    subst: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    let mut r = app
        .client
        .request(method(req), format!("{}{}", app.base, path(req, subst)))
        .header("Authorization", format!("Bearer {key}"));
    if let Some(b) = body.or(req.get("body")) {
        r = r.json(b);
    }
    status_json(r.send().await.unwrap()).await
}

async fn agent_profiles_as_the_client_uses_them(backend: Backend) {
    let app = spawn_app(backend).await;
    let f = fixture("agent_profiles.json");
    let key = app.owner.key.clone();
    let list = request(&f, "list");
    let (code, empty) = send(&app, &key, list, &[], None).await;
    assert_eq!(
        (code, &empty),
        (
            200,
            &json!({"profiles": [], "active_agent_profile_id": null})
        ),
        "{backend}"
    );

    // Its two save bodies: an OpenHands profile, and an ACP model pick.
    for (req, name) in [
        ("save_openhands", "coder"),
        ("save_acp_model_pick", "claude"),
    ] {
        let r = request(&f, req);
        let (code, saved) = send(&app, &key, r, &[("name", name)], None).await;
        assert_eq!(code, 201, "{backend}: {req}: {saved}");
        has_reads(r, &saved, req);
        assert_eq!(saved["name"], name);
        assert_eq!(saved["message"], format!("Agent profile '{name}' saved"));
    }
    let (code, listed) = send(&app, &key, list, &[], None).await;
    assert_eq!(code, 200);
    has_reads(list, &listed, "list");
    let profiles = listed["profiles"].as_array().unwrap();
    assert_eq!(
        profiles
            .iter()
            .map(|p| p["name"].clone())
            .collect::<Vec<_>>(),
        [json!("claude"), json!("coder")],
        "{backend}: by name: {listed}"
    );
    let coder = &profiles[1];
    assert_eq!(
        (
            &coder["agent_kind"],
            &coder["llm_profile_ref"],
            &coder["revision"]
        ),
        (&json!("openhands"), &json!("fast"), &json!(0))
    );
    assert_eq!(profiles[0]["llm_profile_ref"], Value::Null);
    let id = coder["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");

    // Get: the whole profile, as the client merges it back into its next save.
    let get = request(&f, "get");
    let (code, one) = send(&app, &key, get, &[("name", "coder")], None).await;
    assert_eq!(code, 200, "{one}");
    has_reads(get, &one, "get");
    let p = &one["profile"];
    assert_eq!(
        (&p["id"], &p["name"], &p["revision"]),
        (&json!(id), &json!("coder"), &json!(0))
    );
    assert_eq!(p["system_message_suffix"], "Answer in French.");
    assert_eq!(p["schema_version"], 3);
    assert_eq!(p["secret_refs"], Value::Null);

    // Saving it again (the client's merge: the stored profile without id, name, revision):
    // same id, revision 1.
    let mut again = p.as_object().unwrap().clone();
    for k in ["id", "name", "revision"] {
        again.remove(k);
    }
    again.insert("system_message_suffix".into(), json!("Answer in German."));
    let save = request(&f, "save_openhands");
    let (code, _) = send(
        &app,
        &key,
        save,
        &[("name", "coder")],
        Some(&Value::Object(again)),
    )
    .await;
    assert_eq!(code, 201);
    let (_, one) = send(&app, &key, get, &[("name", "coder")], None).await;
    assert_eq!(
        (
            &one["profile"]["id"],
            &one["profile"]["revision"],
            &one["profile"]["system_message_suffix"]
        ),
        (&json!(id), &json!(1), &json!("Answer in German.")),
        "{backend}"
    );

    // Activate by id: the pointer moves, nothing else.
    let activate = request(&f, "activate");
    let (code, a) = send(&app, &key, activate, &[("id", &id)], None).await;
    assert_eq!(code, 200, "{a}");
    has_reads(activate, &a, "activate");
    assert_eq!(
        a,
        json!({"id": id, "message": format!("Agent profile '{id}' activated"), "agent_settings_applied": false})
    );
    let (_, listed) = send(&app, &key, list, &[], None).await;
    assert_eq!(listed["active_agent_profile_id"], json!(id));

    // Rename keeps the id and the pointer.
    let rename = request(&f, "rename");
    let (code, r) = send(
        &app,
        &key,
        rename,
        &[("name", "coder")],
        Some(&json!({"new_name": "writer"})),
    )
    .await;
    assert_eq!(code, 200, "{r}");
    has_reads(rename, &r, "rename");
    assert_eq!(r["name"], "writer");
    assert_eq!(r["message"], "Agent profile 'coder' renamed to 'writer'");
    let (_, listed) = send(&app, &key, list, &[], None).await;
    let writer = listed["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "writer")
        .unwrap()
        .clone();
    assert_eq!(
        (&writer["id"], &listed["active_agent_profile_id"]),
        (&json!(id), &json!(id))
    );

    // Another member sees none of it, and cannot activate it.
    let (_, theirs) = send(&app, &app.member.key, list, &[], None).await;
    assert_eq!(theirs["profiles"], json!([]), "{backend}");
    let (code, _) = send(&app, &app.member.key, activate, &[("id", &id)], None).await;
    assert_eq!(code, 404);
    let (code, _) = send(&app, &app.member.key, get, &[("name", "writer")], None).await;
    assert_eq!(code, 404);

    // Delete: the active one clears the pointer; again is still 200.
    let delete = request(&f, "delete");
    for _ in 0..2 {
        let (code, d) = send(&app, &key, delete, &[("name", "writer")], None).await;
        assert_eq!(code, 200, "{d}");
        has_reads(delete, &d, "delete");
    }
    let (_, listed) = send(&app, &key, list, &[], None).await;
    assert_eq!(
        listed["active_agent_profile_id"],
        Value::Null,
        "{backend}: {listed}"
    );
    assert_eq!(listed["profiles"].as_array().unwrap().len(), 1);
    app.stop().await;
}

async fn agent_profile_errors(backend: Backend) {
    let app = spawn_app(backend).await;
    let f = fixture("agent_profiles.json");
    let key = app.owner.key.clone();
    let save = request(&f, "save_openhands");
    let (code, _) = send(&app, &key, save, &[("name", "a")], None).await;
    assert_eq!(code, 201);
    let (code, _) = send(&app, &key, save, &[("name", "b")], None).await;
    assert_eq!(code, 201);
    let cases: Vec<(Method, &str, Option<Value>, u16, Value)> = vec![
        (
            Method::GET,
            "/api/agent-profiles/nope",
            None,
            404,
            json!("Agent profile 'nope' not found"),
        ),
        (
            Method::POST,
            "/api/agent-profiles/nope/rename",
            Some(json!({"new_name": "c"})),
            404,
            json!("Agent profile 'nope' not found"),
        ),
        (
            Method::POST,
            "/api/agent-profiles/a/rename",
            Some(json!({"new_name": "b"})),
            409,
            json!("Agent profile 'b' already exists"),
        ),
        (
            Method::POST,
            "/api/agent-profiles/not-an-id/activate",
            Some(json!({})),
            404,
            json!("Agent profile with id 'not-an-id' not found"),
        ),
    ];
    for (m, p, body, want, detail) in cases {
        let mut r = app.req(m.clone(), p, Some(&key));
        if let Some(b) = &body {
            r = r.json(b);
        }
        let (code, e) = status_json(r.send().await.unwrap()).await;
        assert_eq!(
            (code, &e["detail"]),
            (want, &detail),
            "{backend}: {m} {p}: {e}"
        );
    }
    // 422s: where, and that nothing stored changed.
    let (_, before) = status_json(app.get("/api/agent-profiles", Some(&key)).await).await;
    let bad: Vec<(&str, Value, Value)> = vec![
        (
            "a",
            json!({"agent_kind": "openhands"}),
            json!(["body", "llm_profile_ref"]),
        ),
        (
            "a",
            json!({"llm_profile_ref": "x", "acp_model": "m"}),
            json!(["body", "acp_model"]),
        ),
        (
            "a",
            json!({"agent_kind": "robot", "llm_profile_ref": "x"}),
            json!(["body", "agent_kind"]),
        ),
        (
            "a",
            json!({"llm_profile_ref": "x", "tools": [{"params": {}}]}),
            json!(["body", "tools", 0, "name"]),
        ),
        (
            "a",
            json!({"llm_profile_ref": "x", "tool_concurrency_limit": 0}),
            json!(["body", "tool_concurrency_limit"]),
        ),
        (
            "a",
            json!({"agent_kind": "acp", "acp_prompt_timeout": -1}),
            json!(["body", "acp_prompt_timeout"]),
        ),
        ("a", json!([1]), json!(["body"])),
        // What a start could not carry out is refused at save, saying why.
        (
            "a",
            json!({"llm_profile_ref": "x", "agent": "PlannerAgent"}),
            json!(["body", "agent"]),
        ),
        (
            "a",
            json!({"llm_profile_ref": "x", "verification": {"critic_enabled": true}}),
            json!(["body", "verification", "critic_enabled"]),
        ),
        (
            "a",
            json!({"llm_profile_ref": "x", "condenser": {"max_size": 10}}),
            json!(["body", "condenser", "max_size"]),
        ),
        (
            "a",
            json!({"agent_kind": "acp", "acp_server": "claude"}),
            json!(["body", "acp_server"]),
        ),
        (
            "bad%20name",
            json!({"llm_profile_ref": "x"}),
            json!(["path", "name"]),
        ),
    ];
    for (name, body, loc) in bad {
        let (code, e) = status_json(
            app.post_json(&format!("/api/agent-profiles/{name}"), Some(&key), &body)
                .await,
        )
        .await;
        assert_eq!(
            (code, &e["detail"][0]["loc"]),
            (422, &loc),
            "{backend}: {body}: {e}"
        );
        // The reason is in the answer.
        let msg = e["detail"][0]["msg"].as_str().unwrap_or_default();
        if body.get("verification").is_some() {
            assert!(msg.contains("LLM key"), "{backend}: {msg}");
        }
        if body.get("agent").is_some() {
            assert!(msg.contains("one agent class"), "{backend}: {msg}");
        }
    }
    let r = app
        .req(Method::POST, "/api/agent-profiles/a", Some(&key))
        .header("content-type", "application/json")
        .body("{not json");
    let (code, e) = status_json(r.send().await.unwrap()).await;
    assert_eq!(
        (code, &e["detail"][0]["type"]),
        (422, &json!("json_invalid")),
        "{e}"
    );
    let (code, e) = status_json(
        app.post_json(
            "/api/agent-profiles/a/rename",
            Some(&key),
            &json!({"new_name": "a/b"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (code, &e["detail"][0]["loc"]),
        (422, &json!(["body", "new_name"]))
    );
    let (_, after) = status_json(app.get("/api/agent-profiles", Some(&key)).await).await;
    assert_eq!(
        before, after,
        "{backend}: a refused request changed nothing"
    );

    // The limit: 50 profiles; a 51st name is a 409, an existing name still saves.
    for i in 2..50 {
        let (code, _) = send(&app, &key, save, &[("name", &format!("p{i}"))], None).await;
        assert_eq!(code, 201);
    }
    let (code, e) = send(&app, &key, save, &[("name", "one-more")], None).await;
    assert_eq!(code, 409, "{backend}: {e}");
    let (code, _) = send(&app, &key, save, &[("name", "a")], None).await;
    assert_eq!(code, 201);
    // No credentials: 401.
    let (code, _) = status_json(app.get("/api/agent-profiles", None).await).await;
    assert_eq!(code, 401);
    app.stop().await;
}

//! The answers to bad requests: 422 for bodies and queries, 400 for the start's own rules and
//! too many ids, 409 for a conversation id in use, 401 without credentials.

use reqwest::Method;
use serde_json::{Value, json};
use switchboard_domain::ConversationId;
use switchboard_domain::ports::ConversationStore;
use switchboard_testkit::Backend;

use crate::app_conversations_start::rig::{START, app, finished, hello, start};
use crate::common::sandboxes::SandboxOptions;
use crate::common::{detail, status_json};

pub async fn bad_requests(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let call = |body: Value| {
        let app = &app;
        let key = key.clone();
        async move { app.call(Method::POST, START, Some(&key), Some(body)).await }
    };
    for (body, ty, loc) in [
        (
            json!({"nope": 1}),
            "extra_forbidden",
            json!(["body", "nope"]),
        ),
        (
            json!({"conversation_id": "abc"}),
            "uuid_parsing",
            json!(["body", "conversation_id"]),
        ),
        (
            json!({"initial_message": {"role": "user", "content": "hi"}}),
            "list_type",
            json!(["body", "initial_message", "content"]),
        ),
        (
            json!({"pr_number": "1"}),
            "list_type",
            json!(["body", "pr_number"]),
        ),
        (
            json!({"trigger": "carrier_pigeon"}),
            "enum",
            json!(["body", "trigger"]),
        ),
        (json!([1]), "model_type", json!(["body"])),
    ] {
        let (status, got) = call(body.clone()).await;
        assert_eq!(status, 422, "{backend}: {body}: {got}");
        assert_eq!(got["detail"][0]["type"], ty, "{body}: {got}");
        assert_eq!(got["detail"][0]["loc"], loc, "{body}: {got}");
    }
    let (status, got) = app
        .req(Method::POST, START, Some(&key))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .map(|r| async move { status_json(r).await })
        .unwrap()
        .await;
    assert_eq!(
        (status, &got["detail"][0]["type"]),
        (422, &json!("json_invalid")),
        "{got}"
    );
    let (status, got) =
        call(json!({"suggested_task": {"repo": "a/b"}, "initial_message": hello("x")})).await;
    assert_eq!(
        (status, got),
        (
            400,
            detail("Only one of suggested_task and initial_message may be given")
        ),
        "{backend}"
    );
    let parent = "0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b";
    let (status, got) = call(json!({"parent_conversation_id": parent})).await;
    assert_eq!(
        (status, got),
        (
            400,
            detail(&format!("Parent conversation not found: {parent}"))
        ),
        "{backend}"
    );
    // A conversation id in use by a conversation the caller sees: 409 (issue 24 item 5).
    let t = start(
        &app,
        &key,
        json!({"initial_message": hello("x"), "sandbox_id": parent}),
    )
    .await;
    let done = finished(&app, &key, t["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "ERROR");
    let store = app.store.clone();
    let used = ConversationId::new_random();
    let sandbox_conv = switchboard_domain::conversations::Conversation {
        id: used,
        org_id: app.org,
        owner_id: app.owner.user_id,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: switchboard_domain::time_input::now_micros(),
        updated_at: switchboard_domain::time_input::now_micros(),
    };
    tokio::task::spawn_blocking(move || {
        store
            .upsert_conversation_info(
                &sandbox_conv,
                &Default::default(),
                "{}",
                switchboard_domain::time_input::now_micros(),
            )
            .unwrap()
    })
    .await
    .unwrap();
    let (status, got) = call(json!({"conversation_id": used.to_string()})).await;
    assert_eq!(
        (status, got),
        (409, detail(&format!("Conversation {used} already exists"))),
        "{backend}"
    );
    // Batch get: no ids (422), an invalid one (422 at its index), 101 (400).
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, &got["detail"][0]["type"]),
        (422, &json!("missing")),
        "{got}"
    );
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?ids={parent}&ids=zzz"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 422, "{got}");
    assert_eq!(got["detail"][0]["loc"], json!(["query", "ids", 1]), "{got}");
    let many: Vec<String> = (0..101).map(|_| format!("ids={parent}")).collect();
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?{}", many.join("&")),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(
        (status, got),
        (
            400,
            detail("Cannot request more than 100 start tasks at once, got 101")
        )
    );
    let hundred: Vec<String> = (0..100).map(|_| format!("ids={parent}")).collect();
    let (status, got) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks?{}", hundred.join("&")),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got.as_array().unwrap().len(), 100);
    // Search: a bad sort order, a bad filter.
    for q in [
        "sort_order=NEWEST",
        "conversation_id__eq=x",
        "created_at__gte=yesterday",
        "limit=0",
    ] {
        let (status, got) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks/search?{q}"),
                Some(&key),
                None,
            )
            .await;
        assert_eq!(status, 422, "{backend}: {q}: {got}");
    }
    // No credentials.
    let (status, _) = app.call(Method::POST, START, None, Some(json!({}))).await;
    assert_eq!(status, 401);
}

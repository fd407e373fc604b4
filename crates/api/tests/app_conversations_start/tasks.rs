//! Start tasks as each caller sees them, their search pages and count, and 20 starts at once.

use std::time::Instant;

use reqwest::Method;
use serde_json::json;
use switchboard_testkit::Backend;

use crate::app_conversations_start::rig::{START, app, finished, hello, start};
use crate::common::sandboxes::SandboxOptions;

pub async fn visibility(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    // Starts that fail fast (an unknown sandbox) make tasks without sandboxes.
    let body = json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"});
    let owners = start(&app, &app.owner.key, body.clone()).await;
    let members = start(&app, &app.member.key, body.clone()).await;
    let (o, m) = (
        owners["id"].as_str().unwrap(),
        members["id"].as_str().unwrap(),
    );
    finished(&app, &app.owner.key, o).await;
    finished(&app, &app.member.key, m).await;
    let count = |key: String| {
        let app = &app;
        async move {
            let (s, n) = app
                .call(
                    Method::GET,
                    &format!("{START}/start-tasks/count"),
                    Some(&key),
                    None,
                )
                .await;
            assert_eq!(s, 200);
            n.as_u64().unwrap()
        }
    };
    for (who, key, sees_owner, sees_member, n) in [
        ("owner", &app.owner.key, true, true, 2),
        ("admin", &app.admin.key, true, true, 2),
        ("member", &app.member.key, false, true, 1),
        ("other org", &app.non_member.key, false, false, 0),
    ] {
        let (status, got) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks?ids={o}&ids={m}"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(status, 200, "{backend}: {who}: {got}");
        assert_eq!(got[0].is_object(), sees_owner, "{backend}: {who}: {got}");
        assert_eq!(got[1].is_object(), sees_member, "{backend}: {who}: {got}");
        assert_eq!(count(key.clone()).await, n, "{backend}: {who}");
        let (_, page) = app
            .call(
                Method::GET,
                &format!("{START}/start-tasks/search"),
                Some(key),
                None,
            )
            .await;
        assert_eq!(
            page["items"].as_array().unwrap().len() as u64,
            n,
            "{who}: {page}"
        );
    }
}

pub async fn search_and_count(backend: Backend) {
    let app = app(backend, SandboxOptions::default()).await;
    let key = app.owner.key.clone();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let t = start(
            &app,
            &key,
            json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b"}),
        )
        .await;
        finished(&app, &key, t["id"].as_str().unwrap()).await;
        ids.push(t);
    }
    for (order, reversed) in [
        ("CREATED_AT", false),
        ("CREATED_AT_DESC", true),
        ("UPDATED_AT", false),
        ("UPDATED_AT_DESC", true),
    ] {
        let mut seen = Vec::new();
        let mut page_id: Option<String> = None;
        loop {
            let mut path = format!("{START}/start-tasks/search?limit=2&sort_order={order}");
            if let Some(p) = &page_id {
                path.push_str(&format!("&page_id={p}"));
            }
            let (status, page) = app.call(Method::GET, &path, Some(&key), None).await;
            assert_eq!(status, 200, "{page}");
            for item in page["items"].as_array().unwrap() {
                seen.push(item["id"].as_str().unwrap().to_owned());
            }
            // A start created while paging does not disturb the ascending orders' pages seen.
            match page["next_page_id"].as_str() {
                Some(p) => page_id = Some(p.to_owned()),
                None => break,
            }
        }
        let mut want: Vec<String> = ids
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect();
        if reversed {
            want.reverse();
        }
        if order.starts_with("CREATED") {
            assert_eq!(seen, want, "{backend}: {order}");
        } else {
            assert_eq!(seen.len(), 5, "{backend}: {order}");
        }
    }
    // A cursor of one order is refused under another.
    let (_, page) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks/search?limit=1&sort_order=CREATED_AT"),
            Some(&key),
            None,
        )
        .await;
    let p = page["next_page_id"].as_str().unwrap();
    let (status, _) = app
        .call(
            Method::GET,
            &format!("{START}/start-tasks/search?page_id={p}"),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(status, 422, "{backend}");
    // Filters.
    let conv = ids[2]["request"]["conversation_id"].clone();
    assert!(conv.is_null());
    let (_, n) = app
        .call(
            Method::GET,
            &format!(
                "{START}/start-tasks/count?created_at__gte={}",
                ids[3]["created_at"].as_str().unwrap()
            ),
            Some(&key),
            None,
        )
        .await;
    assert_eq!(n, json!(2), "{backend}");
    let t = start(&app, &key, json!({"sandbox_id": "0b9f3c4e7d2a4c1e9a8b5f6e7d8c9a0b", "conversation_id": "11111111-2222-4333-8444-555555555555"})).await;
    finished(&app, &key, t["id"].as_str().unwrap()).await;
    let (_, page) = app
        .call(
            Method::GET,
            &format!(
                "{START}/start-tasks/search?conversation_id__eq=11111111222243338444555555555555"
            ),
            Some(&key),
            None,
        )
        .await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{backend}: {page}");
    assert_eq!(items[0]["id"], t["id"]);
}

pub async fn concurrent_starts(backend: Backend) {
    let app = app(
        backend,
        SandboxOptions {
            warm: 0,
            max_running: 25,
            ..SandboxOptions::default()
        },
    )
    .await;
    let key = app.owner.key.clone();
    let began = Instant::now();
    let mut pending = Vec::new();
    for i in 0..20 {
        let app = &app;
        let key = key.clone();
        pending.push(async move {
            let t = start(
                app,
                &key,
                json!({"initial_message": hello(&format!("n{i}"))}),
            )
            .await;
            finished(app, &key, t["id"].as_str().unwrap()).await
        });
    }
    let done = futures_util::future::join_all(pending).await;
    let mut sandboxes = std::collections::HashSet::new();
    let mut conversations = std::collections::HashSet::new();
    for d in &done {
        assert_eq!(d["status"], "READY", "{backend}: {d}");
        sandboxes.insert(d["sandbox_id"].as_str().unwrap().to_owned());
        conversations.insert(d["app_conversation_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        (sandboxes.len(), conversations.len()),
        (20, 20),
        "{backend}"
    );
    eprintln!(
        "{backend}: 20 concurrent starts READY in {:?}",
        began.elapsed()
    );
}

//! Bodies that are not JSON objects (with the offsets FastAPI reports), and duplicate names.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::{assert_one_error, detail, spawn_app};
use crate::settings_validation::rig::non_default_state;

pub async fn body_framing(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    let key = Some(app.owner.key.as_str());
    // The offsets Python's json module reports (FastAPI's loc), checked with CPython.
    let malformed: [(&[u8], usize); 10] = [
        (b"{\"max_budget_per_task\": }", 24),
        (b"{\"a\": 1,}", 8),
        (b"{\n  \"a\": 1,\n}", 12),
        (b"{\"a\" 1}", 5),
        (b"{\"a\": [1, 2}", 11),
        (b"{\"a\": 1} x", 9),
        (b"{oops", 1),
        (b"{\"max_budget_per_task\": 5", 25),
        (b"{\"max_budget_per_task\": ", 24),
        // Characters, not bytes: 'ä' is two bytes.
        ("{\"\u{e4}\": }".as_bytes(), 6),
    ];
    for (bytes, offset) in malformed {
        let (status, got) = app.post_settings_raw(key, bytes).await;
        let shown = String::from_utf8_lossy(bytes);
        assert_eq!(status, 422, "{backend}: {shown}: {got}");
        assert_one_error(&got, &json!(["body", offset]), "json_invalid");
        assert_eq!(app.settings().await, before, "{backend}: {shown}");
    }
    for empty in [&b""[..], b"   ", b"\n"] {
        let (status, got) = app.post_settings_raw(key, empty).await;
        assert_eq!(status, 422, "{backend}: {got}");
        assert_one_error(&got, &json!(["body"]), "missing");
        assert_eq!(
            got["detail"][0]["input"],
            Value::Null,
            "{backend}: as FastAPI writes it"
        );
    }
    for not_object in [&b"[1, 2]"[..], b"\"x\"", b"5"] {
        let (status, got) = app.post_settings_raw(key, not_object).await;
        assert_eq!(status, 422, "{backend}: {got}");
        assert_one_error(&got, &json!(["body"]), "model_type");
    }
    // 1 MiB is the limit: exactly 1 MiB is read, one byte more is refused.
    let mut exact = br#"{"max_budget_per_task": 77}"#.to_vec();
    exact.resize(1 << 20, b' ');
    let mut over = exact.clone();
    over.push(b' ');
    let (status, got) = app.post_settings_raw(key, over).await;
    assert_eq!(
        (status, &got),
        (413, &detail("Request body too large (limit 1048576 bytes)")),
        "{backend}"
    );
    assert_eq!(app.settings().await, before, "{backend}");
    let (status, got) = app.post_settings_raw(key, exact).await;
    assert_eq!(status, 200, "{backend}: {got}");
    assert_eq!(got["max_budget_per_task"], 77.0, "{backend}");
    app.stop().await;
}

pub async fn duplicate_names(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    let entry = |name: &str| json!({"name": name, "source": "github:o/r"});
    for (names, message) in [
        (
            vec!["b", "a", "c", " a", "b ", "A"],
            "Duplicate marketplace name(s) not allowed: a, b",
        ),
        (
            vec!["z", "z", "z"],
            "Duplicate marketplace name(s) not allowed: z",
        ),
        (
            vec!["y", "x", "y", "x"],
            "Duplicate marketplace name(s) not allowed: x, y",
        ),
    ] {
        let list: Vec<Value> = names.iter().map(|n| entry(n)).collect();
        let (status, got) = app
            .post_settings(&app.owner.key, &json!({"registered_marketplaces": list}))
            .await;
        assert_eq!(
            (status, &got),
            (400, &detail(message)),
            "{backend}: {names:?}"
        );
        assert_eq!(app.settings().await, before, "{backend}: {names:?}");
    }
    // Case matters: "A" and "a" are two names.
    let (status, got) = app
        .post_settings(
            &app.owner.key,
            &json!({"registered_marketplaces": [entry("a"), entry("A")]}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    let names: Vec<&str> = got["registered_marketplaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "A"], "{backend}");
    app.stop().await;
}

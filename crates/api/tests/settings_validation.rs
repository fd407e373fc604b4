//! The body of `POST /api/organizations/app`: every rule of reference §1.2 as API.md fixes
//! it (422 entries with `loc` and `type`, 400 for duplicate names, 413 over 1 MiB), patch
//! semantics, and the version check of reference §1.5 (409). After every refusal the stored
//! settings are unchanged.

#[macro_use]
mod common;

use common::{TestApp, assert_one_error, detail, instant, spawn_app};
use serde_json::{Value, json};
use switchboard_testkit::Backend;
use time::macros::offset;

/// Puts organization A in a state other than the defaults, so that a reset would show.
async fn non_default_state(app: &TestApp) -> Value {
    let (status, body) = app
        .post_settings(
            &app.owner.key,
            &json!({
                "enable_proactive_conversation_starters": false,
                "max_budget_per_task": 3.25,
                "registered_marketplaces": [{"name": "keep", "source": "github:o/keep"}],
            }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.settings().await, body);
    body
}

/// Sends `body` as the owner; asserts a 422 with one entry at `loc` of type `error_type`, and
/// that nothing changed.
async fn refused(app: &TestApp, before: &Value, body: Value, loc: Value, error_type: &str) {
    let (status, got) = app.post_settings(&app.owner.key, &body).await;
    assert_eq!(status, 422, "{}: {body}: {got}", app.backend);
    assert_one_error(&got, &loc, error_type);
    assert_eq!(&app.settings().await, before, "{}: {body}", app.backend);
}

async fn field_types_and_values(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    let budget = json!(["body", "max_budget_per_task"]);
    let flag = json!(["body", "enable_proactive_conversation_starters"]);
    let list = json!(["body", "registered_marketplaces"]);
    let cases = [
        (json!({"max_budget_per_task": 0}), &budget, "value_error"),
        (json!({"max_budget_per_task": 0.0}), &budget, "value_error"),
        (json!({"max_budget_per_task": -0.0}), &budget, "value_error"),
        (json!({"max_budget_per_task": -5}), &budget, "value_error"),
        (json!({"max_budget_per_task": "5"}), &budget, "float_type"),
        (json!({"max_budget_per_task": true}), &budget, "float_type"),
        (json!({"max_budget_per_task": [5]}), &budget, "float_type"),
        (
            json!({"enable_proactive_conversation_starters": null}),
            &flag,
            "bool_type",
        ),
        (
            json!({"enable_proactive_conversation_starters": "true"}),
            &flag,
            "bool_type",
        ),
        (
            json!({"enable_proactive_conversation_starters": 1}),
            &flag,
            "bool_type",
        ),
        (json!({"registered_marketplaces": null}), &list, "list_type"),
        (
            json!({"registered_marketplaces": {"name": "a"}}),
            &list,
            "list_type",
        ),
        (
            json!({"registered_marketplaces": "github:o/r"}),
            &list,
            "list_type",
        ),
        (
            json!({"last_known_updated_at": "yesterday"}),
            &json!(["body", "last_known_updated_at"]),
            "datetime_from_date_parsing",
        ),
        (
            json!({"last_known_updated_at": "yesterday", "max_budget_per_task": 9}),
            &json!(["body", "last_known_updated_at"]),
            "datetime_from_date_parsing",
        ),
        // One bad field refuses the whole body: the good one is not written either.
        (
            json!({"max_budget_per_task": 9, "enable_proactive_conversation_starters": "no"}),
            &flag,
            "bool_type",
        ),
    ];
    for (body, loc, error_type) in cases {
        refused(&app, &before, body, loc.clone(), error_type).await;
    }
    // The whole entry of one case, as FastAPI writes it.
    let (status, got) = app
        .post_settings(&app.owner.key, &json!({"max_budget_per_task": -5}))
        .await;
    assert_eq!(status, 422);
    assert_eq!(got["detail"][0]["input"], -5, "{backend}: {got}");
    assert_eq!(
        got["detail"][0]["msg"], "Value error, max_budget_per_task must be greater than 0",
        "{backend}: {got}"
    );
    app.stop().await;
}

async fn marketplace_entries(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    let ok = json!({"name": "ok", "source": "github:o/r"});
    // Each bad entry is sent second, after a valid one: the location names index 1.
    let at = |field: &str| json!(["body", "registered_marketplaces", 1, field]);
    let mut cases = vec![
        (
            json!(1),
            json!(["body", "registered_marketplaces", 1]),
            "model_type",
        ),
        (
            json!("a"),
            json!(["body", "registered_marketplaces", 1]),
            "model_type",
        ),
        (
            json!(null),
            json!(["body", "registered_marketplaces", 1]),
            "model_type",
        ),
        (
            json!([]),
            json!(["body", "registered_marketplaces", 1]),
            "model_type",
        ),
        (json!({"source": "github:o/r"}), at("name"), "missing"),
        (json!({"name": "a"}), at("source"), "missing"),
        (
            json!({"name": 5, "source": "github:o/r"}),
            at("name"),
            "string_type",
        ),
        (
            json!({"name": "a", "source": 5}),
            at("source"),
            "string_type",
        ),
        (
            json!({"name": "a", "source": "github:o/r", "ref": 5}),
            at("ref"),
            "string_type",
        ),
        (
            json!({"name": "a", "source": "github:o/r", "scope": "global"}),
            at("scope"),
            "enum",
        ),
        (
            json!({"name": "a", "source": "github:o/r", "auto_load": "yes"}),
            at("auto_load"),
            "bool_type",
        ),
    ];
    for name in ["", "   ", "1abc", "a b", "-a", "_a", "a.b", "ä"] {
        cases.push((
            json!({"name": name, "source": "github:o/r"}),
            at("name"),
            "value_error",
        ));
    }
    for source in [
        "https://user:pass@h/r",
        "ftp://x/y",
        "/abs",
        "../x",
        "a/../b",
        "github:onlyowner",
        "github:o/r/extra",
        "file:///etc",
        "",
        "  ",
        "has space",
    ] {
        cases.push((
            json!({"name": "a", "source": source}),
            at("source"),
            "value_error",
        ));
    }
    for repo_path in ["/abs", "a/../b", "..", "http://x"] {
        cases.push((
            json!({"name": "a", "source": "github:o/r", "repo_path": repo_path}),
            at("repo_path"),
            "value_error",
        ));
    }
    for (entry, loc, error_type) in cases {
        refused(
            &app,
            &before,
            json!({"registered_marketplaces": [ok, entry]}),
            loc,
            error_type,
        )
        .await;
    }
    // And what is accepted: every kind of source, a bare user name in a git URL.
    let sources = [
        "github:o/r",
        "github:my.org/my-repo_1",
        "https://github.com/o/r.git",
        "http://host:8080/o/r",
        "https://user@host.com/o/r",
        "ssh://git@host.com/o/r",
        "git://host/o/r",
        "git@github.com:o/r.git",
        "https://host/~user/r",
        "plugins/local",
        "_x/y.z",
    ];
    let list: Vec<Value> = sources
        .iter()
        .enumerate()
        .map(|(i, s)| json!({"name": format!("m{i}"), "source": s, "repo_path": "sub/dir"}))
        .collect();
    let (status, got) = app
        .post_settings(&app.owner.key, &json!({"registered_marketplaces": list}))
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    let stored: Vec<&str> = got["registered_marketplaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["source"].as_str().unwrap())
        .collect();
    assert_eq!(stored, sources, "{backend}");
    app.stop().await;
}

async fn body_framing(backend: Backend) {
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

async fn duplicate_names(backend: Backend) {
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

/// The settings without their version.
fn unversioned(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("updated_at");
    v
}

async fn patch_semantics(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = app.owner.key.as_str();
    let initial = app.settings().await;
    assert_eq!(
        unversioned(&initial),
        json!({
            "enable_proactive_conversation_starters": true,
            "max_budget_per_task": null,
            "registered_marketplaces": [],
        }),
        "{backend}"
    );
    let m = json!({"name": "m", "source": "github:o/m"});
    let m_out = json!({
        "name": "m", "source": "github:o/m", "ref": null, "repo_path": null,
        "auto_load": false, "scope": "org",
    });
    let steps = [
        (
            json!({"max_budget_per_task": 5}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 5.0, "registered_marketplaces": []}),
        ),
        (
            json!({"enable_proactive_conversation_starters": false}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 5.0, "registered_marketplaces": []}),
        ),
        (
            json!({"registered_marketplaces": [m]}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 5.0, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": 0.01}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 0.01, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": 1e12}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 1e12, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": null}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"registered_marketplaces": []}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5, "registered_marketplaces": []}),
        ),
        (
            json!({"last_known_updated_at": null, "max_budget_per_task": 4}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 4.0, "registered_marketplaces": []}),
        ),
    ];
    for (update, expected) in steps {
        let (status, got) = app.post_settings(key, &update).await;
        assert_eq!(status, 200, "{backend}: {update}: {got}");
        assert_eq!(unversioned(&got), expected, "{backend}: {update}");
        assert_eq!(app.settings().await, got, "{backend}: {update}");
    }
    app.stop().await;
}

async fn entries_come_back_complete(backend: Backend) {
    let app = spawn_app(backend).await;
    let sent = json!([
        {"name": " zeta ", "source": " github:o/z ", "scope": "personal", "ref": "main",
         "repo_path": "plugins/x", "auto_load": true, "extra": 1},
        {"name": "alpha", "source": "https://github.com/o/a.git", "scope": "instance"},
        {"name": "Mid_1-x", "source": "plugins/local", "scope": "org", "auto_load": false},
        {"name": "n", "source": "git@github.com:o/r.git", "scope": null, "ref": null, "repo_path": null},
    ]);
    let expected = json!([
        {"name": "zeta", "source": "github:o/z", "ref": "main", "repo_path": "plugins/x",
         "auto_load": true, "scope": "org"},
        {"name": "alpha", "source": "https://github.com/o/a.git", "ref": null, "repo_path": null,
         "auto_load": false, "scope": "org"},
        {"name": "Mid_1-x", "source": "plugins/local", "ref": null, "repo_path": null,
         "auto_load": false, "scope": "org"},
        {"name": "n", "source": "git@github.com:o/r.git", "ref": null, "repo_path": null,
         "auto_load": false, "scope": "org"},
    ]);
    let (status, got) = app
        .post_settings(&app.owner.key, &json!({"registered_marketplaces": sent}))
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    assert_eq!(got["registered_marketplaces"], expected, "{backend}");
    let stored = app.settings().await;
    assert_eq!(stored["registered_marketplaces"], expected, "{backend}");
    // Keys in the documented order, nothing more.
    let keys: Vec<&String> = stored.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "enable_proactive_conversation_starters",
            "max_budget_per_task",
            "registered_marketplaces",
            "updated_at"
        ],
        "{backend}"
    );
    app.stop().await;
}

async fn empty_and_unknown_bodies_write_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    for body in [
        json!({}),
        json!({"foo": 1}),
        json!({"foo": null, "enable_solvability_analysis": true, "updated_at": "2020-01-01T00:00:00Z"}),
    ] {
        let (status, got) = app.post_settings(&app.owner.key, &body).await;
        assert_eq!((status, &got), (200, &before), "{backend}: {body}");
        assert_eq!(app.settings().await, before, "{backend}: {body}");
    }
    // Unknown keys next to known ones are ignored, and not echoed.
    let (status, got) = app
        .post_settings(
            &app.owner.key,
            &json!({"foo": "x", "max_budget_per_task": 2}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    assert_eq!(got["max_budget_per_task"], 2.0);
    assert_eq!(got.get("foo"), None, "{backend}");
    app.stop().await;
}

async fn versions_strictly_increase(backend: Backend) {
    let app = spawn_app(backend).await;
    let format = regex_like_rfc3339_micros;
    let mut last = app.settings().await["updated_at"].clone();
    assert!(format(&last), "{backend}: {last}");
    for i in 0..30 {
        // The same value each time: still a write, still a new version.
        let body = if i % 2 == 0 {
            json!({"max_budget_per_task": 1})
        } else {
            json!({"enable_proactive_conversation_starters": true})
        };
        let (status, got) = app.post_settings(&app.owner.key, &body).await;
        assert_eq!(status, 200, "{backend}: {got}");
        let now = got["updated_at"].clone();
        assert!(format(&now), "{backend}: {now}");
        assert!(
            instant(&now) > instant(&last),
            "{backend}: {last} then {now}"
        );
        assert_eq!(app.settings().await["updated_at"], now, "{backend}");
        last = now;
    }
    app.stop().await;
}

/// `2026-11-21T09:08:18.014821Z`: RFC 3339, UTC, six fraction digits.
fn regex_like_rfc3339_micros(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    b.len() == 27
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            26 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// The same instant without its `Z` (naive ISO-8601, taken as UTC).
fn naive(v: &Value) -> String {
    v.as_str().unwrap().strip_suffix('Z').unwrap().to_owned()
}

/// The same instant written with a `+02:00` offset.
fn plus_two(v: &Value) -> String {
    let t = instant(v).to_offset(offset!(+2));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+02:00",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// One microsecond later, in the API's form.
fn plus_one_micro(v: &Value) -> String {
    let t = (instant(v) + time::Duration::microseconds(1)).to_offset(offset!(UTC));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

fn stale_message(app: &TestApp, expected: &str, actual: &Value) -> Value {
    detail(&format!(
        "Organization \"{}\" was modified by another request. Expected version: {expected}, actual version: {}. Please refresh and retry.",
        app.org,
        actual.as_str().unwrap()
    ))
}

async fn optimistic_locking(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = app.owner.key.as_str();
    let v0 = app.settings().await["updated_at"].clone();

    // The current version, in each accepted form.
    let (status, got) = app
        .post_settings(
            key,
            &json!({"max_budget_per_task": 1, "last_known_updated_at": v0}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    let v1 = got["updated_at"].clone();
    let (status, got) = app
        .post_settings(
            key,
            &json!({"max_budget_per_task": 2, "last_known_updated_at": naive(&v1)}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: naive {got}");
    let v2 = got["updated_at"].clone();
    let (status, got) = app
        .post_settings(
            key,
            &json!({"max_budget_per_task": 3, "last_known_updated_at": plus_two(&v2)}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: +02:00 {got}");
    let v3 = got["updated_at"].clone();
    let current = app.settings().await;
    assert_eq!(current["max_budget_per_task"], 3.0);
    assert_eq!(current["updated_at"], v3);

    // Stale versions: 409, nothing written.
    let v0s = v0.as_str().unwrap().to_owned();
    let v1s = v1.as_str().unwrap().to_owned();
    let stale = [
        (
            json!({"max_budget_per_task": 4, "last_known_updated_at": v0}),
            v0s.clone(),
        ),
        (
            json!({"max_budget_per_task": 4, "last_known_updated_at": plus_two(&v1)}),
            v1s.clone(),
        ),
        (
            json!({"max_budget_per_task": 4, "last_known_updated_at": naive(&v1)}),
            v1s.clone(),
        ),
        (
            json!({"max_budget_per_task": 4, "last_known_updated_at": plus_one_micro(&v3)}),
            plus_one_micro(&v3),
        ),
        (
            json!({"registered_marketplaces": [], "enable_proactive_conversation_starters": false,
                   "last_known_updated_at": v2}),
            v2.as_str().unwrap().to_owned(),
        ),
        // Only the version, stale: still checked.
        (json!({"last_known_updated_at": v0}), v0s.clone()),
        // The version check comes before the duplicate-name check.
        (
            json!({"last_known_updated_at": v1,
                   "registered_marketplaces": [{"name": "d", "source": "x"}, {"name": "d", "source": "y"}]}),
            v1s.clone(),
        ),
    ];
    for (body, expected) in stale {
        let (status, got) = app.post_settings(key, &body).await;
        assert_eq!(
            (status, &got),
            (409, &stale_message(&app, &expected, &v3)),
            "{backend}: {body}"
        );
        assert_eq!(app.settings().await, current, "{backend}: {body}");
    }
    // A member's marketplaces are refused (403) before the version is looked at.
    let (status, got) = app
        .post_settings(
            &app.member.key,
            &json!({"registered_marketplaces": [], "last_known_updated_at": v0}),
        )
        .await;
    assert_eq!(
        (status, &got),
        (
            403,
            &detail("Missing required permission: edit_org_settings")
        ),
        "{backend}"
    );
    // Only the current version: 200, nothing written, same version.
    let (status, got) = app
        .post_settings(key, &json!({"last_known_updated_at": v3}))
        .await;
    assert_eq!((status, &got), (200, &current), "{backend}");
    assert_eq!(app.settings().await, current, "{backend}");
    // Current version with duplicate names: the 400.
    let (status, got) = app
        .post_settings(
            key,
            &json!({"last_known_updated_at": v3,
                    "registered_marketplaces": [{"name": "d", "source": "x"}, {"name": "d", "source": "y"}]}),
        )
        .await;
    assert_eq!(
        (status, &got),
        (400, &detail("Duplicate marketplace name(s) not allowed: d")),
        "{backend}"
    );
    assert_eq!(app.settings().await, current, "{backend}");
    // After a write by someone else, the version read before is stale.
    let (status, got) = app
        .post_settings(
            &app.admin.key,
            &json!({"enable_proactive_conversation_starters": false}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    let v4 = got["updated_at"].clone();
    let (status, got) = app
        .post_settings(
            key,
            &json!({"max_budget_per_task": 8, "last_known_updated_at": v3}),
        )
        .await;
    assert_eq!(
        (status, &got),
        (409, &stale_message(&app, v3.as_str().unwrap(), &v4)),
        "{backend}"
    );
    let (status, got) = app
        .post_settings(
            key,
            &json!({"max_budget_per_task": 8, "last_known_updated_at": v4}),
        )
        .await;
    assert_eq!(status, 200, "{backend}: {got}");
    assert_eq!(
        got["enable_proactive_conversation_starters"], false,
        "{backend}"
    );
    assert_eq!(got["max_budget_per_task"], 8.0, "{backend}");
    app.stop().await;
}

on_both_backends!(
    field_types_and_values,
    marketplace_entries,
    body_framing,
    duplicate_names,
    patch_semantics,
    entries_come_back_complete,
    empty_and_unknown_bodies_write_nothing,
    versions_strictly_increase,
    optimistic_locking,
);

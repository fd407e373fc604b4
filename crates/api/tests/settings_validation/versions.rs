//! The settings' version (`updated_at`): strictly increasing, in the API's form, and the
//! optimistic lock of `last_known_updated_at` (409) in every accepted spelling.

use serde_json::{Value, json};
use switchboard_testkit::Backend;
use time::macros::offset;

use crate::common::{TestApp, detail, instant, spawn_app};

pub async fn versions_strictly_increase(backend: Backend) {
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
pub fn regex_like_rfc3339_micros(v: &Value) -> bool {
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
pub fn naive(v: &Value) -> String {
    v.as_str().unwrap().strip_suffix('Z').unwrap().to_owned()
}

/// The same instant written with a `+02:00` offset.
pub fn plus_two(v: &Value) -> String {
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
pub fn plus_one_micro(v: &Value) -> String {
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

pub fn stale_message(app: &TestApp, expected: &str, actual: &Value) -> Value {
    detail(&format!(
        "Organization \"{}\" was modified by another request. Expected version: {expected}, actual version: {}. Please refresh and retry.",
        app.org,
        actual.as_str().unwrap()
    ))
}

pub async fn optimistic_locking(backend: Backend) {
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

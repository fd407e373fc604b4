//! Patch semantics: what a body changes and keeps, entries that come back complete, and bodies
//! that write nothing.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::spawn_app;
use crate::settings_validation::rig::non_default_state;

/// The settings without their version.
pub fn unversioned(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("updated_at");
    v
}

pub async fn patch_semantics(backend: Backend) {
    let app = spawn_app(backend).await;
    let key = app.owner.key.as_str();
    let initial = app.settings().await;
    assert_eq!(
        unversioned(&initial),
        json!({
            "enable_proactive_conversation_starters": true,
            "max_budget_per_task": null,
            "llm_monthly_budget": null,
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
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 5.0, "llm_monthly_budget": null, "registered_marketplaces": []}),
        ),
        (
            json!({"enable_proactive_conversation_starters": false}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 5.0, "llm_monthly_budget": null, "registered_marketplaces": []}),
        ),
        (
            json!({"registered_marketplaces": [m]}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 5.0, "llm_monthly_budget": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": 0.01}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 0.01, "llm_monthly_budget": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": 1e12}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": 1e12, "llm_monthly_budget": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"max_budget_per_task": null}),
            json!({"enable_proactive_conversation_starters": false, "max_budget_per_task": null, "llm_monthly_budget": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5, "llm_monthly_budget": null, "registered_marketplaces": [m_out]}),
        ),
        (
            json!({"registered_marketplaces": []}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 2.5, "llm_monthly_budget": null, "registered_marketplaces": []}),
        ),
        (
            json!({"last_known_updated_at": null, "max_budget_per_task": 4}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 4.0, "llm_monthly_budget": null, "registered_marketplaces": []}),
        ),
        // The monthly budget: set, kept by a patch of another field, changed, cleared.
        (
            json!({"llm_monthly_budget": 50}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 4.0, "llm_monthly_budget": 50.0, "registered_marketplaces": []}),
        ),
        (
            json!({"max_budget_per_task": 6}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 6.0, "llm_monthly_budget": 50.0, "registered_marketplaces": []}),
        ),
        (
            json!({"llm_monthly_budget": 0.01}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 6.0, "llm_monthly_budget": 0.01, "registered_marketplaces": []}),
        ),
        (
            json!({"llm_monthly_budget": 1e12}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 6.0, "llm_monthly_budget": 1e12, "registered_marketplaces": []}),
        ),
        (
            json!({"llm_monthly_budget": null}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": 6.0, "llm_monthly_budget": null, "registered_marketplaces": []}),
        ),
        (
            json!({"llm_monthly_budget": 75.5, "max_budget_per_task": null}),
            json!({"enable_proactive_conversation_starters": true, "max_budget_per_task": null, "llm_monthly_budget": 75.5, "registered_marketplaces": []}),
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

pub async fn entries_come_back_complete(backend: Backend) {
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
            "llm_monthly_budget",
            "registered_marketplaces",
            "updated_at"
        ],
        "{backend}"
    );
    app.stop().await;
}

pub async fn empty_and_unknown_bodies_write_nothing(backend: Backend) {
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

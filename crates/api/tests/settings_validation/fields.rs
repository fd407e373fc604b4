//! Each field's type and value rules, and the rules of marketplace entries.

use serde_json::{Value, json};
use switchboard_testkit::Backend;

use crate::common::spawn_app;
use crate::settings_validation::rig::{non_default_state, refused};

pub async fn field_types_and_values(backend: Backend) {
    let app = spawn_app(backend).await;
    let before = non_default_state(&app).await;
    let budget = json!(["body", "max_budget_per_task"]);
    let monthly = json!(["body", "llm_monthly_budget"]);
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
        (json!({"llm_monthly_budget": 0}), &monthly, "value_error"),
        (json!({"llm_monthly_budget": 0.0}), &monthly, "value_error"),
        (json!({"llm_monthly_budget": -0.0}), &monthly, "value_error"),
        (json!({"llm_monthly_budget": -5}), &monthly, "value_error"),
        (
            json!({"llm_monthly_budget": -1e-9}),
            &monthly,
            "value_error",
        ),
        (json!({"llm_monthly_budget": "5"}), &monthly, "float_type"),
        (json!({"llm_monthly_budget": "NaN"}), &monthly, "float_type"),
        (
            json!({"llm_monthly_budget": "Infinity"}),
            &monthly,
            "float_type",
        ),
        (json!({"llm_monthly_budget": true}), &monthly, "float_type"),
        (json!({"llm_monthly_budget": [5]}), &monthly, "float_type"),
        (
            json!({"llm_monthly_budget": {"usd": 5}}),
            &monthly,
            "float_type",
        ),
        // One bad field refuses the whole body: the good one is not written either.
        (
            json!({"max_budget_per_task": 9, "llm_monthly_budget": 0}),
            &monthly,
            "value_error",
        ),
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
    let (status, got) = app
        .post_settings(&app.owner.key, &json!({"llm_monthly_budget": -5}))
        .await;
    assert_eq!(status, 422);
    assert_eq!(got["detail"][0]["loc"], monthly, "{backend}: {got}");
    assert_eq!(got["detail"][0]["input"], -5, "{backend}: {got}");
    assert_eq!(
        got["detail"][0]["msg"], "Value error, llm_monthly_budget must be greater than 0",
        "{backend}: {got}"
    );
    app.stop().await;
}

pub async fn marketplace_entries(backend: Backend) {
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

//! Organization A's settings put in a state other than the defaults, and a refusal that must
//! leave them so.

use serde_json::{Value, json};

use crate::common::{TestApp, assert_one_error};

/// Puts organization A in a state other than the defaults, so that a reset would show.
pub async fn non_default_state(app: &TestApp) -> Value {
    let (status, body) = app
        .post_settings(
            &app.owner.key,
            &json!({
                "enable_proactive_conversation_starters": false,
                "max_budget_per_task": 3.25,
                "llm_monthly_budget": 120.5,
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
pub async fn refused(app: &TestApp, before: &Value, body: Value, loc: Value, error_type: &str) {
    let (status, got) = app.post_settings(&app.owner.key, &body).await;
    assert_eq!(status, 422, "{}: {body}: {got}", app.backend);
    assert_one_error(&got, &loc, error_type);
    assert_eq!(&app.settings().await, before, "{}: {body}", app.backend);
}

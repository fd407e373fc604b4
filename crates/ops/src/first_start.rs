//! What a starting server does once with its database: start tasks cut off by this replica's
//! previous run (or whose claim lapsed) set to `ERROR` (the restart rule, issue 20), and on an
//! empty database the first organization and its admin key.

use anyhow::Result;
use serde_json::{Value, json};
use switchboard_domain::Switchboard;

use crate::domain;

/// Runs the first-start steps over `services`, logging how many start tasks were closed.
/// Returns the `bootstrapped` event to print when the database was empty (`{"event",
/// "org_id", "user_id", "api_key", "note"}`: the admin key is shown once), else `None`.
///
/// # Errors
/// The domain's refusal or a storage failure.
pub fn first_start(services: &Switchboard) -> Result<Option<Value>> {
    // Starts cut off by the previous run's end never finish: say so on their tasks.
    let closed = services
        .conversation_start()
        .recover_unfinished()
        .map_err(domain)?;
    if closed > 0 {
        tracing::warn!(
            closed,
            "start tasks left unfinished by the previous run set to ERROR"
        );
    }
    if !services.operator().is_empty().map_err(domain)? {
        return Ok(None);
    }
    let b = services
        .operator()
        .bootstrap("default", "admin@localhost")
        .map_err(domain)?;
    Ok(Some(json!({
        "event": "bootstrapped",
        "org_id": b.org_id,
        "user_id": b.user_id,
        "api_key": b.api_key,
        "note": "first start: this admin key is shown once",
    })))
}

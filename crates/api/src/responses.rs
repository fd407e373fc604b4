//! The OpenAPI answers many operations share, described once: an operation lists its own
//! answers and one of these sets; an answer it lists after the set overrides the set's
//! description of that status (the document lists statuses in order either way).

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, ToSchema};

use crate::dto::{ErrorDetail, HTTPValidationError};
use crate::extract::{DEFAULT_BODY_LIMIT, WEBHOOK_BODY_LIMIT};

/// An answer with a JSON body of schema `T`.
fn answer<T: ToSchema>(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            utoipa::openapi::ContentBuilder::new()
                .schema(Some(utoipa::openapi::Ref::from_schema_name(T::name())))
                .build(),
        )
        .build()
        .into()
}

/// The description of a 413 for a route whose body limit is `limit` bytes.
pub fn too_large(limit: usize) -> String {
    format!("Body over {} MiB", limit >> 20)
}

const BODY_TIMEOUT: &str = "The body did not arrive within the read timeout or above the minimum rate; the connection is closed";
const BODIES_IN_FLIGHT: &str =
    "No room among the request bodies in flight within the read timeout; retry (Retry-After)";

const UNPROCESSABLE: &str = "A malformed header, path, query or body value: one FastAPI entry each";
const INTERNAL: &str = "Internal server error (logged with the request id)";

/// What an operation authenticated by an API key may answer besides its own (API.md,
/// Identity and Conventions): 401, 403, 404 (the effective organization), 422, 500.
pub struct ApiKeyErrors;

impl IntoResponses for ApiKeyErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "401".to_owned(),
                answer::<ErrorDetail>("No, unknown, expired or revoked API key"),
            ),
            (
                "403".to_owned(),
                answer::<ErrorDetail>("Not a member, key bound elsewhere, or permission missing"),
            ),
            (
                "404".to_owned(),
                answer::<ErrorDetail>("The effective organization does not exist"),
            ),
            (
                "422".to_owned(),
                answer::<HTTPValidationError>(UNPROCESSABLE),
            ),
            ("500".to_owned(), answer::<ErrorDetail>(INTERNAL)),
        ])
    }
}

/// What an operation on one conversation (named by its path) may answer besides its own: as
/// [`ApiKeyErrors`], with 404 also for an unknown conversation or another organization's.
pub struct ConversationErrors;

impl IntoResponses for ConversationErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut out = ApiKeyErrors::responses();
        out.insert(
            "404".to_owned(),
            answer::<ErrorDetail>("Unknown conversation, or another organization's"),
        );
        out
    }
}

/// What an operation on one sandbox (named by its path or query) may answer besides its
/// own: as [`ApiKeyErrors`], with 404 also for an unknown sandbox, another organization's,
/// or another member's seen by a member (design: Sandboxes), and 409 for a sandbox that is
/// not managed by Switchboard or whose process is gone.
pub struct SandboxErrors;

impl IntoResponses for SandboxErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut out = ApiKeyErrors::responses();
        out.insert(
            "404".to_owned(),
            answer::<ErrorDetail>(
                "Unknown sandbox, another organization's, or another member's (for a member): {\"detail\": \"Not Found\"}",
            ),
        );
        out.insert(
            "409".to_owned(),
            answer::<ErrorDetail>(
                "Pause or resume of a registered sandbox, or of one that is ERROR or MISSING",
            ),
        );
        out
    }
}

/// What reading a body of a route with the default limit may answer (API.md, Request
/// bodies): 408 (read timeout or minimum rate), 413 (over 1 MiB), 503 (no room in time).
pub struct BodyErrors;

impl IntoResponses for BodyErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            ("408".to_owned(), answer::<ErrorDetail>(BODY_TIMEOUT)),
            (
                "413".to_owned(),
                answer::<ErrorDetail>(&too_large(DEFAULT_BODY_LIMIT)),
            ),
            ("503".to_owned(), answer::<ErrorDetail>(BODIES_IN_FLIGHT)),
        ])
    }
}

/// What an agent-server webhook (authenticated by a sandbox session key) may answer besides
/// its own: 401, 404 (the conversation belongs to another organization), 408, 413 (over
/// [`WEBHOOK_BODY_LIMIT`]), 422, 500, 503 (as [`BodyErrors`]).
pub struct WebhookErrors;

impl IntoResponses for WebhookErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "401".to_owned(),
                answer::<ErrorDetail>("Missing or invalid session key"),
            ),
            ("408".to_owned(), answer::<ErrorDetail>(BODY_TIMEOUT)),
            (
                "413".to_owned(),
                answer::<ErrorDetail>(&too_large(WEBHOOK_BODY_LIMIT)),
            ),
            ("503".to_owned(), answer::<ErrorDetail>(BODIES_IN_FLIGHT)),
            (
                "422".to_owned(),
                answer::<HTTPValidationError>(UNPROCESSABLE),
            ),
            ("500".to_owned(), answer::<ErrorDetail>(INTERNAL)),
        ])
    }
}

/// What a sandbox-scoped route (authenticated by the sandbox's session key, issue 21) may
/// answer besides its own: 401 (no or unknown session key, or the sandbox is not running), 403
/// (the key of another sandbox), 422, 500.
pub struct SandboxSessionErrors;

impl IntoResponses for SandboxSessionErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "401".to_owned(),
                answer::<ErrorDetail>("No or unknown session key, or the sandbox is not running"),
            ),
            (
                "403".to_owned(),
                answer::<ErrorDetail>("Session API key does not match sandbox"),
            ),
            (
                "422".to_owned(),
                answer::<HTTPValidationError>(UNPROCESSABLE),
            ),
            ("500".to_owned(), answer::<ErrorDetail>(INTERNAL)),
        ])
    }
}

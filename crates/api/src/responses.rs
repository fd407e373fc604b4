//! The OpenAPI answers many operations share, described once: an operation lists its own
//! answers and one of these sets; an answer it lists after the set overrides the set's
//! description of that status (the document lists statuses in order either way).

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, ToSchema};

use crate::dto::{ErrorDetail, HTTPValidationError};

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

/// What an agent-server webhook (authenticated by a sandbox session key) may answer besides
/// its own: 401, 422, 500.
pub struct SessionKeyErrors;

impl IntoResponses for SessionKeyErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "401".to_owned(),
                answer::<ErrorDetail>("Missing or invalid session key"),
            ),
            (
                "422".to_owned(),
                answer::<HTTPValidationError>(UNPROCESSABLE),
            ),
            ("500".to_owned(), answer::<ErrorDetail>(INTERNAL)),
        ])
    }
}

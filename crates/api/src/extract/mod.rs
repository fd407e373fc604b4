//! Extractors: the caller of a user-facing route ([`Caller`]: API key → principal → effective
//! organization), the caller of an agent-server webhook ([`SandboxCaller`]: session key →
//! sandbox), bodies ([`RawBody`], read under the server's [`BodyLimits`]) and query strings
//! ([`QueryPairs`]: batch ids, paging) and path ids ([`path_uuid`], [`conversation_id`]),
//! with FastAPI-shaped 422s; every handler that reads them uses these. Authentication runs from the headers before any
//! body is read and before any path or query value is judged, so an unauthenticated caller
//! neither makes the server hold a body nor learns anything from 422s (API.md).

mod body;
mod body_limits;
mod caller;
mod headers;
mod query;
mod sandbox_caller;

pub use body::{
    Body, DEFAULT_BODY_LIMIT, RawBody, WEBHOOK_BODY_LIMIT, parse_json_body, parse_max_in_flight,
};
pub(crate) use body_limits::RATE_CHECK_EVERY;
pub use body_limits::{
    BodyGate, BodyLimits, DEFAULT_BODY_MIN_RATE, DEFAULT_BODY_READ_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES_IN_FLIGHT, MIN_RATE_GRACE,
};
pub use caller::Caller;
pub use headers::{
    ACCESS_TOKEN_HEADER, ORG_HEADER, SESSION_KEY_HEADER, presented_key, requested_org,
};
pub use query::{QueryPairs, conversation_id, path_uuid};
pub use sandbox_caller::SandboxCaller;

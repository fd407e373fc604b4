//! Extractors: the caller of a user-facing route ([`Caller`]: API key → principal → effective
//! organization), the caller of an agent-server webhook ([`SandboxCaller`]: session key →
//! sandbox), bodies ([`RawBody`]) and query strings ([`QueryPairs`]), with FastAPI-shaped 422s.
//! Authentication runs before any body, path or query value is judged, so an unauthenticated
//! caller learns nothing from 422s (API.md).

mod body;
mod caller;
mod query;
mod sandbox_caller;

pub use body::{DEFAULT_BODY_LIMIT, RawBody, parse_json_body};
pub use caller::{ACCESS_TOKEN_HEADER, Caller, ORG_HEADER, presented_key, requested_org};
pub use query::{QueryPairs, path_uuid};
pub use sandbox_caller::{SESSION_KEY_HEADER, SandboxCaller};

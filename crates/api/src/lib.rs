//! # switchboard-api
//!
//! The HTTP API as an actix-web app: [`create_app`] builds it over an [`AppState`] (the domain
//! services, metrics, pool statistics), so tests and the binary run the same app. One handler
//! module per resource ([`health`], [`org_settings`], [`keys`], [`users`], [`events`],
//! [`webhooks`], [`sandbox_specs`], [`sandboxes`]) registers its routes and their OpenAPI paths in one declaration, collected by
//! [`routes`]. Sandbox traffic is proxied by [`sandbox_proxy`] under `/sandboxes/…`; browsers
//! of other origins are answered by [`cors`]. Handlers authenticate from the headers first ([`extract::Caller`]:
//! `X-Access-Token` or `Authorization: Bearer`; [`extract::SandboxCaller`]:
//! `X-Session-API-Key`) and resolve the effective organization, and only then read bodies
//! (under [`extract::BodyLimits`]) and validate them; failures map to statuses in one
//! table ([`error::ApiError`]), 422s in FastAPI's shape. Blocking domain work runs on actix's
//! blocking pool, never on the async executor. [`server`] runs the app for the binary (and
//! `/metrics` on a listener of its own) until a signal stops it.

pub mod agent_profiles;
pub mod app;
pub mod app_conversations;
pub mod cors;
pub mod dto;
pub mod error;
pub mod events;
pub mod extract;
pub mod health;
pub mod keys;
pub mod live;
pub mod llm_catalog;
pub mod llm_profiles;
pub mod llm_relay;
pub mod member_sockets;
pub mod members;
pub mod metrics;
pub mod named_profiles;
pub mod openapi;
pub mod org_defaults;
pub mod org_profiles;
pub mod org_settings;
pub mod organizations;
pub mod rate_limit;
pub mod reads;
pub mod responses;
pub mod routes;
pub mod sandbox_proxy;
pub mod sandbox_secrets;
pub mod sandbox_specs;
pub mod sandboxes;
pub mod server;
pub mod server_details;
pub mod service_keys;
pub mod sign_in;
pub mod skills;
pub mod state;
pub mod user_secrets;
pub mod user_settings;
pub mod users;
pub mod web_client;
pub mod webhooks;
pub mod zip;

pub use app::create_app;
pub use metrics::{DiskStats, DiskStatsFn, Metrics, PoolStats, PoolStatsFn};
pub use state::{AppState, DEFAULT_DB_CONCURRENCY};

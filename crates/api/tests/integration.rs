//! The API's integration tests, one binary: each module below was a test target of its own
//! (one link of the whole app per file). The real app on a loopback port over real SQLite files and
//! a real PostgreSQL (`common`). Run one file's tests with `cargo test -p switchboard-api --test
//! integration <module>::`.

#[macro_use]
mod common;

#[path = "agent_canvas/main.rs"]
mod agent_canvas;
#[path = "agent_canvas_catalogs.rs"]
mod agent_canvas_catalogs;
#[path = "app_conversations_agent.rs"]
mod app_conversations_agent;
#[path = "app_conversations_kept.rs"]
mod app_conversations_kept;
#[path = "app_conversations_read.rs"]
mod app_conversations_read;
#[path = "app_conversations_secrets.rs"]
mod app_conversations_secrets;
#[path = "app_conversations_start/main.rs"]
mod app_conversations_start;
#[path = "authz_matrix.rs"]
mod authz_matrix;
#[path = "automation_service/main.rs"]
mod automation_service;
#[path = "body_limits.rs"]
mod body_limits;
#[path = "compatibility.rs"]
mod compatibility;
#[path = "concurrency.rs"]
mod concurrency;
#[path = "events_agent_server.rs"]
mod events_agent_server;
#[path = "events_cursor.rs"]
mod events_cursor;
#[path = "events_ingest_and_search.rs"]
mod events_ingest_and_search;
#[path = "events_invalid.rs"]
mod events_invalid;
#[path = "id_oracles.rs"]
mod id_oracles;
#[path = "invalid_utf8.rs"]
mod invalid_utf8;
#[path = "keys_and_me/main.rs"]
mod keys_and_me;
#[path = "live_delivery/main.rs"]
mod live_delivery;
#[path = "live_sockets_per_member.rs"]
mod live_sockets_per_member;
#[path = "llm_relay.rs"]
mod llm_relay;
#[path = "mcp_masking.rs"]
mod mcp_masking;
#[path = "members_api/main.rs"]
mod members_api;
#[path = "nul_inputs.rs"]
mod nul_inputs;
#[path = "openapi.rs"]
mod openapi;
#[path = "permissions/main.rs"]
mod permissions;
#[path = "repository_sources.rs"]
mod repository_sources;
#[path = "sandbox_proxy/main.rs"]
mod sandbox_proxy;
#[path = "sandbox_quotas.rs"]
mod sandbox_quotas;
#[path = "sandboxes_access.rs"]
mod sandboxes_access;
#[path = "sandboxes_lifecycle.rs"]
mod sandboxes_lifecycle;
#[path = "settings_effective_llm.rs"]
mod settings_effective_llm;
#[path = "settings_fields.rs"]
mod settings_fields;
#[path = "settings_smoke.rs"]
mod settings_smoke;
#[path = "settings_validation/main.rs"]
mod settings_validation;
#[path = "sign_in/main.rs"]
mod sign_in;

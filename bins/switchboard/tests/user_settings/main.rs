//! Each user's own LLM, settings and secrets (issue 21), through the real binary on both
//! backends with the stand-in agent server: the settings, profiles and secrets routes and
//! their validation; the 401/403/404/409 matrix (another member, another organization, a
//! revoked key, the session key of another sandbox); the sandbox's reads of its owner's
//! secrets; `users/me?expose_secrets=true`; no value set in any other answer, in the server's
//! log, or in the database's dump (sealed at rest); and what a conversation start takes (the
//! LLM by precedence, MCP, confirmation, the user's secrets) as the agent server received it.
//!
//! One server per backend lives through every step in turn (`everything`); one file per step:
//! `rig.rs` (the server, its three callers, the values set), `settings.rs` (settings, profiles
//! and their validation), `secrets.rs` (secrets and provider tokens), `access.rs` (the auth
//! matrix, the sandbox's reads, the SDK's reads), `starts.rs` (what a start takes),
//! `clone.rs` (the clone with the user's provider token, from a git server that requires it),
//! `org_defaults.rs` (the organization's defaults and the start's precedence over them),
//! `sealed.rs` (no value anywhere else), `rotation.rs` (`switchboard secrets rotate-key`),
//! `relayed.rs` (a start with a key not the member's own: the LLM pass-through, issue 38).

mod access;
mod clone;
use crate::common;
mod org_defaults;
mod relayed;
mod rig;
mod rotation;
mod sealed;
mod secrets;
mod settings;
mod starts;

use access::{auth_matrix, sandbox_reads, sdk_reads_the_members_settings};
use clone::clones_with_the_users_token;
use common::EndProcessesUnder;
use org_defaults::org_defaults_reach_members;
use rig::rig;
use rotation::rotation;
use sealed::every_value_stays_sealed;
use secrets::secrets_and_provider_tokens;
use settings::settings_profiles_and_validation;
use starts::starts_take_the_users_settings;
use switchboard_testkit::Backend;

fn everything(backend: Backend) {
    let mut r = rig(backend);
    let _sandboxes = EndProcessesUnder(r._data.path().to_path_buf());
    settings_profiles_and_validation(&r, backend);
    secrets_and_provider_tokens(&r, backend);
    auth_matrix(&r, backend);
    let (mine, session, url) = sandbox_reads(&r, backend);
    sdk_reads_the_members_settings(&r, backend);
    starts_take_the_users_settings(&r, backend, (&mine, &url));
    clones_with_the_users_token(&r, backend, (&mine, &session, &url));
    org_defaults_reach_members(&r, backend);
    every_value_stays_sealed(&r, backend);
    rotation(&mut r, backend, (&mine, &session));
}

#[test]
fn user_settings_sqlite() {
    everything(Backend::Sqlite);
}

#[test]
fn user_settings_postgres() {
    everything(Backend::Postgres);
}

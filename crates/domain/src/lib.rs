//! # switchboard-domain
//!
//! The rules of Switchboard, without web or database types, a module per resource:
//! [`identity`] (organizations, users, the effective organization of API.md, API keys
//! generated from a CSPRNG and stored as SHA-256 only, sandbox session keys), roles and
//! permissions (one table, [`Role::grants`]), [`settings`] (the organization app settings with
//! every rule of the reference `openhands-org-settings.md` §1), [`sandboxes`],
//! [`conversations`] (run state), [`events`] (ingestion, run-state effects, search) and the
//! [`cursor`] codec; the 422 builders of [`validation`]; and the [`ports`], one per aggregate,
//! that a storage adapter implements.
//!
//! Services live in [`services`], one per resource, handed out by [`Switchboard`]; their
//! methods block on storage, so async callers run them on a blocking pool. Failures are
//! [`DomainError`]s, mapped to HTTP by the API crate alone. The domain starts no thread and
//! no task: background work is described as [`jobs::Job`]s, which the binary's supervisor runs.

pub mod agent_profile_body;
pub mod agent_profile_fields;
pub mod agent_profiles;
pub mod batch;
pub mod conversations;
pub mod cursor;
mod error;
pub mod event_quota;
pub mod events;
pub mod identity;
mod ids;
pub mod jobs;
pub mod live_frames;
pub mod llm_allow;
pub mod llm_catalog;
pub mod llm_relay;
pub mod named_profiles;
pub mod org_defaults;
pub mod org_profiles;
mod permissions;
pub mod ports;
pub mod sandboxes;
pub mod services;
pub mod settings;
pub mod skills;
pub mod time_input;
pub mod typed_body;
pub mod user_secrets;
pub mod user_settings;
pub mod validation;

pub use error::{DomainError, StorageError};
pub use identity::api_keys::{ApiKeyView, IssuedKey};
pub use identity::{OrgContext, Principal};
pub use ids::{
    ApiKeyId, ConversationId, InvalidId, OrgId, SandboxId, UUID_PATTERN, UserId, parse_uuid,
};
pub use permissions::{Permission, Role};
pub use services::{Bootstrapped, MeView, Switchboard};

//! # switchboard-domain
//!
//! The rules of Switchboard, without web or database types: organizations, users,
//! memberships, roles and permissions (one table, [`Role::grants`]); API keys (generated from a
//! CSPRNG, stored as SHA-256 only); the effective-organization resolution of API.md; the
//! organization app settings with every rule of the reference `openhands-org-settings.md` §1;
//! and the ports ([`ports`]) a storage adapter implements.
//!
//! Services live on [`Switchboard`]; their methods block on storage, so async callers run them
//! on a blocking pool. Failures are [`DomainError`]s, mapped to HTTP by the API crate alone.

pub mod api_keys;
mod error;
pub mod events;
mod ids;
mod permissions;
pub mod ports;
pub mod sandbox_runtime;
pub mod sandbox_specs;
mod service;
pub mod settings;
pub mod time_input;

pub use error::{DomainError, StorageError};
pub use ids::{ApiKeyId, ConversationId, InvalidId, OrgId, SandboxId, UserId, parse_uuid};
pub use permissions::{Permission, Role};
pub use service::{
    ApiKeyView, Bootstrapped, IssuedKey, MeView, OrgContext, Principal, Switchboard,
};

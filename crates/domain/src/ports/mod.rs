//! Ports: what the domain needs from storage, one trait per aggregate, so a component (and
//! its test double) implements only what it uses. Implemented by the storage crate for SQLite
//! and PostgreSQL; calls block, so async callers run them on a blocking pool.

pub mod agent_profiles;
pub mod conversations;
pub mod events;
pub mod identity;
pub mod llm_relay;
pub mod members;
pub mod org_defaults;
pub mod org_settings;
pub mod pool;
pub mod sandboxes;
pub mod sealed;
pub mod sign_in;
pub mod url_ports;
pub mod user_secrets;
pub mod user_settings;

pub use agent_profiles::{AgentProfileEdit, AgentProfileStore};
pub use conversations::ConversationStore;
pub use conversations::app::{AppConversationStore, DeletedConversation};
pub use conversations::budgets::BudgetStore;
pub use conversations::pending::PendingMessageStore;
pub use conversations::start_tasks::{
    JoinSandbox, StaleStarts, StartClaim, StartTaskQuery, StartTaskStore, StartedConversation,
};
pub use events::{Append, AppendObserver, EventPayload, EventStore};
pub use identity::{IdentityStore, KeyLookup, OrgMembership};
pub use llm_relay::LlmRelayStore;
pub use members::{MemberChange, MemberPosition, MemberQuery, MemberRow, MemberStore, UserRemoval};
pub use org_defaults::{OrgDefaultsEdit, OrgDefaultsStore};
pub use org_settings::{OrgSettingsStore, SettingsWrite};
pub use pool::PoolUsage;
pub use sandboxes::{
    ResumeSandbox, RunningLimit, SandboxQuery, SandboxStore, SandboxUpdate, StartOutcome,
    StartSandbox, StartedSandbox, WarmClaim,
};
pub use sealed::{Reseal, SealedRef, SealedStore};
pub use sign_in::{IdentityLink, NewDeviceGrant, NewWebSession, SignInStore};
pub use url_ports::UrlPortStore;
pub use user_secrets::{SecretUpdate, UserSecretStore};
pub use user_settings::{SettingsEdit, UserSettingsStore};

use crate::error::StorageError;

/// Everything the domain needs of storage, in one object (what the binary wires in; each
/// service takes only the ports it uses).
pub trait Store:
    IdentityStore
    + MemberStore
    + SignInStore
    + OrgSettingsStore
    + SandboxStore
    + ConversationStore
    + BudgetStore
    + EventStore
    + StartTaskStore
    + AppConversationStore
    + PendingMessageStore
    + UserSettingsStore
    + UserSecretStore
    + OrgDefaultsStore
    + SealedStore
    + AgentProfileStore
    + LlmRelayStore
{
    /// Whether the database answers and its migrations are applied (for `/ready`).
    fn ready(&self) -> Result<(), StorageError>;
}

//! Every value sealed with the installation key, for `switchboard secrets rotate-key`: the
//! store walks each sealed column in one write transaction and replaces each value by what the
//! domain answers for it.

use crate::conversations::start_tasks::StartTaskId;
use crate::error::DomainError;
use crate::ids::{OrgId, SandboxId, UserId};
use crate::org_defaults::OrgBinding;
use crate::user_settings::Binding;

/// Which record a sealed value belongs to (its binding follows from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedRef {
    /// A sandbox's session key (`sandboxes.session_key_sealed`).
    SandboxSessionKey(SandboxId),
    /// A start task's sealed request (`start_tasks.secrets_sealed`), by task id.
    StartTask(StartTaskId),
    /// A value of a user's settings or secrets in an organization.
    User(Binding, OrgId, UserId),
    /// A value of an organization's defaults.
    Org(OrgBinding, OrgId),
}

/// The replacement of one sealed value: given where it belongs and the value, the value
/// sealed anew. An error ends the walk and rolls everything back.
pub type Reseal<'a> = &'a mut dyn FnMut(SealedRef, &str) -> Result<String, DomainError>;

/// The stores holding sealed values.
pub trait SealedStore: Send + Sync {
    /// Replaces every sealed value by `reseal`'s answer in one write transaction: all or
    /// nothing. Returns how many values were replaced.
    ///
    /// # Errors
    /// `reseal`'s first error (nothing written), or a storage failure.
    fn reseal_all(&self, reseal: Reseal<'_>) -> Result<u64, DomainError>;
}

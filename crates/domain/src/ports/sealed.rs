//! Every value sealed with the installation key, for `switchboard secrets rotate-key`: the
//! store walks each sealed column in one write transaction and replaces each value by what the
//! domain answers for it. And the installation's record naming that key
//! ([`crate::identity::installation`]).

use crate::conversations::start_tasks::StartTaskId;
use time::OffsetDateTime;

use crate::error::DomainError;
use crate::identity::installation::Installation;
use crate::ids::{ConversationId, OrgId, SandboxId, UserId};
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
    /// The key of an LLM pass-through route (`llm_routes.api_key_sealed`), by its
    /// conversation (issue 38).
    LlmRoute(ConversationId),
}

/// The replacement of one sealed value: given where it belongs and the value, the value
/// sealed anew. An error ends the walk and rolls everything back.
pub type Reseal<'a> = &'a mut dyn FnMut(SealedRef, &str) -> Result<String, DomainError>;

/// The stores holding sealed values.
pub trait SealedStore: Send + Sync {
    /// Replaces every sealed value by `reseal`'s answer in one write transaction: all or
    /// nothing, with the installation record's key fingerprint set to `new_fingerprint` (when
    /// given) in the same transaction (when the record exists). Returns how many values were
    /// replaced.
    ///
    /// # Errors
    /// `reseal`'s first error (nothing written), or a storage failure.
    fn reseal_all(
        &self,
        reseal: Reseal<'_>,
        new_fingerprint: Option<&str>,
    ) -> Result<u64, DomainError>;

    /// The installation's record, `None` before the first server or command made it.
    ///
    /// # Errors
    /// A storage failure.
    fn installation(&self) -> Result<Option<Installation>, DomainError>;

    /// Writes `candidate` when no record exists; returns the record that holds afterwards
    /// (`candidate`, or the one another process wrote first).
    ///
    /// # Errors
    /// A storage failure.
    fn claim_installation(&self, candidate: &Installation) -> Result<Installation, DomainError>;

    /// A restored copy becomes an installation of its own, in one write transaction: the
    /// record gets `new_id` (remembering the old id as `restored_from`, and `at`); every
    /// sandbox record a runtime made is detached from what it ran (its handle, agent server
    /// URL and listener port cleared, its status `MISSING`, so no runtime of the copy finds,
    /// adopts or stops the original's processes, containers or pods); the warm pool's unclaimed
    /// sandboxes are deleted. Registered (`external`) sandboxes are left as they are. Returns
    /// the record and how many sandbox records were detached.
    ///
    /// # Errors
    /// No record (a database no server ever opened), or a storage failure.
    fn detach_restored(
        &self,
        new_id: &str,
        at: OffsetDateTime,
    ) -> Result<(Installation, u64), DomainError>;
}

//! `switchboard secrets rotate-key`: every value sealed with the installation key opened with
//! the current key and sealed again with a new one, under the same binding, in one
//! transaction of the store ([`SealedStore::reseal_all`]): sandboxes' session keys, start
//! tasks' sealed requests, users' settings (LLM key, search key, MCP configuration, each
//! profile's key), custom secrets, git provider tokens, and organizations' defaults (LLM key,
//! search key, MCP configuration).

use crate::error::{DomainError, StorageError};
use crate::identity::sealing::Sealer;
use crate::ports::{SealedRef, SealedStore};

/// The binding (associated data) of a sealed value: the one its writer sealed it for.
pub fn binding_of(what: SealedRef) -> String {
    match what {
        SealedRef::SandboxSessionKey(id) => id.to_string(),
        SealedRef::StartTask(id) => id.to_string(),
        SealedRef::User(b, org, user) => b.of(org, user),
        SealedRef::Org(b, org) => b.of(org),
        SealedRef::LlmRoute(conversation) => super::llm_relay::binding(conversation),
    }
}

/// Re-seals every sealed value of `store` from `old` to `new`, all or nothing. Returns how
/// many values were re-sealed.
///
/// # Errors
/// A value that `old` does not open (another key, altered, or malformed) is a storage error
/// naming the record, never the value, and nothing is written; a storage failure.
pub fn rotate_sealed<S: SealedStore + ?Sized>(
    store: &S,
    old: &Sealer,
    new: &Sealer,
) -> Result<u64, DomainError> {
    let reseal = &mut |what, sealed: &str| {
        let bound = binding_of(what);
        let plain = old.open(sealed, &bound).map_err(|e| {
            DomainError::Storage(StorageError::Other(
                format!("a sealed value of {what:?} does not open with the current key: {e}")
                    .into(),
            ))
        })?;
        Ok(new.seal(&plain, &bound))
    };
    store.reseal_all(reseal, Some(new.fingerprint()))
}

//! Sandboxes.

use crate::error::StorageError;
use crate::identity::session_keys::SessionKeyHash;
use crate::sandboxes::Sandbox;

/// Sandboxes and their session keys.
pub trait SandboxStore: Send + Sync {
    /// Registers a sandbox with its hashed session key.
    fn create_sandbox(
        &self,
        sandbox: &Sandbox,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError>;
    /// The sandbox whose session key has this hash.
    fn sandbox_by_key_hash(&self, hash: &SessionKeyHash) -> Result<Option<Sandbox>, StorageError>;
}

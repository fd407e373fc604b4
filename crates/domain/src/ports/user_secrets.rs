//! Each user's custom secrets and git provider tokens in an organization (issue 21).

use time::OffsetDateTime;

use crate::error::StorageError;
use crate::ids::{OrgId, UserId};
use crate::user_secrets::{SecretMeta, StoredProviderToken, StoredSecret};

/// Outcome of renaming or describing a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretUpdate {
    /// Done.
    Updated,
    /// No secret of that name.
    NotFound,
    /// Another secret has the new name; nothing written.
    NameTaken,
}

/// Users' custom secrets and provider tokens; values stay sealed here.
pub trait UserSecretStore: Send + Sync {
    /// The user's secrets (names and descriptions), sorted by name (bytewise).
    fn secret_metas(&self, org: OrgId, user: UserId) -> Result<Vec<SecretMeta>, StorageError>;

    /// One secret with its sealed value.
    fn user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
    ) -> Result<Option<StoredSecret>, StorageError>;

    /// Every secret with its sealed value, sorted by name.
    fn user_secrets(&self, org: OrgId, user: UserId) -> Result<Vec<StoredSecret>, StorageError>;

    /// Creates or replaces the secret of that name (OpenHands' `POST /api/v1/secrets`),
    /// unless the user already has `max` other secrets: then nothing is written and the
    /// answer is `false`.
    fn put_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        secret: &StoredSecret,
        max: usize,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError>;

    /// Renames and re-describes a secret, its value kept, in one transaction.
    fn update_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
        change: &SecretMeta,
        now: OffsetDateTime,
    ) -> Result<SecretUpdate, StorageError>;

    /// Deletes a secret; whether there was one.
    fn delete_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
    ) -> Result<bool, StorageError>;

    /// The user's provider tokens (sealed), sorted by provider.
    fn provider_tokens(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Vec<StoredProviderToken>, StorageError>;

    /// Replaces the user's provider tokens with `tokens` in one transaction (OpenHands: the
    /// set sent replaces the set stored); an entry without a token keeps the token stored for
    /// its provider, if any.
    fn replace_provider_tokens(
        &self,
        org: OrgId,
        user: UserId,
        tokens: &[StoredProviderToken],
        now: OffsetDateTime,
    ) -> Result<(), StorageError>;

    /// Deletes every provider token of the user.
    fn delete_provider_tokens(&self, org: OrgId, user: UserId) -> Result<(), StorageError>;
}

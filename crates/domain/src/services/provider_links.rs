//! The LLM provider connections a member's LLM profiles and settings name (issue 25): each
//! organization's, stored on its defaults ([`crate::org_profiles`]), read where a member's
//! LLM is read ([`crate::services::UserSettingsService`]).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::DomainError;
use crate::identity::sealing::Sealer;
use crate::ids::OrgId;
use crate::org_defaults::OrgBinding;
use crate::org_profiles::{StoredConnection, through_connection};
use crate::ports::OrgDefaultsStore;
use crate::user_settings::own_llm::OwnLlm;
use crate::user_settings::profiles::connection_id;

/// The organizations' provider connections, as LLM configurations name them.
#[derive(Clone)]
pub(crate) struct ProviderLinks {
    store: Arc<dyn OrgDefaultsStore>,
}

impl ProviderLinks {
    /// Over the organizations' defaults.
    pub(crate) fn new(store: Arc<dyn OrgDefaultsStore>) -> Self {
        ProviderLinks { store }
    }

    /// The provider connections of `org`.
    ///
    /// # Errors
    /// Storage.
    pub(crate) fn connections(&self, org: OrgId) -> Result<Vec<StoredConnection>, DomainError> {
        Ok(self
            .store
            .org_defaults(org)?
            .map(|r| r.provider_connections)
            .unwrap_or_default())
    }

    /// `llm`, read from `config` (whose owner `owner` names), through the provider connection
    /// of `org` that `config` names, if any ([`through_connection`]: the connection's base URL
    /// and key, opened with `sealer`; or `broken` when it was deleted). Without a sealer no
    /// key is opened.
    ///
    /// # Errors
    /// A key that does not open (another installation key); storage.
    pub(crate) fn linked(
        &self,
        llm: OwnLlm,
        config: &Map<String, Value>,
        org: OrgId,
        owner: &str,
        sealer: Option<&Sealer>,
    ) -> Result<OwnLlm, DomainError> {
        if connection_id(config).is_none() {
            return Ok(llm);
        }
        through_connection(llm, config, &self.connections(org)?, owner, |sealed| {
            let Some(sealer) = sealer else {
                return Ok(None);
            };
            let binding = OrgBinding::ConnectionApiKey.of(org);
            sealer.open(sealed, &binding).map(Some).map_err(|e| {
                DomainError::Storage(crate::StorageError::Other(
                    format!("a provider connection's key of organization {org} does not open: {e}")
                        .into(),
                ))
            })
        })
    }
}

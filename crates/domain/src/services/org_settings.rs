//! Organization app settings (reference `openhands-org-settings.md` §1.6).

use std::sync::Arc;

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::permissions::Permission;
use crate::ports::{OrgSettingsStore, SettingsWrite};
use crate::settings::{OrgAppSettings, SettingsUpdate, duplicate_marketplace_names};
use crate::time_input::now_micros;

/// Reads and updates the effective organization's app settings.
#[derive(Clone)]
pub struct OrgSettingsService {
    settings: Arc<dyn OrgSettingsStore>,
}

impl OrgSettingsService {
    /// The service over the settings store.
    pub fn new(settings: Arc<dyn OrgSettingsStore>) -> Self {
        OrgSettingsService { settings }
    }

    /// The effective organization's app settings (`manage_application_settings`).
    ///
    /// # Errors
    /// 403 without the permission, 404 when the organization is gone.
    pub fn org_settings(&self, ctx: &OrgContext) -> Result<OrgAppSettings, DomainError> {
        ctx.require(Permission::ManageApplicationSettings)?;
        self.settings
            .org_settings(ctx.org.id)?
            .ok_or(DomainError::OrgNotFound)
    }

    /// Applies a validated update (reference §1.6 from rule 4 on): `edit_org_settings` when
    /// marketplaces or `llm_monthly_budget` are sent (the monthly budget bounds the whole
    /// organization's spending: owners and admins only; issue 38); an empty body returns the current settings; the version check
    /// (409) before the duplicate-name check (400); then one conditional write.
    ///
    /// # Errors
    /// [`DomainError::PermissionDenied`], [`DomainError::MissingPermission`],
    /// [`DomainError::OrgNotFound`], [`DomainError::StaleSettings`],
    /// [`DomainError::DuplicateMarketplaceNames`], or a storage failure.
    pub fn update_org_settings(
        &self,
        ctx: &OrgContext,
        update: SettingsUpdate,
    ) -> Result<OrgAppSettings, DomainError> {
        ctx.require(Permission::ManageApplicationSettings)?;
        if (update.change.registered_marketplaces.is_some()
            || update.change.llm_monthly_budget.is_some())
            && !ctx.role.grants(Permission::EditOrgSettings)
        {
            return Err(DomainError::MissingPermission(Permission::EditOrgSettings));
        }
        let org_id = ctx.org.id;
        if !update.has_any_field {
            return self
                .settings
                .org_settings(org_id)?
                .ok_or(DomainError::OrgNotFound);
        }
        let dups = update
            .change
            .registered_marketplaces
            .as_deref()
            .map(duplicate_marketplace_names)
            .unwrap_or_default();
        if update.change.is_empty() || !dups.is_empty() {
            // Nothing to write (or nothing writable): the version check still applies.
            let current = self
                .settings
                .org_settings(org_id)?
                .ok_or(DomainError::OrgNotFound)?;
            if let Some(expected) = update.last_known_updated_at
                && expected != current.updated_at
            {
                return Err(DomainError::StaleSettings {
                    org_id,
                    expected,
                    actual: current.updated_at,
                });
            }
            if !dups.is_empty() {
                return Err(DomainError::DuplicateMarketplaceNames(dups));
            }
            return Ok(current);
        }
        match self.settings.update_org_settings(
            org_id,
            &update.change,
            update.last_known_updated_at,
            now_micros(),
        )? {
            SettingsWrite::Written(s) => Ok(s),
            SettingsWrite::NotFound => Err(DomainError::OrgNotFound),
            SettingsWrite::Stale { actual } => Err(DomainError::StaleSettings {
                org_id,
                expected: update.last_known_updated_at.unwrap_or(actual),
                actual,
            }),
        }
    }
}

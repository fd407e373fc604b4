//! Each user's agent profiles in the effective organization (issue 25; the agent server's
//! `agent_profiles_router.py`, which OpenHands' cloud serves as `/api/agent-profiles`): list,
//! read, save, delete, rename, activate. A member reads and changes only their own. Activating
//! only moves the pointer (the list's `active_agent_profile_id`); a start that names
//! `agent_profile_id` is what applies a profile ([`crate::services::PersonalSettings`]).

use std::sync::Arc;

use uuid::Uuid;

use crate::agent_profiles::{
    AGENT_PROFILES, AgentProfileDetailResponse, AgentProfileInput, AgentProfileListResponse,
    AgentProfileSet, StoredAgentProfile,
};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::named_profiles::Collection;
use crate::ports::AgentProfileStore;
use crate::time_input::now_micros;

/// Users' agent profiles.
#[derive(Clone)]
pub struct AgentProfileService {
    store: Arc<dyn AgentProfileStore>,
}

impl AgentProfileService {
    /// The service over its store.
    pub fn new(store: Arc<dyn AgentProfileStore>) -> Self {
        AgentProfileService { store }
    }

    /// The caller's set.
    ///
    /// # Errors
    /// Storage.
    pub fn set(&self, ctx: &OrgContext) -> Result<AgentProfileSet, DomainError> {
        Ok(self
            .store
            .agent_profiles(ctx.org.id, ctx.principal.user_id)?)
    }

    /// The set of `user` in `org` (for a start).
    ///
    /// # Errors
    /// Storage.
    pub(crate) fn set_of(
        &self,
        org: crate::ids::OrgId,
        user: crate::ids::UserId,
    ) -> Result<AgentProfileSet, DomainError> {
        Ok(self.store.agent_profiles(org, user)?)
    }

    /// `GET /api/agent-profiles`: `{profiles: [{id, name, agent_kind, revision,
    /// llm_profile_ref, mcp_server_refs}], active_agent_profile_id}`, by name. Nothing is
    /// seeded: with none, a start without `agent_profile_id` uses the settings.
    ///
    /// # Errors
    /// Storage.
    pub fn list(&self, ctx: &OrgContext) -> Result<AgentProfileListResponse, DomainError> {
        Ok(self.set(ctx)?.list())
    }

    /// `GET /api/agent-profiles/{name}`: `{name, profile}`, the whole profile.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] (404); storage.
    pub fn get(
        &self,
        ctx: &OrgContext,
        name: &str,
    ) -> Result<AgentProfileDetailResponse, DomainError> {
        let set = self.set(ctx)?;
        let p = set
            .by_name(name)
            .ok_or_else(|| AGENT_PROFILES.not_found(name))?;
        Ok(AgentProfileDetailResponse {
            name: name.to_owned(),
            profile: p.document(),
        })
    }

    /// `POST /api/agent-profiles/{name}`: stores `input` under `name`, replacing a namesake
    /// (its id kept, its revision bumped) or creating one (a new id, revision 0).
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] (409) for a new name past
    /// [`MAX_AGENT_PROFILES`](crate::agent_profiles::MAX_AGENT_PROFILES);
    /// storage.
    pub fn save(
        &self,
        ctx: &OrgContext,
        name: &str,
        input: AgentProfileInput,
    ) -> Result<(), DomainError> {
        self.store.update_agent_profiles(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |set| {
                let existing = AGENT_PROFILES
                    .room_for(&set.profiles, name)?
                    .map(|p| (p.id, p.revision));
                let (id, revision) = existing.map_or((Uuid::new_v4(), 0), |(id, r)| (id, r + 1));
                Collection::put(
                    &mut set.profiles,
                    StoredAgentProfile {
                        id,
                        name: name.to_owned(),
                        revision,
                        agent_kind: input.agent_kind.clone(),
                        body: input.body.clone(),
                    },
                );
                Ok(true)
            },
        )?;
        Ok(())
    }

    /// `DELETE /api/agent-profiles/{name}`: idempotent; deleting the active one clears the
    /// pointer.
    ///
    /// # Errors
    /// Storage.
    pub fn delete(&self, ctx: &OrgContext, name: &str) -> Result<(), DomainError> {
        self.store.update_agent_profiles(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |set| {
                let Some(removed) = Collection::remove(&mut set.profiles, name) else {
                    return Ok(false);
                };
                if set.active_id == Some(removed.id) {
                    set.active_id = None;
                }
                Ok(true)
            },
        )?;
        Ok(())
    }

    /// `POST /api/agent-profiles/{name}/rename`: id, revision and the pointer kept. Returns
    /// the message (`unchanged (same name)` when the names are equal).
    ///
    /// # Errors
    /// [`DomainError::NotFound`] (404); [`DomainError::AlreadyExists`] (409) when another
    /// profile has `new_name`; storage.
    pub fn rename(
        &self,
        ctx: &OrgContext,
        name: &str,
        new_name: &str,
    ) -> Result<String, DomainError> {
        self.store.update_agent_profiles(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |set| AGENT_PROFILES.rename(&mut set.profiles, name, new_name),
        )?;
        Ok(if name == new_name {
            format!("Agent profile '{name}' unchanged (same name)")
        } else {
            format!("Agent profile '{name}' renamed to '{new_name}'")
        })
    }

    /// `POST /api/agent-profiles/{id}/activate`: points the caller's active profile at the
    /// profile whose id is `id`; nothing else changes.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] (404) when no profile of the caller's has that id; storage.
    pub fn activate(&self, ctx: &OrgContext, id: &str) -> Result<(), DomainError> {
        self.store.update_agent_profiles(
            ctx.org.id,
            ctx.principal.user_id,
            now_micros(),
            &mut |set| {
                let found = set.by_id(id).map(|p| p.id).ok_or_else(|| {
                    DomainError::NotFound(format!("Agent profile with id '{id}' not found"))
                })?;
                if set.active_id == Some(found) {
                    return Ok(false);
                }
                set.active_id = Some(found);
                Ok(true)
            },
        )?;
        Ok(())
    }
}

//! Each user's agent profiles in the effective organization (issue 25; the agent server's
//! `agent_profiles_router.py`, which OpenHands' cloud serves as `/api/agent-profiles`): list,
//! read, save, delete, rename, activate. A member reads and changes only their own. Activating
//! only moves the pointer (the list's `active_agent_profile_id`); a start that names
//! `agent_profile_id` is what applies a profile ([`crate::services::PersonalSettings`]).

use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::agent_profiles::{
    AgentProfileInput, AgentProfileSet, MAX_AGENT_PROFILES, StoredAgentProfile,
};
use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::ports::AgentProfileStore;
use crate::time_input::now_micros;

/// Users' agent profiles.
#[derive(Clone)]
pub struct AgentProfileService {
    store: Arc<dyn AgentProfileStore>,
}

fn not_found(name: &str) -> DomainError {
    DomainError::NotFound(format!("Agent profile '{name}' not found"))
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
    pub fn list(&self, ctx: &OrgContext) -> Result<Value, DomainError> {
        Ok(self.set(ctx)?.list())
    }

    /// `GET /api/agent-profiles/{name}`: `{name, profile}`, the whole profile.
    ///
    /// # Errors
    /// [`DomainError::NotFound`] (404); storage.
    pub fn get(&self, ctx: &OrgContext, name: &str) -> Result<Value, DomainError> {
        let set = self.set(ctx)?;
        let p = set.by_name(name).ok_or_else(|| not_found(name))?;
        Ok(json!({"name": name, "profile": p.document()}))
    }

    /// `POST /api/agent-profiles/{name}`: stores `input` under `name`, replacing a namesake
    /// (its id kept, its revision bumped) or creating one (a new id, revision 0).
    ///
    /// # Errors
    /// [`DomainError::AlreadyExists`] (409) for a new name past [`MAX_AGENT_PROFILES`];
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
                let existing = set.by_name(name).map(|p| (p.id, p.revision));
                if existing.is_none() && set.profiles.len() >= MAX_AGENT_PROFILES {
                    return Err(DomainError::AlreadyExists(format!(
                        "Agent profile limit reached ({MAX_AGENT_PROFILES}). Delete a profile before saving a new one."
                    )));
                }
                let (id, revision) = existing.map_or((Uuid::new_v4(), 0), |(id, r)| (id, r + 1));
                set.profiles.retain(|p| p.name != name);
                set.profiles.push(StoredAgentProfile {
                    id,
                    name: name.to_owned(),
                    revision,
                    agent_kind: input.agent_kind.clone(),
                    body: input.body.clone(),
                });
                set.profiles.sort_by(|a, b| a.name.cmp(&b.name));
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
                let Some(id) = set.by_name(name).map(|p| p.id) else {
                    return Ok(false);
                };
                set.profiles.retain(|p| p.id != id);
                if set.active_id == Some(id) {
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
            &mut |set| {
                if set.by_name(name).is_none() {
                    return Err(not_found(name));
                }
                if name == new_name {
                    return Ok(false);
                }
                if set.by_name(new_name).is_some() {
                    return Err(DomainError::AlreadyExists(format!(
                        "Agent profile '{new_name}' already exists"
                    )));
                }
                for p in &mut set.profiles {
                    if p.name == name {
                        new_name.clone_into(&mut p.name);
                    }
                }
                set.profiles.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(true)
            },
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

//! Each member's agent profiles ([`AgentProfileStore`], issue 25): the collection
//! [`Place::member_agents`] of `named_profiles` ([`super::named_profiles`]), the active one
//! flagged. An edit reads the member's rows under a lock on their membership row, and writes
//! back only the rows that changed.

use switchboard_domain::agent_profiles::{AgentProfileSet, StoredAgentProfile};
use switchboard_domain::ports::{AgentProfileEdit, AgentProfileStore};
use switchboard_domain::{DomainError, OrgId, StorageError, UserId};
use time::OffsetDateTime;

use super::DieselStore;
use super::named_profiles::{self, Place};
use super::rows::lock_row;

/// The set of `profiles` and the active one's `name`: the profiles, and its id.
fn set_of(profiles: Vec<StoredAgentProfile>, active: Option<&str>) -> AgentProfileSet {
    let active_id = active.and_then(|name| profiles.iter().find(|p| p.name == name).map(|p| p.id));
    AgentProfileSet {
        profiles,
        active_id,
    }
}

impl AgentProfileStore for DieselStore {
    fn agent_profiles(&self, org: OrgId, user: UserId) -> Result<AgentProfileSet, StorageError> {
        let mut conn = self.conn()?;
        let loaded = named_profiles::load(&mut conn, &Place::member_agents(org, user))?;
        Ok(set_of(loaded.items, loaded.active.as_deref()))
    }

    /// One write transaction: the member's `org_members` row locked (`FOR UPDATE` on
    /// PostgreSQL; SQLite's write lock is already held), the set read, edited, written back.
    fn update_agent_profiles(
        &self,
        org: OrgId,
        user: UserId,
        now: OffsetDateTime,
        edit: AgentProfileEdit<'_>,
    ) -> Result<AgentProfileSet, DomainError> {
        let kind = self.kind;
        let place = Place::member_agents(org, user);
        let mut refused: Option<DomainError> = None;
        let written = self.write(|conn| {
            lock_row(
                conn,
                kind,
                "org_members",
                &format!("org_id = '{org}' AND user_id = '{user}'"),
            )?;
            let before = named_profiles::load(conn, &place)?;
            let mut set = set_of(before.items.clone(), before.active.as_deref());
            match edit(&mut set) {
                Err(e) => {
                    refused = Some(e);
                    Err(StorageError::Other("edit refused".into()))
                }
                Ok(false) => Ok(set),
                Ok(true) => {
                    let active = set
                        .active_id
                        .and_then(|id| set.profiles.iter().find(|p| p.id == id))
                        .map(|p| p.name.as_str());
                    named_profiles::write_back(conn, &place, &before, &set.profiles, active, now)?;
                    Ok(set)
                }
            }
        });
        if let Some(e) = refused {
            return Err(e);
        }
        Ok(written?)
    }
}

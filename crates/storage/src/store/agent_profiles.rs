//! Each member's agent profiles ([`AgentProfileStore`], issue 25): one `agent_profiles` row
//! per profile, the active one flagged. An edit reads the member's rows under a lock on their
//! membership row, and writes back only the rows that changed.

use diesel::prelude::*;
use serde_json::Value;
use switchboard_domain::agent_profiles::{AgentProfileSet, StoredAgentProfile};
use switchboard_domain::ports::{AgentProfileEdit, AgentProfileStore};
use switchboard_domain::{DomainError, OrgId, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, lock_row, to_db};
use crate::connection::DbConnection;
use crate::schema::agent_profiles;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = agent_profiles)]
struct AgentProfileRow {
    org_id: String,
    user_id: String,
    id: String,
    name: String,
    revision: i64,
    agent_kind: String,
    profile: String,
    active: bool,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

fn other(msg: String) -> StorageError {
    StorageError::Other(msg.into())
}

impl AgentProfileRow {
    fn profile(&self) -> Result<StoredAgentProfile, StorageError> {
        let body = match serde_json::from_str(&self.profile) {
            Ok(Value::Object(m)) => m,
            _ => return Err(other("a stored agent profile is not a JSON object".into())),
        };
        Ok(StoredAgentProfile {
            id: self
                .id
                .parse()
                .map_err(|_| other(format!("stored agent profile id {:?}", self.id)))?,
            name: self.name.clone(),
            revision: self.revision,
            agent_kind: self.agent_kind.clone(),
            body,
        })
    }
}

fn load(
    conn: &mut DbConnection,
    org: OrgId,
    user: UserId,
) -> Result<Vec<AgentProfileRow>, StorageError> {
    let (o, u) = (org.to_string(), user.to_string());
    native!(conn, |c| agent_profiles::table
        .filter(agent_profiles::org_id.eq(&o))
        .filter(agent_profiles::user_id.eq(&u))
        .order(agent_profiles::name.asc())
        .select(AgentProfileRow::as_select())
        .load(c))
    .map_err(db_err)
}

fn set_of(rows: &[AgentProfileRow]) -> Result<AgentProfileSet, StorageError> {
    let mut set = AgentProfileSet::default();
    for r in rows {
        let p = r.profile()?;
        if r.active {
            set.active_id = Some(p.id);
        }
        set.profiles.push(p);
    }
    Ok(set)
}

/// The row `p` is stored as, in the set of `org` and `user`.
fn row_of(
    org: &str,
    user: &str,
    p: &StoredAgentProfile,
    active: bool,
    created_at: PrimitiveDateTime,
    now: PrimitiveDateTime,
) -> Result<AgentProfileRow, StorageError> {
    Ok(AgentProfileRow {
        org_id: org.to_owned(),
        user_id: user.to_owned(),
        id: p.id.to_string(),
        name: p.name.clone(),
        revision: p.revision,
        agent_kind: p.agent_kind.clone(),
        profile: serde_json::to_string(&p.body).map_err(|e| other(e.to_string()))?,
        active,
        created_at,
        updated_at: now,
    })
}

/// Writes `after` over `before`: rows gone are deleted first (freeing their names), then
/// rows that changed (content, name or flag) are updated and new ones inserted.
fn write_back(
    conn: &mut DbConnection,
    org: OrgId,
    user: UserId,
    before: &[AgentProfileRow],
    after: &AgentProfileSet,
    now: OffsetDateTime,
) -> Result<(), StorageError> {
    let (o, u) = (org.to_string(), user.to_string());
    let now = to_db(now);
    let mine = agent_profiles::table
        .filter(agent_profiles::org_id.eq(o.clone()))
        .filter(agent_profiles::user_id.eq(u.clone()));
    for r in before {
        if !after.profiles.iter().any(|p| p.id.to_string() == r.id) {
            diesel::delete(mine.clone().filter(agent_profiles::id.eq(&r.id)))
                .execute(conn)
                .map_err(db_err)?;
        }
    }
    for p in &after.profiles {
        let active = after.active_id == Some(p.id);
        let old = before.iter().find(|r| r.id == p.id.to_string());
        let row = row_of(&o, &u, p, active, old.map_or(now, |r| r.created_at), now)?;
        match old {
            Some(old)
                if old.name == row.name
                    && old.revision == row.revision
                    && old.agent_kind == row.agent_kind
                    && old.profile == row.profile
                    && old.active == row.active => {}
            Some(_) => {
                diesel::update(mine.clone().filter(agent_profiles::id.eq(&row.id)))
                    .set(&row)
                    .execute(conn)
                    .map_err(db_err)?;
            }
            None => {
                diesel::insert_into(agent_profiles::table)
                    .values(&row)
                    .execute(conn)
                    .map_err(db_err)?;
            }
        }
    }
    Ok(())
}

impl AgentProfileStore for DieselStore {
    fn agent_profiles(&self, org: OrgId, user: UserId) -> Result<AgentProfileSet, StorageError> {
        let mut conn = self.conn()?;
        set_of(&load(&mut conn, org, user)?)
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
        let mut refused: Option<DomainError> = None;
        let written = self.write(|conn| {
            lock_row(
                conn,
                kind,
                "org_members",
                &format!("org_id = '{org}' AND user_id = '{user}'"),
            )?;
            let before = load(conn, org, user)?;
            let mut set = set_of(&before)?;
            match edit(&mut set) {
                Err(e) => {
                    refused = Some(e);
                    Err(other("edit refused".into()))
                }
                Ok(false) => Ok(set),
                Ok(true) => {
                    write_back(conn, org, user, &before, &set, now)?;
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

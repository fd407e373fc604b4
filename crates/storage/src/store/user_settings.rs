//! Each user's own settings in an organization ([`UserSettingsStore`], issue 21): one
//! `user_settings` row per user and organization; the JSON columns hold the agent and
//! conversation settings and the preferences (keys sealed by the domain). The member's LLM
//! profiles are the collection [`Place::member_llm`] of `named_profiles`
//! ([`super::named_profiles`]), read and written with the row.

use diesel::prelude::*;
use serde_json::{Map, Value};
use switchboard_domain::ports::{SettingsEdit, UserSettingsStore};
use switchboard_domain::user_settings::{StoredProfile, UserSettingsRecord};
use switchboard_domain::{DomainError, OrgId, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::named_profiles::{self, Loaded, Place};
use super::rows::{db_err, from_db, lock_row, optional_row, to_db};
use crate::connection::DbConnection;
use crate::schema::user_settings;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = user_settings)]
struct UserSettingsRow {
    org_id: String,
    user_id: String,
    agent_settings: String,
    conversation_settings: String,
    preferences: String,
    llm_api_key_sealed: Option<String>,
    search_api_key_sealed: Option<String>,
    mcp_config_sealed: Option<String>,
    updated_at: PrimitiveDateTime,
}

/// Every column but the key, `None` written as NULL.
#[derive(AsChangeset)]
#[diesel(table_name = user_settings, treat_none_as_null = true)]
struct UserSettingsChange {
    agent_settings: String,
    conversation_settings: String,
    preferences: String,
    llm_api_key_sealed: Option<String>,
    search_api_key_sealed: Option<String>,
    mcp_config_sealed: Option<String>,
    updated_at: PrimitiveDateTime,
}

fn object(text: &str, what: &str) -> Result<Map<String, Value>, StorageError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(StorageError::Other(
            format!("stored user {what} is not a JSON object").into(),
        )),
    }
}

fn json_text(v: &impl ToJson) -> Result<String, StorageError> {
    v.to_json().map_err(|e| StorageError::Other(Box::new(e)))
}

/// What a JSON column holds.
trait ToJson {
    fn to_json(&self) -> serde_json::Result<String>;
}

impl ToJson for Map<String, Value> {
    fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }
}

impl UserSettingsRow {
    /// The one conversion into the domain's record.
    fn record(
        self,
        profiles: Vec<StoredProfile>,
        active_profile: Option<String>,
    ) -> Result<UserSettingsRecord, StorageError> {
        Ok(UserSettingsRecord {
            agent_settings: object(&self.agent_settings, "agent settings")?,
            conversation_settings: object(&self.conversation_settings, "conversation settings")?,
            preferences: object(&self.preferences, "preferences")?,
            llm_api_key_sealed: self.llm_api_key_sealed,
            search_api_key_sealed: self.search_api_key_sealed,
            mcp_config_sealed: self.mcp_config_sealed,
            profiles,
            active_profile,
            updated_at: Some(from_db(self.updated_at)),
        })
    }
}

impl UserSettingsChange {
    fn of(rec: &UserSettingsRecord, now: OffsetDateTime) -> Result<Self, StorageError> {
        Ok(UserSettingsChange {
            agent_settings: json_text(&rec.agent_settings)?,
            conversation_settings: json_text(&rec.conversation_settings)?,
            preferences: json_text(&rec.preferences)?,
            llm_api_key_sealed: rec.llm_api_key_sealed.clone(),
            search_api_key_sealed: rec.search_api_key_sealed.clone(),
            mcp_config_sealed: rec.mcp_config_sealed.clone(),
            updated_at: to_db(now),
        })
    }
}

/// The member's settings row and their profiles.
fn load(
    conn: &mut DbConnection,
    org: OrgId,
    user: UserId,
) -> Result<Option<(UserSettingsRow, Loaded<StoredProfile>)>, StorageError> {
    let (o, u) = (org.to_string(), user.to_string());
    let Some(row) = optional_row(
        native!(conn, |c| user_settings::table
            .filter(user_settings::org_id.eq(&o))
            .filter(user_settings::user_id.eq(&u))
            .select(UserSettingsRow::as_select())
            .first(c)),
        Ok,
    )?
    else {
        return Ok(None);
    };
    let profiles = named_profiles::load(conn, &Place::member_llm(org, user))?;
    Ok(Some((row, profiles)))
}

impl UserSettingsStore for DieselStore {
    fn user_settings(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<UserSettingsRecord>, StorageError> {
        let mut conn = self.conn()?;
        load(&mut conn, org, user)?
            .map(|(row, profiles)| row.record(profiles.items, profiles.active))
            .transpose()
    }

    /// One write transaction: a default row inserted if none exists (`ON CONFLICT DO
    /// NOTHING`, so two first writes do not collide), the row locked (`FOR UPDATE` on
    /// PostgreSQL; SQLite's write lock is already held), read, edited, written back.
    fn update_user_settings(
        &self,
        org: OrgId,
        user: UserId,
        now: OffsetDateTime,
        edit: SettingsEdit<'_>,
    ) -> Result<UserSettingsRecord, DomainError> {
        let kind = self.kind;
        let mut refused: Option<DomainError> = None;
        let (o, u) = (org.to_string(), user.to_string());
        let written = self.write(|conn| {
            let fresh = UserSettingsRow {
                org_id: o.clone(),
                user_id: u.clone(),
                agent_settings: "{}".into(),
                conversation_settings: "{}".into(),
                preferences: "{}".into(),
                llm_api_key_sealed: None,
                search_api_key_sealed: None,
                mcp_config_sealed: None,
                updated_at: to_db(now),
            };
            native!(conn, |c| diesel::insert_into(user_settings::table)
                .values(&fresh)
                .on_conflict_do_nothing()
                .execute(c))
            .map_err(db_err)?;
            lock_row(
                conn,
                kind,
                "user_settings",
                &format!("org_id = '{o}' AND user_id = '{u}'"),
            )?;
            let (row, before) = load(conn, org, user)?
                .ok_or_else(|| StorageError::Other("the user's settings row vanished".into()))?;
            let mut rec = row.record(before.items.clone(), before.active.clone())?;
            match edit(&mut rec) {
                Err(e) => {
                    refused = Some(e);
                    Err(StorageError::Other("edit refused".into()))
                }
                Ok(false) => Ok(rec),
                Ok(true) => {
                    let change = UserSettingsChange::of(&rec, now)?;
                    diesel::update(
                        user_settings::table
                            .filter(user_settings::org_id.eq(&o))
                            .filter(user_settings::user_id.eq(&u)),
                    )
                    .set(&change)
                    .execute(conn)
                    .map_err(db_err)?;
                    named_profiles::write_back(
                        conn,
                        &Place::member_llm(org, user),
                        &before,
                        &rec.profiles,
                        rec.active_profile.as_deref(),
                        now,
                    )?;
                    rec.updated_at = Some(now);
                    Ok(rec)
                }
            }
        });
        if let Some(e) = refused {
            return Err(e);
        }
        Ok(written?)
    }
}

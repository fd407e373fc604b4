//! An organization's defaults for its members ([`OrgDefaultsStore`], issue 21): one
//! `org_defaults` row per organization; the JSON columns hold the agent and conversation
//! settings and the provider connections, the keys are sealed by the domain. The
//! organization's LLM profiles are the collection [`Place::org_llm`] of `named_profiles`
//! ([`super::named_profiles`]), read and written with the row.

use diesel::prelude::*;
use serde_json::{Map, Value};
use switchboard_domain::org_defaults::OrgDefaultsRecord;
use switchboard_domain::ports::{OrgDefaultsEdit, OrgDefaultsStore};
use switchboard_domain::{DomainError, OrgId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::named_profiles::{self, Loaded, Place};
use super::rows::{db_err, from_db, lock_row, optional_row, to_db};
use crate::connection::DbConnection;
use crate::schema::org_defaults;
use switchboard_domain::user_settings::StoredProfile;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = org_defaults, treat_none_as_null = true)]
struct OrgDefaultsRow {
    org_id: String,
    agent_settings: String,
    conversation_settings: String,
    llm_api_key_sealed: Option<String>,
    search_api_key_sealed: Option<String>,
    mcp_config_sealed: Option<String>,
    updated_at: PrimitiveDateTime,
    provider_connections: String,
}

fn object(text: &str, what: &str) -> Result<Map<String, Value>, StorageError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(StorageError::Other(
            format!("stored organization {what} is not a JSON object").into(),
        )),
    }
}

impl OrgDefaultsRow {
    /// The one conversion into the domain's record.
    fn record(
        self,
        profiles: Vec<StoredProfile>,
        active_profile: Option<String>,
    ) -> Result<OrgDefaultsRecord, StorageError> {
        Ok(OrgDefaultsRecord {
            agent_settings: object(&self.agent_settings, "agent settings")?,
            conversation_settings: object(&self.conversation_settings, "conversation settings")?,
            llm_api_key_sealed: self.llm_api_key_sealed,
            search_api_key_sealed: self.search_api_key_sealed,
            mcp_config_sealed: self.mcp_config_sealed,
            profiles,
            active_profile,
            provider_connections: serde_json::from_str(&self.provider_connections).map_err(
                |e| StorageError::Other(format!("stored provider connections: {e}").into()),
            )?,
            updated_at: Some(from_db(self.updated_at)),
        })
    }

    fn of(org: &str, rec: &OrgDefaultsRecord, now: OffsetDateTime) -> Result<Self, StorageError> {
        let json = |v: serde_json::Result<String>| v.map_err(|e| StorageError::Other(Box::new(e)));
        Ok(OrgDefaultsRow {
            org_id: org.to_owned(),
            agent_settings: Value::Object(rec.agent_settings.clone()).to_string(),
            conversation_settings: Value::Object(rec.conversation_settings.clone()).to_string(),
            llm_api_key_sealed: rec.llm_api_key_sealed.clone(),
            search_api_key_sealed: rec.search_api_key_sealed.clone(),
            mcp_config_sealed: rec.mcp_config_sealed.clone(),
            updated_at: to_db(now),
            provider_connections: json(serde_json::to_string(&rec.provider_connections))?,
        })
    }
}

/// The organization's defaults row and its profiles.
fn load(
    conn: &mut DbConnection,
    org: OrgId,
) -> Result<Option<(OrgDefaultsRow, Loaded<StoredProfile>)>, StorageError> {
    let o = org.to_string();
    let Some(row) = optional_row(
        native!(conn, |c| org_defaults::table
            .filter(org_defaults::org_id.eq(&o))
            .select(OrgDefaultsRow::as_select())
            .first(c)),
        Ok,
    )?
    else {
        return Ok(None);
    };
    let profiles = named_profiles::load(conn, &Place::org_llm(org))?;
    Ok(Some((row, profiles)))
}

impl OrgDefaultsStore for DieselStore {
    fn org_defaults(&self, org: OrgId) -> Result<Option<OrgDefaultsRecord>, StorageError> {
        let mut conn = self.conn()?;
        load(&mut conn, org)?
            .map(|(row, profiles)| row.record(profiles.items, profiles.active))
            .transpose()
    }

    /// One write transaction: an empty row inserted if none exists (`ON CONFLICT DO
    /// NOTHING`), the row locked (`FOR UPDATE` on PostgreSQL; SQLite's write lock is already
    /// held), read, edited, written back.
    fn update_org_defaults(
        &self,
        org: OrgId,
        now: OffsetDateTime,
        edit: OrgDefaultsEdit<'_>,
    ) -> Result<OrgDefaultsRecord, DomainError> {
        let kind = self.kind;
        let mut refused: Option<DomainError> = None;
        let o = org.to_string();
        let written = self.write(|conn| {
            let fresh = OrgDefaultsRow::of(&o, &OrgDefaultsRecord::default(), now)?;
            native!(conn, |c| diesel::insert_into(org_defaults::table)
                .values(&fresh)
                .on_conflict_do_nothing()
                .execute(c))
            .map_err(db_err)?;
            lock_row(conn, kind, "org_defaults", &format!("org_id = '{o}'"))?;
            let (row, before) = load(conn, org)?.ok_or_else(|| {
                StorageError::Other("the organization's defaults row vanished".into())
            })?;
            let mut rec = row.record(before.items.clone(), before.active.clone())?;
            match edit(&mut rec) {
                Err(e) => {
                    refused = Some(e);
                    Err(StorageError::Other("edit refused".into()))
                }
                Ok(false) => Ok(rec),
                Ok(true) => {
                    let row = OrgDefaultsRow::of(&o, &rec, now)?;
                    diesel::update(org_defaults::table.filter(org_defaults::org_id.eq(&o)))
                        .set(&row)
                        .execute(conn)
                        .map_err(db_err)?;
                    named_profiles::write_back(
                        conn,
                        &Place::org_llm(org),
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

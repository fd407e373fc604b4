//! Organization app settings ([`OrgSettingsStore`]), stored on the `orgs` row.

use diesel::prelude::*;
use switchboard_domain::ports::{OrgSettingsStore, SettingsWrite};
use switchboard_domain::settings::{Marketplace, OrgAppSettings, SettingsChange};
use switchboard_domain::{OrgId, StorageError};
use time::{Duration, OffsetDateTime, PrimitiveDateTime};

use super::identity::OrgRow;
use super::rows::{db_err, from_db, lock_row, parse_id, to_db};
use super::{DieselStore, SETTINGS_CHANNEL};
use crate::connection::{BackendKind, DbConnection};
use crate::schema::orgs;

/// An organization row with its settings columns.
#[derive(Queryable, Selectable)]
#[diesel(table_name = orgs)]
struct OrgSettingsRow {
    #[diesel(embed)]
    org: OrgRow,
    enable_proactive_conversation_starters: bool,
    max_budget_per_task: Option<f64>,
    llm_monthly_budget: Option<f64>,
    registered_marketplaces: String,
    updated_at: PrimitiveDateTime,
}

impl OrgSettingsRow {
    fn settings(&self) -> Result<OrgAppSettings, StorageError> {
        let registered_marketplaces: Vec<Marketplace> =
            serde_json::from_str(&self.registered_marketplaces).map_err(|e| {
                StorageError::Other(
                    format!("stored marketplaces of org {}: {e}", self.org.id).into(),
                )
            })?;
        Ok(OrgAppSettings {
            org_id: parse_id(&self.org.id, "org")?,
            enable_proactive_conversation_starters: self.enable_proactive_conversation_starters,
            max_budget_per_task: self.max_budget_per_task,
            llm_monthly_budget: self.llm_monthly_budget,
            registered_marketplaces,
            updated_at: from_db(self.updated_at),
        })
    }
}

#[derive(AsChangeset)]
#[diesel(table_name = orgs)]
struct SettingsChangeset {
    enable_proactive_conversation_starters: Option<bool>,
    max_budget_per_task: Option<Option<f64>>,
    llm_monthly_budget: Option<Option<f64>>,
    registered_marketplaces: Option<String>,
    updated_at: PrimitiveDateTime,
}

fn load_org(conn: &mut DbConnection, org: OrgId) -> Result<Option<OrgSettingsRow>, StorageError> {
    let id = org.to_string();
    native!(conn, |c| orgs::table
        .filter(orgs::id.eq(&id))
        .select(OrgSettingsRow::as_select())
        .get_result(c)
        .optional())
    .map_err(db_err)
}

impl OrgSettingsStore for DieselStore {
    /// From this process's [`SettingsCache`](super::SettingsCache) when it holds them;
    /// otherwise read and cached.
    fn org_settings(&self, org: OrgId) -> Result<Option<OrgAppSettings>, StorageError> {
        if let Some(s) = self.settings.get(&org) {
            return Ok(Some(s));
        }
        let seen = self.settings.generation();
        let mut conn = self.conn()?;
        let settings = load_org(&mut conn, org)?
            .map(|r| r.settings())
            .transpose()?;
        if let Some(s) = &settings {
            self.settings.fill(seen, org, s.clone());
        }
        Ok(settings)
    }

    /// One write transaction ([`DieselStore::write`]): the row is read under the transaction's
    /// lock (PostgreSQL `FOR UPDATE`, SQLite's write lock); a version other than `expected` is
    /// stale; otherwise one conditional `UPDATE … WHERE id = ? AND updated_at = <version read>`
    /// writes only the changed columns and the new version `max(now, stored + 1 µs)`.
    /// Concurrent patches of different fields queue instead of losing each other's writes.
    fn update_org_settings(
        &self,
        org: OrgId,
        change: &SettingsChange,
        expected: Option<OffsetDateTime>,
        now: OffsetDateTime,
    ) -> Result<SettingsWrite, StorageError> {
        let marketplaces_json = change
            .registered_marketplaces
            .as_ref()
            .map(|m| serde_json::to_string(m).map_err(|e| StorageError::Other(Box::new(e))))
            .transpose()?;
        let kind = self.kind;
        let written =
            self.write(|conn| {
                lock_row(conn, kind, "orgs", &format!("id = '{org}'"))?;
                let Some(row) = load_org(conn, org)? else {
                    return Ok(SettingsWrite::NotFound);
                };
                let current = row.settings()?;
                if let Some(exp) = expected
                    && exp != current.updated_at
                {
                    return Ok(SettingsWrite::Stale {
                        actual: current.updated_at,
                    });
                }
                let version = std::cmp::max(now, current.updated_at + Duration::microseconds(1));
                let changeset = SettingsChangeset {
                    enable_proactive_conversation_starters: change
                        .enable_proactive_conversation_starters,
                    max_budget_per_task: change.max_budget_per_task,
                    llm_monthly_budget: change.llm_monthly_budget,
                    registered_marketplaces: marketplaces_json.clone(),
                    updated_at: to_db(version),
                };
                // The version check and the write as one conditional update.
                let written = diesel::update(
                    orgs::table
                        .filter(orgs::id.eq(org.to_string()))
                        .filter(orgs::updated_at.eq(row.updated_at)),
                )
                .set(&changeset)
                .execute(conn)
                .map_err(db_err)?;
                if written == 0 {
                    let actual = load_org(conn, org)?.map(|r| from_db(r.updated_at));
                    return Ok(actual.map_or(SettingsWrite::NotFound, |actual| {
                        SettingsWrite::Stale { actual }
                    }));
                }
                let mut next = current;
                if let Some(v) = change.enable_proactive_conversation_starters {
                    next.enable_proactive_conversation_starters = v;
                }
                if let Some(v) = change.max_budget_per_task {
                    next.max_budget_per_task = v;
                }
                if let Some(v) = change.llm_monthly_budget {
                    next.llm_monthly_budget = v;
                }
                if let Some(v) = &change.registered_marketplaces {
                    next.registered_marketplaces = v.clone();
                }
                next.updated_at = version;
                if kind == BackendKind::Postgres {
                    // Delivered at commit to every replica's settings listener.
                    diesel::sql_query("SELECT pg_notify($1, $2)")
                        .bind::<diesel::sql_types::Text, _>(SETTINGS_CHANNEL)
                        .bind::<diesel::sql_types::Text, _>(org.to_string())
                        .execute(conn)
                        .map_err(db_err)?;
                }
                Ok(SettingsWrite::Written(next))
            });
        // After the commit (or a failure, which may have committed nothing): this process
        // reads the row again next time.
        self.settings.invalidate(&org);
        written
    }
}

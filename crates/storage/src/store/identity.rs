//! Organizations, users, memberships and API keys ([`IdentityStore`]).

use diesel::prelude::*;
use switchboard_domain::identity::api_keys::{ApiKeyHash, ApiKeyRecord};
use switchboard_domain::identity::{Org, User};
use switchboard_domain::ports::{IdentityStore, KeyLookup, OrgMembership};
use switchboard_domain::{ApiKeyId, OrgId, Role, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, from_db, optional_row, parse_id, parse_opt_id, to_db};
use crate::connection::{BackendKind, DbConnection};
use crate::schema::{api_keys, org_members, orgs, users};

diesel::define_sql_function! {
    /// SQL `COALESCE` of three nullable texts.
    #[sql_name = "COALESCE"]
    fn coalesce3(a: diesel::sql_types::Nullable<diesel::sql_types::Text>, b: diesel::sql_types::Nullable<diesel::sql_types::Text>, c: diesel::sql_types::Nullable<diesel::sql_types::Text>) -> diesel::sql_types::Nullable<diesel::sql_types::Text>;
}

/// An organization's identity columns (its settings are [`super::org_settings`]'s).
#[derive(Queryable, Selectable)]
#[diesel(table_name = orgs)]
pub(super) struct OrgRow {
    pub(super) id: String,
    name: String,
    created_at: PrimitiveDateTime,
}

impl OrgRow {
    /// The organization.
    pub(super) fn org(self) -> Result<Org, StorageError> {
        Ok(Org {
            id: parse_id(&self.id, "org")?,
            name: self.name,
            created_at: from_db(self.created_at),
        })
    }
}

/// A membership read with its organization: the organization, if it exists, and the user's
/// role there, if any.
fn membership(
    org: Option<OrgRow>,
    role: Option<String>,
) -> Result<Option<OrgMembership>, StorageError> {
    org.map(|o| {
        Ok(OrgMembership {
            org: o.org()?,
            role: role.as_deref().and_then(Role::parse),
        })
    })
    .transpose()
}

/// A user's row.
#[derive(Queryable, Selectable)]
#[diesel(table_name = users)]
pub(super) struct UserRow {
    id: String,
    email: String,
    name: Option<String>,
    current_org_id: Option<String>,
    created_at: PrimitiveDateTime,
    disabled_at: Option<PrimitiveDateTime>,
}

impl UserRow {
    /// The user.
    pub(super) fn user(self) -> Result<User, StorageError> {
        Ok(User {
            id: parse_id(&self.id, "user")?,
            email: self.email,
            name: self.name,
            current_org_id: parse_opt_id(self.current_org_id.as_deref(), "org")?,
            created_at: from_db(self.created_at),
            disabled_at: self.disabled_at.map(from_db),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys)]
struct ApiKeyRow {
    id: String,
    user_id: String,
    org_id: Option<String>,
    name: String,
    key_hash: String,
    display_prefix: String,
    created_at: PrimitiveDateTime,
    last_used_at: Option<PrimitiveDateTime>,
    expires_at: Option<PrimitiveDateTime>,
    revoked_at: Option<PrimitiveDateTime>,
}

impl ApiKeyRow {
    fn record(self) -> Result<ApiKeyRecord, StorageError> {
        Ok(ApiKeyRecord {
            id: parse_id(&self.id, "api key")?,
            user_id: parse_id(&self.user_id, "user")?,
            org_id: parse_opt_id(self.org_id.as_deref(), "org")?,
            name: self.name,
            display_prefix: self.display_prefix,
            created_at: from_db(self.created_at),
            last_used_at: self.last_used_at.map(from_db),
            expires_at: self.expires_at.map(from_db),
            revoked_at: self.revoked_at.map(from_db),
        })
    }
}

impl DieselStore {
    /// The key with `hash`, its user's current organization and the effective organization's
    /// membership, in one query (the hot path of authentication when not cached).
    fn read_key_lookup(
        &self,
        hash: &ApiKeyHash,
        requested: Option<OrgId>,
    ) -> Result<Option<KeyLookup>, StorageError> {
        use diesel::sql_types::{Nullable, Text};
        let mut conn = self.conn()?;
        let requested = requested.map(|o| o.to_string());
        // The effective organization (API.md): bound org, else requested, else current.
        type Row = (
            ApiKeyRow,
            Option<String>,
            Option<PrimitiveDateTime>,
            Option<OrgRow>,
            Option<String>,
        );
        let row: Option<Row> = native!(&mut *conn, |c| {
            let effective = coalesce3(
                api_keys::org_id,
                requested.clone().into_sql::<Nullable<Text>>(),
                users::current_org_id,
            );
            api_keys::table
                .inner_join(users::table)
                .left_join(orgs::table.on(orgs::id.nullable().eq(effective)))
                .left_join(
                    org_members::table.on(org_members::org_id
                        .eq(orgs::id)
                        .and(org_members::user_id.eq(api_keys::user_id))),
                )
                .filter(api_keys::key_hash.eq(&hash.0))
                .select((
                    ApiKeyRow::as_select(),
                    users::current_org_id,
                    users::disabled_at,
                    Option::<OrgRow>::as_select(),
                    org_members::role.nullable(),
                ))
                .get_result(c)
                .optional()
        })
        .map_err(db_err)?;
        row.map(|(k, current, disabled, org, role)| {
            Ok(KeyLookup {
                key: k.record()?,
                user_current_org: parse_opt_id(current.as_deref(), "org")?,
                user_disabled: disabled.is_some(),
                effective: membership(org, role)?,
            })
        })
        .transpose()
    }

    /// After an identity write: this process's key lookups are dropped, and on PostgreSQL
    /// every replica's ([`super::KeyCache`]: `NOTIFY` on [`super::IDENTITY_CHANNEL`]). A failed
    /// notification is logged; the other replicas' entries then live out their time to live.
    pub(super) fn identity_changed(&self, conn: &mut DbConnection) {
        if self.kind == BackendKind::Postgres
            && let Err(e) = diesel::sql_query("SELECT pg_notify($1, '')")
                .bind::<diesel::sql_types::Text, _>(super::IDENTITY_CHANNEL)
                .execute(conn)
        {
            tracing::warn!(error = %e, "could not notify the other replicas of an identity write");
        }
        self.keys.clear();
    }
}

impl IdentityStore for DieselStore {
    fn api_key_by_hash(
        &self,
        hash: &ApiKeyHash,
        requested: Option<OrgId>,
    ) -> Result<Option<KeyLookup>, StorageError> {
        let cache_key = (hash.0.clone(), requested);
        if let Some(found) = self.keys.get(&cache_key) {
            return Ok(Some(found));
        }
        let seen = self.keys.generation();
        let found = self.read_key_lookup(hash, requested)?;
        if let Some(found) = &found {
            self.keys.fill(seen, cache_key, found.clone());
        }
        Ok(found)
    }

    fn touch_api_key(
        &self,
        id: ApiKeyId,
        now: OffsetDateTime,
        not_before: OffsetDateTime,
    ) -> Result<(), StorageError> {
        self.write(|conn| {
            diesel::update(
                api_keys::table
                    .filter(api_keys::id.eq(id.to_string()))
                    .filter(
                        api_keys::last_used_at
                            .is_null()
                            .or(api_keys::last_used_at.lt(to_db(not_before))),
                    ),
            )
            .set(api_keys::last_used_at.eq(to_db(now)))
            .execute(conn)
            .map_err(db_err)?;
            Ok(())
        })?;
        // The cached lookups of this key see the use, so the next touch is a minute away.
        self.keys.update_all(|found| {
            if found.key.id == id {
                found.key.last_used_at = Some(now);
            }
        });
        Ok(())
    }

    fn user(&self, id: UserId) -> Result<Option<User>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            users::table
                .filter(users::id.eq(id.to_string()))
                .select(UserRow::as_select())
                .get_result(&mut *conn),
            UserRow::user,
        )
    }

    fn user_by_email(&self, email: &str) -> Result<Option<User>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            users::table
                .filter(users::email.eq(email))
                .select(UserRow::as_select())
                .get_result(&mut *conn),
            UserRow::user,
        )
    }

    fn org_membership(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<OrgMembership>, StorageError> {
        let mut conn = self.conn()?;
        let (org_id, user_id) = (org.to_string(), user.to_string());
        let row: Option<(OrgRow, Option<String>)> = native!(&mut *conn, |c| orgs::table
            .left_join(
                org_members::table.on(org_members::org_id
                    .eq(orgs::id)
                    .and(org_members::user_id.eq(&user_id)))
            )
            .filter(orgs::id.eq(&org_id))
            .select((OrgRow::as_select(), org_members::role.nullable()))
            .get_result(c)
            .optional())
        .map_err(db_err)?;
        match row {
            Some((org, role)) => membership(Some(org), role),
            None => Ok(None),
        }
    }

    fn memberships(&self, user: UserId) -> Result<Vec<OrgMembership>, StorageError> {
        let mut conn = self.conn()?;
        let user_id = user.to_string();
        let rows: Vec<(OrgRow, String)> = native!(&mut *conn, |c| orgs::table
            .inner_join(org_members::table.on(org_members::org_id.eq(orgs::id)))
            .filter(org_members::user_id.eq(&user_id))
            .order((orgs::name.asc(), orgs::id.asc()))
            .select((OrgRow::as_select(), org_members::role))
            .load(c))
        .map_err(db_err)?;
        rows.into_iter()
            .filter_map(|(org, role)| membership(Some(org), Some(role)).transpose())
            .collect()
    }

    fn org_by_name(&self, name: &str) -> Result<Option<Org>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            orgs::table
                .filter(orgs::name.eq(name))
                .order(orgs::created_at.asc())
                .select(OrgRow::as_select())
                .first(&mut *conn),
            OrgRow::org,
        )
    }

    fn count_orgs(&self) -> Result<i64, StorageError> {
        let mut conn = self.conn()?;
        orgs::table.count().get_result(&mut *conn).map_err(db_err)
    }

    fn create_org(&self, org: &Org) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(orgs::table)
            .values((
                orgs::id.eq(org.id.to_string()),
                orgs::name.eq(&org.name),
                orgs::enable_proactive_conversation_starters.eq(true),
                orgs::max_budget_per_task.eq(None::<f64>),
                orgs::llm_monthly_budget.eq(None::<f64>),
                orgs::registered_marketplaces.eq("[]"),
                orgs::created_at.eq(to_db(org.created_at)),
                orgs::updated_at.eq(to_db(org.created_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        self.identity_changed(&mut conn);
        Ok(())
    }

    fn create_user(&self, user: &User) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(users::table)
            .values((
                users::id.eq(user.id.to_string()),
                users::email.eq(&user.email),
                users::name.eq(&user.name),
                users::current_org_id.eq(user.current_org_id.map(|o| o.to_string())),
                users::created_at.eq(to_db(user.created_at)),
                users::disabled_at.eq(user.disabled_at.map(to_db)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        self.identity_changed(&mut conn);
        Ok(())
    }

    fn put_member(
        &self,
        org: OrgId,
        user: UserId,
        role: Role,
        now: OffsetDateTime,
    ) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        let (o, u) = (org.to_string(), user.to_string());
        let updated = diesel::update(
            org_members::table
                .filter(org_members::org_id.eq(&o))
                .filter(org_members::user_id.eq(&u)),
        )
        .set(org_members::role.eq(role.as_str()))
        .execute(&mut *conn)
        .map_err(db_err)?;
        if updated == 0 {
            diesel::insert_into(org_members::table)
                .values((
                    org_members::org_id.eq(&o),
                    org_members::user_id.eq(&u),
                    org_members::role.eq(role.as_str()),
                    org_members::created_at.eq(to_db(now)),
                ))
                .execute(&mut *conn)
                .map_err(db_err)?;
        }
        self.identity_changed(&mut conn);
        Ok(())
    }

    fn set_current_org(&self, user: UserId, org: OrgId) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::update(users::table.filter(users::id.eq(user.to_string())))
            .set(users::current_org_id.eq(Some(org.to_string())))
            .execute(&mut *conn)
            .map_err(db_err)?;
        self.identity_changed(&mut conn);
        Ok(())
    }

    fn insert_api_key(&self, key: &ApiKeyRecord, hash: &ApiKeyHash) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        let row = ApiKeyRow {
            id: key.id.to_string(),
            user_id: key.user_id.to_string(),
            org_id: key.org_id.map(|o| o.to_string()),
            name: key.name.clone(),
            key_hash: hash.0.clone(),
            display_prefix: key.display_prefix.clone(),
            created_at: to_db(key.created_at),
            last_used_at: key.last_used_at.map(to_db),
            expires_at: key.expires_at.map(to_db),
            revoked_at: key.revoked_at.map(to_db),
        };
        diesel::insert_into(api_keys::table)
            .values(&row)
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn api_keys_of(&self, user: UserId) -> Result<Vec<ApiKeyRecord>, StorageError> {
        let mut conn = self.conn()?;
        let rows: Vec<ApiKeyRow> = api_keys::table
            .filter(api_keys::user_id.eq(user.to_string()))
            .order((api_keys::created_at.desc(), api_keys::id.desc()))
            .select(ApiKeyRow::as_select())
            .load(&mut *conn)
            .map_err(db_err)?;
        rows.into_iter().map(ApiKeyRow::record).collect()
    }

    fn api_key(&self, id: ApiKeyId) -> Result<Option<ApiKeyRecord>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            api_keys::table
                .filter(api_keys::id.eq(id.to_string()))
                .select(ApiKeyRow::as_select())
                .get_result(&mut *conn),
            ApiKeyRow::record,
        )
    }

    fn revoke_api_key(&self, id: ApiKeyId, now: OffsetDateTime) -> Result<bool, StorageError> {
        let mut conn = self.conn()?;
        let exists = api_keys::table
            .filter(api_keys::id.eq(id.to_string()))
            .count()
            .get_result::<i64>(&mut *conn)
            .map_err(db_err)?
            > 0;
        diesel::update(
            api_keys::table
                .filter(api_keys::id.eq(id.to_string()))
                .filter(api_keys::revoked_at.is_null()),
        )
        .set(api_keys::revoked_at.eq(Some(to_db(now))))
        .execute(&mut *conn)
        .map_err(db_err)?;
        self.identity_changed(&mut conn);
        Ok(exists)
    }
}

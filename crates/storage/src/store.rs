//! The diesel implementation of the domain ports, the same code on both backends.

use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use switchboard_domain::api_keys::{ApiKeyRecord, KeyHash};
use switchboard_domain::events::{
    AppendOutcome, Conversation, EventFilter, NewEvent, Sandbox, SearchQuery, SortOrder,
    StoredEvent,
};
use switchboard_domain::ports::{
    EventStore, IdentityStore, KeyLookup, Org, OrgMembership, OrgSettingsStore, SettingsWrite,
    Store, User,
};
use switchboard_domain::settings::{Marketplace, OrgAppSettings, SettingsChange};
use switchboard_domain::{ApiKeyId, ConversationId, OrgId, Role, StorageError, UserId};
use time::{Duration, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::connection::{
    BackendKind, DatabaseUrl, DbConnection, DbError, DbPool, PoolConfig, build_pool,
};
use crate::schema::{api_keys, conversations, events, org_members, orgs, sandboxes, users};

/// The store: a pool over one database.
#[derive(Clone)]
pub struct DieselStore {
    pool: DbPool,
    kind: BackendKind,
    /// SQLite has one writer at a time: writes of this process queue here instead of spinning
    /// in SQLite's busy handler (ARCHITECTURE.md: one writer path, immediate transactions).
    sqlite_writer: std::sync::Arc<std::sync::Mutex<()>>,
    /// Appends waiting to be committed together.
    appends: std::sync::Arc<AppendCombiner>,
}

/// Pool usage, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUsage {
    /// Open connections.
    pub connections: u32,
    /// Of which idle.
    pub idle: u32,
    /// Configured maximum.
    pub max_size: u32,
}

impl DieselStore {
    /// Opens a pool on `url`, applies pending migrations and returns the store with the
    /// migrations applied (their versions).
    ///
    /// # Errors
    /// An invalid URL, a failed connection or a failed migration.
    pub fn open(
        url: &str,
        config: Option<PoolConfig>,
    ) -> Result<(DieselStore, Vec<String>), DbError> {
        let url = DatabaseUrl::parse(url)?;
        let kind = url.kind();
        let pool = build_pool(
            &url,
            config.unwrap_or_else(|| PoolConfig::default_for(kind)),
        )?;
        let applied = crate::connection::run_migrations(&mut *pool.get()?)?;
        Ok((
            DieselStore {
                pool,
                kind,
                sqlite_writer: Default::default(),
                appends: Default::default(),
            },
            applied,
        ))
    }

    /// The backend.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Pool usage now.
    pub fn pool_usage(&self) -> PoolUsage {
        let s = self.pool.state();
        PoolUsage {
            connections: s.connections,
            idle: s.idle_connections,
            max_size: self.pool.max_size(),
        }
    }

    /// Runs `f` in a write transaction: on SQLite behind this process's writer lock, in
    /// `BEGIN IMMEDIATE` (so the transaction holds the write lock from its first statement and
    /// cannot fail to upgrade); on PostgreSQL in an ordinary transaction.
    ///
    /// # Errors
    /// `f`'s error, or a failure to begin or commit.
    pub fn write<T>(
        &self,
        f: impl FnOnce(&mut DbConnection) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        use diesel::connection::SimpleConnection;
        let mut conn = self.conn()?;
        match self.kind {
            BackendKind::Postgres => conn
                .transaction(|c| f(c).map_err(TxError::Storage))
                .map_err(TxError::into_storage),
            BackendKind::Sqlite => {
                let _guard = self
                    .sqlite_writer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                conn.batch_execute("BEGIN IMMEDIATE").map_err(db_err)?;
                match f(&mut conn) {
                    Ok(v) => match conn.batch_execute("COMMIT") {
                        Ok(()) => Ok(v),
                        Err(e) => {
                            let _ = conn.batch_execute("ROLLBACK");
                            Err(db_err(e))
                        }
                    },
                    Err(e) => {
                        let _ = conn.batch_execute("ROLLBACK");
                        Err(e)
                    }
                }
            }
        }
    }

    /// Checkpoints SQLite's write-ahead log (PASSIVE: copies what it can without waiting for
    /// readers or the writer, never blocks them); a no-op on PostgreSQL. Called periodically
    /// when the store was opened with [`PoolConfig::manual_checkpoints`].
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when no connection is free in time, or the checkpoint's
    /// failure.
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        if self.kind != BackendKind::Sqlite {
            return Ok(());
        }
        use diesel::connection::SimpleConnection;
        self.conn()?
            .batch_execute("PRAGMA wal_checkpoint(PASSIVE);")
            .map_err(db_err)
    }

    /// A pooled connection.
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when none is free in time.
    pub fn conn(
        &self,
    ) -> Result<diesel::r2d2::PooledConnection<crate::connection::ConnectionManager>, StorageError>
    {
        self.pool
            .get()
            .map_err(|e| StorageError::Unavailable(e.to_string()))
    }
}

/// A storage error inside a diesel transaction (which needs `From<diesel::result::Error>`).
enum TxError {
    Storage(StorageError),
    Diesel(DieselError),
}

impl From<DieselError> for TxError {
    fn from(e: DieselError) -> Self {
        TxError::Diesel(e)
    }
}

impl TxError {
    fn into_storage(self) -> StorageError {
        match self {
            TxError::Storage(e) => e,
            TxError::Diesel(e) => db_err(e),
        }
    }
}

/// Runs a query on the backend's own connection type rather than through the
/// `MultiConnection` wrapper: the same diesel expression, compiled for each backend, so hot
/// reads use the driver's prepared-statement cache and skip the wrapper's per-query SQL
/// rewriting (measured: SQLite spent its time re-parsing every query through the wrapper).
macro_rules! native {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Sqlite($c) => $body,
            DbConnection::Postgres($c) => $body,
        }
    };
}

diesel::define_sql_function! {
    /// SQL `COALESCE` of three nullable texts.
    #[sql_name = "COALESCE"]
    fn coalesce3(a: diesel::sql_types::Nullable<diesel::sql_types::Text>, b: diesel::sql_types::Nullable<diesel::sql_types::Text>, c: diesel::sql_types::Nullable<diesel::sql_types::Text>) -> diesel::sql_types::Nullable<diesel::sql_types::Text>;
}

/// Maps diesel errors to the domain's storage errors.
pub(crate) fn db_err(e: DieselError) -> StorageError {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            StorageError::UniqueViolation(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info) => {
            StorageError::ForeignKeyViolation(info.message().to_owned())
        }
        other => StorageError::Other(Box::new(other)),
    }
}

/// UTC instant → the naive UTC value stored.
pub(crate) fn to_db(t: OffsetDateTime) -> PrimitiveDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    PrimitiveDateTime::new(t.date(), t.time())
}

/// Stored naive UTC → instant.
pub(crate) fn from_db(t: PrimitiveDateTime) -> OffsetDateTime {
    t.assume_utc()
}

fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, StorageError> {
    s.parse()
        .map_err(|_| StorageError::Other(format!("stored {what} id is not a UUID: {s}").into()))
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = orgs)]
struct OrgRow {
    id: String,
    name: String,
    enable_proactive_conversation_starters: bool,
    max_budget_per_task: Option<f64>,
    registered_marketplaces: String,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl OrgRow {
    fn settings(&self) -> Result<OrgAppSettings, StorageError> {
        let registered_marketplaces: Vec<Marketplace> =
            serde_json::from_str(&self.registered_marketplaces).map_err(|e| {
                StorageError::Other(format!("stored marketplaces of org {}: {e}", self.id).into())
            })?;
        Ok(OrgAppSettings {
            org_id: parse_id(&self.id, "org")?,
            enable_proactive_conversation_starters: self.enable_proactive_conversation_starters,
            max_budget_per_task: self.max_budget_per_task,
            registered_marketplaces,
            updated_at: from_db(self.updated_at),
        })
    }

    fn org(&self) -> Result<Org, StorageError> {
        Ok(Org {
            id: parse_id(&self.id, "org")?,
            name: self.name.clone(),
            created_at: from_db(self.created_at),
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = users)]
struct UserRow {
    id: String,
    email: String,
    name: Option<String>,
    current_org_id: Option<String>,
    created_at: PrimitiveDateTime,
}

impl UserRow {
    fn user(self) -> Result<User, StorageError> {
        Ok(User {
            id: parse_id(&self.id, "user")?,
            email: self.email,
            name: self.name,
            current_org_id: self
                .current_org_id
                .as_deref()
                .map(|o| parse_id(o, "org"))
                .transpose()?,
            created_at: from_db(self.created_at),
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
            org_id: self
                .org_id
                .as_deref()
                .map(|o| parse_id(o, "org"))
                .transpose()?,
            name: self.name,
            display_prefix: self.display_prefix,
            created_at: from_db(self.created_at),
            last_used_at: self.last_used_at.map(from_db),
            expires_at: self.expires_at.map(from_db),
            revoked_at: self.revoked_at.map(from_db),
        })
    }
}

#[derive(AsChangeset)]
#[diesel(table_name = orgs)]
struct SettingsChangeset {
    enable_proactive_conversation_starters: Option<bool>,
    max_budget_per_task: Option<Option<f64>>,
    registered_marketplaces: Option<String>,
    updated_at: PrimitiveDateTime,
}

fn load_org(conn: &mut DbConnection, org: OrgId) -> Result<Option<OrgRow>, StorageError> {
    let id = org.to_string();
    native!(conn, |c| orgs::table
        .filter(orgs::id.eq(&id))
        .select(OrgRow::as_select())
        .get_result(c)
        .optional())
    .map_err(db_err)
}

impl IdentityStore for DieselStore {
    fn api_key_by_hash(
        &self,
        hash: &KeyHash,
        requested: Option<OrgId>,
    ) -> Result<Option<KeyLookup>, StorageError> {
        use diesel::sql_types::{Nullable, Text};
        let mut conn = self.conn()?;
        let requested = requested.map(|o| o.to_string());
        // The effective organization (API.md): bound org, else requested, else current.
        type Row = (
            ApiKeyRow,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<PrimitiveDateTime>,
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
                    orgs::id.nullable(),
                    orgs::name.nullable(),
                    orgs::created_at.nullable(),
                    org_members::role.nullable(),
                ))
                .get_result(c)
                .optional()
        })
        .map_err(db_err)?;
        row.map(|(k, current, org_id, org_name, org_created, role)| {
            let effective = match (org_id, org_name, org_created) {
                (Some(id), Some(name), Some(created_at)) => Some(OrgMembership {
                    org: Org {
                        id: parse_id(&id, "org")?,
                        name,
                        created_at: from_db(created_at),
                    },
                    role: role.as_deref().and_then(Role::parse),
                }),
                _ => None,
            };
            Ok(KeyLookup {
                key: k.record()?,
                user_current_org: current.as_deref().map(|o| parse_id(o, "org")).transpose()?,
                effective,
            })
        })
        .transpose()
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
        })
    }

    fn user(&self, id: UserId) -> Result<Option<User>, StorageError> {
        let mut conn = self.conn()?;
        users::table
            .filter(users::id.eq(id.to_string()))
            .select(UserRow::as_select())
            .get_result(&mut *conn)
            .optional()
            .map_err(db_err)?
            .map(UserRow::user)
            .transpose()
    }

    fn user_by_email(&self, email: &str) -> Result<Option<User>, StorageError> {
        let mut conn = self.conn()?;
        users::table
            .filter(users::email.eq(email))
            .select(UserRow::as_select())
            .get_result(&mut *conn)
            .optional()
            .map_err(db_err)?
            .map(UserRow::user)
            .transpose()
    }

    fn org_membership(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Option<OrgMembership>, StorageError> {
        let mut conn = self.conn()?;
        let (org_id, user_id) = (org.to_string(), user.to_string());
        let row: Option<(String, String, PrimitiveDateTime, Option<String>)> =
            native!(&mut *conn, |c| orgs::table
                .left_join(
                    org_members::table.on(org_members::org_id
                        .eq(orgs::id)
                        .and(org_members::user_id.eq(&user_id)))
                )
                .filter(orgs::id.eq(&org_id))
                .select((
                    orgs::id,
                    orgs::name,
                    orgs::created_at,
                    org_members::role.nullable()
                ))
                .get_result(c)
                .optional())
            .map_err(db_err)?;
        row.map(|(id, name, created_at, role)| {
            Ok(OrgMembership {
                org: Org {
                    id: parse_id(&id, "org")?,
                    name,
                    created_at: from_db(created_at),
                },
                role: role.as_deref().and_then(Role::parse),
            })
        })
        .transpose()
    }

    fn org_by_name(&self, name: &str) -> Result<Option<Org>, StorageError> {
        let mut conn = self.conn()?;
        orgs::table
            .filter(orgs::name.eq(name))
            .order(orgs::created_at.asc())
            .select(OrgRow::as_select())
            .first(&mut *conn)
            .optional()
            .map_err(db_err)?
            .map(|r| r.org())
            .transpose()
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
                orgs::registered_marketplaces.eq("[]"),
                orgs::created_at.eq(to_db(org.created_at)),
                orgs::updated_at.eq(to_db(org.created_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
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
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
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
        Ok(())
    }

    fn set_current_org(&self, user: UserId, org: OrgId) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::update(users::table.filter(users::id.eq(user.to_string())))
            .set(users::current_org_id.eq(Some(org.to_string())))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn insert_api_key(&self, key: &ApiKeyRecord, hash: &KeyHash) -> Result<(), StorageError> {
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
        api_keys::table
            .filter(api_keys::id.eq(id.to_string()))
            .select(ApiKeyRow::as_select())
            .get_result(&mut *conn)
            .optional()
            .map_err(db_err)?
            .map(ApiKeyRow::record)
            .transpose()
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
        Ok(exists)
    }
}

impl OrgSettingsStore for DieselStore {
    fn org_settings(&self, org: OrgId) -> Result<Option<OrgAppSettings>, StorageError> {
        let mut conn = self.conn()?;
        load_org(&mut conn, org)?.map(|r| r.settings()).transpose()
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
        self.write(|conn| {
            if kind == BackendKind::Postgres {
                use diesel::connection::SimpleConnection;
                // Writers of this row queue here. The id is a UUID we formatted: safe to inline.
                conn.batch_execute(&format!("SELECT 1 FROM orgs WHERE id = '{org}' FOR UPDATE"))
                    .map_err(db_err)?;
            }
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
                return Ok(
                    actual.map_or(SettingsWrite::NotFound, |actual| SettingsWrite::Stale {
                        actual,
                    }),
                );
            }
            let mut next = current;
            if let Some(v) = change.enable_proactive_conversation_starters {
                next.enable_proactive_conversation_starters = v;
            }
            if let Some(v) = change.max_budget_per_task {
                next.max_budget_per_task = v;
            }
            if let Some(v) = &change.registered_marketplaces {
                next.registered_marketplaces = v.clone();
            }
            next.updated_at = version;
            Ok(SettingsWrite::Written(next))
        })
    }
}

impl Store for DieselStore {
    fn ready(&self) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        match crate::connection::has_pending_migrations(&mut conn) {
            Ok(false) => Ok(()),
            Ok(true) => Err(StorageError::Unavailable("migrations are pending".into())),
            Err(e) => Err(StorageError::Other(Box::new(e))),
        }
    }
}

#[derive(Insertable)]
#[diesel(table_name = events)]
struct EventRow<'a> {
    conversation_id: &'a str,
    event_id: &'a str,
    kind: &'a str,
    source: &'a str,
    timestamp: &'a str,
    ts: PrimitiveDateTime,
    payload: &'a str,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = conversations)]
struct ConversationRow {
    id: String,
    org_id: String,
    owner_id: String,
    sandbox_id: Option<String>,
    title: Option<String>,
    execution_status: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl ConversationRow {
    fn conversation(self) -> Result<Conversation, StorageError> {
        Ok(Conversation {
            id: parse_id(&self.id, "conversation")?,
            org_id: parse_id(&self.org_id, "org")?,
            owner_id: parse_id(&self.owner_id, "user")?,
            sandbox_id: self
                .sandbox_id
                .as_deref()
                .map(|s| parse_id(s, "sandbox"))
                .transpose()?,
            title: self.title,
            execution_status: self.execution_status,
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
        })
    }
}

/// The advisory lock every append transaction takes on PostgreSQL, so that transactions commit
/// in `seq` order (a reader following `seq` never skips an event committed late).
const APPEND_LOCK_KEY: i64 = 0x5357_4254_4556; // "SWBTEV"

/// Ids per `IN (…)` list.
const ID_CHUNK: usize = 500;

#[derive(QueryableByName)]
struct ReturnedOrg {
    #[diesel(sql_type = diesel::sql_types::Text)]
    #[allow(dead_code)]
    org_id: String,
}

/// Creates the conversation if unknown, else sets its run state (when given) and activity
/// time, unless it belongs to another organization: `false` then (nothing written). One
/// upsert statement; concurrent first appends to a new conversation both succeed.
fn touch_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
    status: Option<&str>,
    now: OffsetDateTime,
) -> Result<bool, StorageError> {
    use diesel::sql_types::{Nullable, Text, Timestamp};
    const UPSERT: &str = "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, title, execution_status, metadata, created_at, updated_at) \
        VALUES (?1, ?2, ?3, ?4, NULL, ?5, NULL, ?6, ?6) \
        ON CONFLICT (id) DO UPDATE SET execution_status = COALESCE(excluded.execution_status, conversations.execution_status), \
        updated_at = excluded.updated_at WHERE conversations.org_id = excluded.org_id RETURNING org_id";
    let sql = match conn {
        DbConnection::Sqlite(_) => UPSERT.to_owned(),
        DbConnection::Postgres(_) => UPSERT.replace('?', "$"),
    };
    let q = diesel::sql_query(sql)
        .bind::<Text, _>(conv.id.to_string())
        .bind::<Text, _>(conv.org_id.to_string())
        .bind::<Text, _>(conv.owner_id.to_string())
        .bind::<Nullable<Text>, _>(conv.sandbox_id.map(|s| s.to_string()))
        .bind::<Nullable<Text>, _>(status)
        .bind::<Timestamp, _>(to_db(now));
    let rows: Vec<ReturnedOrg> = native!(conn, |c| q.load(c)).map_err(db_err)?;
    Ok(!rows.is_empty())
}

/// The org of a conversation, if it exists.
fn conversation_org(conn: &mut DbConnection, id: &str) -> Result<Option<String>, StorageError> {
    native!(conn, |c| conversations::table
        .filter(conversations::id.eq(id))
        .select(conversations::org_id)
        .get_result::<String>(c)
        .optional())
    .map_err(db_err)
}

fn insert_conversation(
    conn: &mut DbConnection,
    conv: &Conversation,
    metadata: Option<&str>,
) -> Result<(), StorageError> {
    diesel::insert_into(conversations::table)
        .values((
            conversations::id.eq(conv.id.to_string()),
            conversations::org_id.eq(conv.org_id.to_string()),
            conversations::owner_id.eq(conv.owner_id.to_string()),
            conversations::sandbox_id.eq(conv.sandbox_id.map(|s| s.to_string())),
            conversations::title.eq(&conv.title),
            conversations::execution_status.eq(&conv.execution_status),
            conversations::metadata.eq(metadata),
            conversations::created_at.eq(to_db(conv.created_at)),
            conversations::updated_at.eq(to_db(conv.updated_at)),
        ))
        .execute(conn)
        .map_err(db_err)?;
    Ok(())
}

impl EventStore for DieselStore {
    fn create_sandbox(&self, sandbox: &Sandbox, key_hash: &KeyHash) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(sandboxes::table)
            .values((
                sandboxes::id.eq(sandbox.id.to_string()),
                sandboxes::org_id.eq(sandbox.org_id.to_string()),
                sandboxes::owner_id.eq(sandbox.owner_id.to_string()),
                sandboxes::session_key_hash.eq(&key_hash.0),
                sandboxes::created_at.eq(to_db(sandbox.created_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn sandbox_by_key_hash(&self, hash: &KeyHash) -> Result<Option<Sandbox>, StorageError> {
        let mut conn = self.conn()?;
        let row: Option<(String, String, String, PrimitiveDateTime)> =
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::session_key_hash.eq(&hash.0))
                .select((
                    sandboxes::id,
                    sandboxes::org_id,
                    sandboxes::owner_id,
                    sandboxes::created_at
                ))
                .get_result(c)
                .optional())
            .map_err(db_err)?;
        row.map(|(id, org, owner, created)| {
            Ok(Sandbox {
                id: parse_id(&id, "sandbox")?,
                org_id: parse_id(&org, "org")?,
                owner_id: parse_id(&owner, "user")?,
                created_at: from_db(created),
            })
        })
        .transpose()
    }

    fn conversation(&self, id: ConversationId) -> Result<Option<Conversation>, StorageError> {
        let mut conn = self.conn()?;
        let id = id.to_string();
        native!(&mut *conn, |c| conversations::table
            .filter(conversations::id.eq(&id))
            .select(ConversationRow::as_select())
            .get_result(c)
            .optional())
        .map_err(db_err)?
        .map(ConversationRow::conversation)
        .transpose()
    }

    /// Group commit: concurrent appends are combined into one transaction (see
    /// `AppendCombiner` in this module), so the commit, its fsync and the append lock are paid once per
    /// group rather than once per batch.
    fn append_events(
        &self,
        conversation: Conversation,
        events: Vec<NewEvent>,
        status: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Option<AppendOutcome>, StorageError> {
        self.appends.clone().append(
            self,
            PendingAppend {
                conversation,
                events,
                status,
                now,
            },
        )
    }

    fn upsert_conversation_info(
        &self,
        conversation: &Conversation,
        metadata: &str,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let conv_id = conversation.id.to_string();
        self.write(|conn| match conversation_org(conn, &conv_id)? {
            Some(org) if org != conversation.org_id.to_string() => Ok(false),
            Some(_) => {
                let target = conversations::table.filter(conversations::id.eq(&conv_id));
                diesel::update(target)
                    .set((
                        conversations::metadata.eq(Some(metadata)),
                        conversations::updated_at.eq(to_db(now)),
                    ))
                    .execute(conn)
                    .map_err(db_err)?;
                if let Some(t) = &conversation.title {
                    diesel::update(target)
                        .set(conversations::title.eq(Some(t)))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                if let Some(s) = &conversation.execution_status {
                    diesel::update(target)
                        .set(conversations::execution_status.eq(Some(s)))
                        .execute(conn)
                        .map_err(db_err)?;
                }
                Ok(true)
            }
            None => {
                insert_conversation(conn, conversation, Some(metadata))?;
                Ok(true)
            }
        })
    }

    fn search_events(
        &self,
        conversation: ConversationId,
        query: &SearchQuery,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let rows: Vec<(i64, PrimitiveDateTime, String)> = native!(&mut *conn, |c| {
            let mut q = events::table
                .filter(events::conversation_id.eq(&conv))
                .select((events::seq, events::ts, events::payload))
                .into_boxed();
            if let Some(k) = query.filter.kind {
                q = q.filter(events::kind.eq(k.as_str()));
            }
            if let Some(t) = query.filter.timestamp_gte {
                q = q.filter(events::ts.ge(to_db(t)));
            }
            if let Some(t) = query.filter.timestamp_lt {
                q = q.filter(events::ts.lt(to_db(t)));
            }
            match (query.sort, query.after) {
                // The redundant `ts >=` / `ts <=` bound gives the planner an index range
                // (ARCHITECTURE.md: the OR alone is a full scan on PostgreSQL).
                (SortOrder::Timestamp, Some(after)) => {
                    let t = to_db(after.ts);
                    q = q.filter(events::ts.ge(t)).filter(
                        events::ts
                            .gt(t)
                            .or(events::ts.eq(t).and(events::seq.gt(after.seq))),
                    );
                }
                (SortOrder::TimestampDesc, Some(after)) => {
                    let t = to_db(after.ts);
                    q = q.filter(events::ts.le(t)).filter(
                        events::ts
                            .lt(t)
                            .or(events::ts.eq(t).and(events::seq.lt(after.seq))),
                    );
                }
                _ => {}
            }
            q = match query.sort {
                SortOrder::Timestamp => q.order((events::ts.asc(), events::seq.asc())),
                SortOrder::TimestampDesc => q.order((events::ts.desc(), events::seq.desc())),
            };
            q.limit(i64::from(query.limit) + 1).load(c)
        })
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts, payload)| StoredEvent {
                seq,
                ts: from_db(ts),
                payload,
            })
            .collect())
    }

    fn count_events(
        &self,
        conversation: ConversationId,
        filter: &EventFilter,
    ) -> Result<i64, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        native!(&mut *conn, |c| {
            let mut q = events::table
                .filter(events::conversation_id.eq(&conv))
                .into_boxed();
            if let Some(k) = filter.kind {
                q = q.filter(events::kind.eq(k.as_str()));
            }
            if let Some(t) = filter.timestamp_gte {
                q = q.filter(events::ts.ge(to_db(t)));
            }
            if let Some(t) = filter.timestamp_lt {
                q = q.filter(events::ts.lt(to_db(t)));
            }
            q.count().get_result(c)
        })
        .map_err(db_err)
    }

    fn get_events(
        &self,
        conversation: ConversationId,
        ids: &[String],
    ) -> Result<Vec<(String, String)>, StorageError> {
        let mut conn = self.conn()?;
        let conv = conversation.to_string();
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ID_CHUNK) {
            let rows: Vec<(String, String)> = native!(&mut *conn, |c| events::table
                .filter(events::conversation_id.eq(&conv))
                .filter(events::event_id.eq_any(chunk))
                .select((events::event_id, events::payload))
                .load(c))
            .map_err(db_err)?;
            out.extend(rows);
        }
        Ok(out)
    }
}

/// One append waiting for its group.
struct PendingAppend {
    conversation: Conversation,
    events: Vec<NewEvent>,
    status: Option<String>,
    now: OffsetDateTime,
}

type AppendResult = Result<Option<AppendOutcome>, StorageError>;

#[derive(Default)]
struct CombinerQueue {
    next_ticket: u64,
    waiting: Vec<(u64, PendingAppend)>,
    done: std::collections::HashMap<u64, AppendResult>,
}

/// Group commit for appends ("flat combining"): each caller queues its append; whoever holds
/// the leader lock drains the queue and commits every queued append in one transaction, in
/// queue order, then hands each caller its result. A caller returns only after the transaction
/// holding its events committed, so a 2xx still means durable. If a group transaction fails,
/// its appends are retried one by one, so one bad append cannot fail the others.
#[derive(Default)]
pub(crate) struct AppendCombiner {
    queue: std::sync::Mutex<CombinerQueue>,
    finished: std::sync::Condvar,
    leader: std::sync::Mutex<()>,
}

/// At most this many appends per group transaction.
const MAX_GROUP: usize = 64;

impl AppendCombiner {
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, CombinerQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn append(&self, store: &DieselStore, pending: PendingAppend) -> AppendResult {
        let ticket = {
            let mut q = self.lock_queue();
            q.next_ticket += 1;
            let t = q.next_ticket;
            q.waiting.push((t, pending));
            t
        };
        loop {
            if let Some(r) = self.lock_queue().done.remove(&ticket) {
                return r;
            }
            match self.leader.try_lock() {
                Ok(_leader) => {
                    let group: Vec<(u64, PendingAppend)> = {
                        let mut q = self.lock_queue();
                        let n = q.waiting.len().min(MAX_GROUP);
                        q.waiting.drain(..n).collect()
                    };
                    if group.is_empty() {
                        continue;
                    }
                    let results = commit_group(store, &group);
                    self.lock_queue().done.extend(results);
                    self.finished.notify_all();
                }
                Err(_) => {
                    let q = self.lock_queue();
                    if !q.done.contains_key(&ticket) {
                        // Bounded: a missed wake-up costs at most this long.
                        let _ = self
                            .finished
                            .wait_timeout(q, std::time::Duration::from_millis(5));
                    }
                }
            }
        }
    }
}

/// Commits a group in one transaction; on failure, each append alone.
fn commit_group(store: &DieselStore, group: &[(u64, PendingAppend)]) -> Vec<(u64, AppendResult)> {
    let appends: Vec<&PendingAppend> = group.iter().map(|(_, p)| p).collect();
    match store.write(|conn| append_all(conn, &appends)) {
        Ok(outcomes) => group
            .iter()
            .map(|(t, _)| *t)
            .zip(outcomes.into_iter().map(Ok))
            .collect(),
        Err(_) if group.len() > 1 => group
            .iter()
            .map(|(t, p)| {
                (
                    *t,
                    store
                        .write(|conn| append_all(conn, &[p]))
                        .map(|mut o| o.remove(0)),
                )
            })
            .collect(),
        Err(e) => vec![(group[0].0, Err(e))],
    }
}

/// Appends a group in the current transaction, with a fixed number of statements whatever its
/// size: the append lock, one upsert per distinct conversation (its last run state in group
/// order), and one multi-row insert (PostgreSQL; SQLite inserts row by row in process). An
/// event id repeated within an append or across the group's appends to one conversation counts
/// for its first occurrence; ids already stored are skipped by the unique index.
fn append_all(
    conn: &mut DbConnection,
    appends: &[&PendingAppend],
) -> Result<Vec<Option<AppendOutcome>>, StorageError> {
    use std::collections::{HashMap, HashSet};
    lock_appends(conn)?;
    let ids: Vec<String> = appends
        .iter()
        .map(|p| p.conversation.id.to_string())
        .collect();
    // One touch per conversation, in first-appearance order, with the last status and time.
    let mut allowed: HashMap<&str, bool> = HashMap::new();
    for (i, p) in appends.iter().enumerate() {
        if allowed.contains_key(ids[i].as_str()) {
            continue;
        }
        let same = || {
            appends
                .iter()
                .zip(&ids)
                .filter(|(_, id)| *id == &ids[i])
                .map(|(q, _)| *q)
        };
        let status = same().filter_map(|q| q.status.as_deref()).next_back();
        let now = same().map(|q| q.now).max().unwrap_or(p.now);
        allowed.insert(
            &ids[i],
            touch_conversation(conn, &p.conversation, status, now)?,
        );
    }
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut rows: Vec<EventRow<'_>> = Vec::new();
    let mut owner: Vec<usize> = Vec::new();
    for (i, p) in appends.iter().enumerate() {
        if !allowed[ids[i].as_str()] {
            continue;
        }
        for e in &p.events {
            if seen.insert((ids[i].as_str(), e.event_id.as_str())) {
                rows.push(EventRow {
                    conversation_id: &ids[i],
                    event_id: &e.event_id,
                    kind: e.kind,
                    source: e.source,
                    timestamp: &e.timestamp,
                    ts: to_db(e.ts),
                    payload: &e.payload,
                });
                owner.push(i);
            }
        }
    }
    let mut stored = vec![0usize; appends.len()];
    match conn {
        DbConnection::Postgres(c) => {
            for (chunk, owners) in rows.chunks(ID_CHUNK).zip(owner.chunks(ID_CHUNK)) {
                let inserted: Vec<(String, String)> = diesel::insert_into(events::table)
                    .values(chunk)
                    .on_conflict((events::conversation_id, events::event_id))
                    .do_nothing()
                    .returning((events::conversation_id, events::event_id))
                    .get_results(c)
                    .map_err(db_err)?;
                let inserted: HashSet<(&str, &str)> = inserted
                    .iter()
                    .map(|(c, e)| (c.as_str(), e.as_str()))
                    .collect();
                for (row, &i) in chunk.iter().zip(owners) {
                    if inserted.contains(&(row.conversation_id, row.event_id)) {
                        stored[i] += 1;
                    }
                }
            }
        }
        // diesel runs a SQLite batch insert in a transaction of its own, which cannot nest in
        // ours: one cached single-row INSERT per event instead (in process, no round trips).
        DbConnection::Sqlite(c) => {
            for (row, &i) in rows.iter().zip(&owner) {
                stored[i] += diesel::insert_into(events::table)
                    .values(row)
                    .on_conflict((events::conversation_id, events::event_id))
                    .do_nothing()
                    .execute(c)
                    .map_err(db_err)?;
            }
        }
    }
    Ok(appends
        .iter()
        .enumerate()
        .map(|(i, p)| {
            allowed[ids[i].as_str()].then(|| AppendOutcome {
                stored: stored[i],
                skipped: p.events.len() - stored[i],
            })
        })
        .collect())
}

/// On PostgreSQL, the advisory lock that makes appends of all processes commit in `seq` order
/// (ARCHITECTURE.md, Storage); SQLite has one writer anyway.
fn lock_appends(conn: &mut DbConnection) -> Result<(), StorageError> {
    if let DbConnection::Postgres(c) = conn {
        use diesel::connection::SimpleConnection;
        c.batch_execute(&format!("SELECT pg_advisory_xact_lock({APPEND_LOCK_KEY})"))
            .map_err(db_err)?;
    }
    Ok(())
}

//! Members managed through the API and the operator's commands ([`MemberStore`], issue 34):
//! each change and its audit entry in one transaction, serialized per organization (its row
//! locked on PostgreSQL; SQLite's single writer), so two concurrent removals cannot leave an
//! organization without an owner. Every change drops the key caches of every replica
//! ([`DieselStore::identity_changed`]) after it commits.

use diesel::prelude::*;
use switchboard_domain::identity::User;
use switchboard_domain::identity::audit::{Actor, AuditAction, AuditEntry, AuditRecord};
use switchboard_domain::ports::{MemberChange, MemberQuery, MemberRow, MemberStore, UserRemoval};
use switchboard_domain::{OrgId, Role, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::identity::UserRow;
use super::rows::{
    contains_pattern, db_err, from_db, lock_row, lower, parse_id, parse_opt_id, to_db,
};
use crate::connection::DbConnection;
use crate::schema::{api_keys, audit_log, org_members, users};

/// A stored audit entry.
#[derive(Queryable, Selectable)]
#[diesel(table_name = audit_log)]
struct AuditRow {
    id: i64,
    org_id: Option<String>,
    actor_user_id: Option<String>,
    actor_email: Option<String>,
    action: String,
    target_user_id: Option<String>,
    target_email: Option<String>,
    detail: String,
    remote_addr: Option<String>,
    created_at: PrimitiveDateTime,
}

impl AuditRow {
    fn record(self) -> Result<AuditRecord, StorageError> {
        let actor = match parse_opt_id(self.actor_user_id.as_deref(), "user")? {
            Some(id) => Actor::User {
                id,
                email: self.actor_email.unwrap_or_default(),
            },
            None => Actor::Operator,
        };
        let target = parse_opt_id(self.target_user_id.as_deref(), "user")?
            .map(|id| (id, self.target_email.unwrap_or_default()));
        Ok(AuditRecord {
            id: self.id,
            entry: AuditEntry {
                org: parse_opt_id(self.org_id.as_deref(), "org")?,
                actor,
                action: AuditAction::parse(&self.action).ok_or_else(|| {
                    StorageError::Other(format!("stored audit action {:?}", self.action).into())
                })?,
                target,
                detail: serde_json::from_str(&self.detail)
                    .map_err(|e| StorageError::Other(format!("stored audit detail: {e}").into()))?,
                remote_addr: self.remote_addr,
                at: from_db(self.created_at),
            },
        })
    }
}

/// Writes an audit entry on `conn`.
pub(super) fn insert_audit(
    conn: &mut DbConnection,
    entry: &AuditEntry,
) -> Result<(), StorageError> {
    let (actor_id, actor_email) = match &entry.actor {
        Actor::User { id, email } => (Some(id.to_string()), Some(email.clone())),
        Actor::Operator => (None, None),
    };
    let values = (
        audit_log::org_id.eq(entry.org.map(|o| o.to_string())),
        audit_log::actor_user_id.eq(actor_id),
        audit_log::actor_email.eq(actor_email),
        audit_log::action.eq(entry.action.as_str()),
        audit_log::target_user_id.eq(entry.target.as_ref().map(|(u, _)| u.to_string())),
        audit_log::target_email.eq(entry.target.as_ref().map(|(_, e)| e.clone())),
        audit_log::detail.eq(entry.detail.to_string()),
        audit_log::remote_addr.eq(entry.remote_addr.clone()),
        audit_log::created_at.eq(to_db(entry.at)),
    );
    native!(conn, |c| diesel::insert_into(audit_log::table)
        .values(values)
        .execute(c))
    .map_err(db_err)?;
    Ok(())
}

/// `user`'s role in `org` on `conn`, `None` when not a member.
fn role_of(conn: &mut DbConnection, org: &str, user: &str) -> Result<Option<Role>, StorageError> {
    let role: Option<String> = native!(conn, |c| org_members::table
        .filter(org_members::org_id.eq(org))
        .filter(org_members::user_id.eq(user))
        .select(org_members::role)
        .get_result(c)
        .optional())
    .map_err(db_err)?;
    Ok(role.as_deref().and_then(Role::parse))
}

/// The number of owners of `org` on `conn`.
fn owners(conn: &mut DbConnection, org: &str) -> Result<i64, StorageError> {
    native!(conn, |c| org_members::table
        .filter(org_members::org_id.eq(org))
        .filter(org_members::role.eq(Role::Owner.as_str()))
        .count()
        .get_result(c))
    .map_err(db_err)
}

/// A members query's values, formatted for the database once.
struct Narrowing {
    org: String,
    pattern: Option<String>,
    position: Option<(PrimitiveDateTime, String)>,
}

impl Narrowing {
    fn of(org: OrgId, query: MemberQuery<'_>) -> Narrowing {
        Narrowing {
            org: org.to_string(),
            pattern: query.email.map(contains_pattern),
            position: query
                .position
                .map(|p| (to_db(p.joined_at), p.user_id.to_string())),
        }
    }
}

/// The boxed query of one organization's members (joined with their users) matching a
/// [`Narrowing`]'s e-mail filter: the one place it is written, for pages and counts.
macro_rules! members_matching {
    ($n:expr) => {{
        let n: &Narrowing = $n;
        let mut q = org_members::table
            .inner_join(users::table)
            .filter(org_members::org_id.eq(&n.org))
            .into_boxed();
        if let Some(p) = &n.pattern {
            q = q.filter(lower(users::email.nullable()).like(p).escape('\\'));
        }
        q
    }};
}

impl DieselStore {
    /// Runs a change to `org`'s members in a transaction holding the organization's row, then
    /// drops every replica's cached key lookups.
    fn member_write<T>(
        &self,
        org: &str,
        f: impl FnOnce(&mut DbConnection) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let kind = self.kind;
        let out = self.write(|conn| {
            lock_row(conn, kind, "orgs", &format!("id = '{org}'"))?;
            let out = f(conn)?;
            self.identity_changed(conn);
            Ok(out)
        })?;
        self.keys.clear();
        Ok(out)
    }
}

impl MemberStore for DieselStore {
    fn members_page(
        &self,
        org: OrgId,
        query: MemberQuery<'_>,
        limit: u32,
    ) -> Result<Vec<MemberRow>, StorageError> {
        let mut conn = self.conn()?;
        let n = Narrowing::of(org, query);
        let rows: Vec<(
            String,
            String,
            String,
            PrimitiveDateTime,
            Option<PrimitiveDateTime>,
        )> = native!(&mut *conn, |c| {
            let mut q = members_matching!(&n);
            if let Some((t, u)) = &n.position {
                // `>= t` first: the index range starts there (an OR alone scans from the
                // organization's first member).
                q = q.filter(org_members::created_at.ge(*t)).filter(
                    org_members::created_at
                        .gt(*t)
                        .or(org_members::user_id.gt(u)),
                );
            }
            q.order((org_members::created_at.asc(), org_members::user_id.asc()))
                .limit(i64::from(limit))
                .select((
                    org_members::user_id,
                    users::email,
                    org_members::role,
                    org_members::created_at,
                    users::disabled_at,
                ))
                .load(c)
        })
        .map_err(db_err)?;
        rows.into_iter()
            .map(|(user, email, role, joined, disabled)| {
                Ok(MemberRow {
                    user_id: parse_id(&user, "user")?,
                    email,
                    role: Role::parse(&role).ok_or_else(|| {
                        StorageError::Other(format!("stored role {role:?}").into())
                    })?,
                    joined_at: from_db(joined),
                    disabled: disabled.is_some(),
                })
            })
            .collect()
    }

    fn count_members(&self, org: OrgId, query: MemberQuery<'_>) -> Result<i64, StorageError> {
        let mut conn = self.conn()?;
        let n = Narrowing::of(org, query);
        // Without an e-mail filter the members' rows alone answer (the index
        // `org_members_joined`, no join with users).
        macro_rules! up_to_position {
            ($q:expr) => {{
                let mut q = $q;
                if let Some((t, u)) = &n.position {
                    q = q.filter(org_members::created_at.le(*t)).filter(
                        org_members::created_at
                            .lt(*t)
                            .or(org_members::user_id.le(u)),
                    );
                }
                q
            }};
        }
        native!(&mut *conn, |c| {
            if n.pattern.is_some() {
                up_to_position!(members_matching!(&n)).count().get_result(c)
            } else {
                up_to_position!(
                    org_members::table
                        .filter(org_members::org_id.eq(&n.org))
                        .into_boxed()
                )
                .count()
                .get_result(c)
            }
        })
        .map_err(db_err)
    }

    fn add_member(
        &self,
        org: OrgId,
        user: UserId,
        role: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        let now = to_db(audit.at);
        self.member_write(&o, |conn| {
            if role_of(conn, &o, &u)?.is_some() {
                return Ok(MemberChange::Stale);
            }
            native!(conn, |c| (|| -> QueryResult<usize> {
                diesel::insert_into(org_members::table)
                    .values((
                        org_members::org_id.eq(&o),
                        org_members::user_id.eq(&u),
                        org_members::role.eq(role.as_str()),
                        org_members::created_at.eq(now),
                    ))
                    .execute(c)?;
                diesel::update(
                    users::table
                        .filter(users::id.eq(&u))
                        .filter(users::current_org_id.is_null()),
                )
                .set(users::current_org_id.eq(Some(&o)))
                .execute(c)
            })())
            .map_err(db_err)?;
            insert_audit(conn, audit)?;
            Ok(MemberChange::Done)
        })
    }

    fn change_member_role(
        &self,
        org: OrgId,
        user: UserId,
        from: Role,
        to: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.member_write(&o, |conn| {
            if role_of(conn, &o, &u)? != Some(from) {
                return Ok(MemberChange::Stale);
            }
            if from == Role::Owner && to != Role::Owner && owners(conn, &o)? <= 1 {
                return Ok(MemberChange::LastOwner);
            }
            native!(conn, |c| diesel::update(
                org_members::table
                    .filter(org_members::org_id.eq(&o))
                    .filter(org_members::user_id.eq(&u))
            )
            .set(org_members::role.eq(to.as_str()))
            .execute(c))
            .map_err(db_err)?;
            insert_audit(conn, audit)?;
            Ok(MemberChange::Done)
        })
    }

    fn remove_member(
        &self,
        org: OrgId,
        user: UserId,
        from: Role,
        audit: &AuditEntry,
    ) -> Result<MemberChange, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        let now = to_db(audit.at);
        self.member_write(&o, |conn| {
            if role_of(conn, &o, &u)? != Some(from) {
                return Ok(MemberChange::Stale);
            }
            if from == Role::Owner && owners(conn, &o)? <= 1 {
                return Ok(MemberChange::LastOwner);
            }
            native!(conn, |c| (|| -> QueryResult<usize> {
                diesel::delete(
                    org_members::table
                        .filter(org_members::org_id.eq(&o))
                        .filter(org_members::user_id.eq(&u)),
                )
                .execute(c)?;
                // Keys bound to the organization can never act again: revoked, so the
                // member's key list says so.
                diesel::update(
                    api_keys::table
                        .filter(api_keys::user_id.eq(&u))
                        .filter(api_keys::org_id.eq(&o))
                        .filter(api_keys::revoked_at.is_null()),
                )
                .set(api_keys::revoked_at.eq(Some(now)))
                .execute(c)?;
                // The current organization moves to the oldest one left, or none.
                let next: Option<String> = org_members::table
                    .filter(org_members::user_id.eq(&u))
                    .order((org_members::created_at.asc(), org_members::org_id.asc()))
                    .select(org_members::org_id)
                    .first(c)
                    .optional()?;
                diesel::update(
                    users::table
                        .filter(users::id.eq(&u))
                        .filter(users::current_org_id.eq(&o)),
                )
                .set(users::current_org_id.eq(next))
                .execute(c)
            })())
            .map_err(db_err)?;
            insert_audit(conn, audit)?;
            Ok(MemberChange::Done)
        })
    }

    fn users_page(
        &self,
        email: Option<&str>,
        after: Option<(OffsetDateTime, UserId)>,
        limit: u32,
    ) -> Result<Vec<User>, StorageError> {
        let mut conn = self.conn()?;
        let pattern = email.map(contains_pattern);
        let after = after.map(|(t, u)| (to_db(t), u.to_string()));
        let rows: Vec<UserRow> = native!(&mut *conn, |c| {
            let mut q = users::table.into_boxed();
            if let Some(p) = &pattern {
                q = q.filter(lower(users::email.nullable()).like(p).escape('\\'));
            }
            if let Some((t, u)) = &after {
                q = q.filter(
                    users::created_at
                        .gt(*t)
                        .or(users::created_at.eq(*t).and(users::id.gt(u))),
                );
            }
            q.order((users::created_at.asc(), users::id.asc()))
                .limit(i64::from(limit))
                .select(UserRow::as_select())
                .load(c)
        })
        .map_err(db_err)?;
        rows.into_iter().map(UserRow::user).collect()
    }

    fn set_user_disabled(
        &self,
        user: UserId,
        at: Option<OffsetDateTime>,
        audit: &AuditEntry,
    ) -> Result<bool, StorageError> {
        let u = user.to_string();
        let found = self.write(|conn| {
            let n = native!(conn, |c| diesel::update(
                users::table.filter(users::id.eq(&u))
            )
            .set(users::disabled_at.eq(at.map(to_db)))
            .execute(c))
            .map_err(db_err)?;
            if n > 0 {
                insert_audit(conn, audit)?;
                self.identity_changed(conn);
            }
            Ok(n > 0)
        })?;
        self.keys.clear();
        Ok(found)
    }

    fn remove_user(&self, user: UserId, audit: &AuditEntry) -> Result<UserRemoval, StorageError> {
        let u = user.to_string();
        let kind = self.kind;
        let removal = self.write(|conn| {
            let owned: Vec<String> = native!(conn, |c| org_members::table
                .filter(org_members::user_id.eq(&u))
                .filter(org_members::role.eq(Role::Owner.as_str()))
                .select(org_members::org_id)
                .load(c))
            .map_err(db_err)?;
            let mut sole = Vec::new();
            for org in owned {
                lock_row(conn, kind, "orgs", &format!("id = '{org}'"))?;
                if owners(conn, &org)? <= 1 {
                    sole.push(parse_id(&org, "org")?);
                }
            }
            if !sole.is_empty() {
                return Ok(UserRemoval::LastOwnerOf(sole));
            }
            let n = native!(conn, |c| diesel::delete(
                users::table.filter(users::id.eq(&u))
            )
            .execute(c))
            .map_err(db_err)?;
            if n == 0 {
                return Ok(UserRemoval::NotFound);
            }
            insert_audit(conn, audit)?;
            self.identity_changed(conn);
            Ok(UserRemoval::Removed)
        })?;
        self.keys.clear();
        Ok(removal)
    }

    fn append_audit(&self, entry: &AuditEntry) -> Result<(), StorageError> {
        self.write(|conn| insert_audit(conn, entry))
    }

    fn audit_page(
        &self,
        org: Option<OrgId>,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, StorageError> {
        let mut conn = self.conn()?;
        let org = org.map(|o| o.to_string());
        let rows: Vec<AuditRow> = native!(&mut *conn, |c| {
            let mut q = audit_log::table.into_boxed();
            q = match &org {
                Some(o) => q.filter(audit_log::org_id.eq(o)),
                None => q.filter(audit_log::org_id.is_null()),
            };
            if let Some(b) = before {
                q = q.filter(audit_log::id.lt(b));
            }
            q.order(audit_log::id.desc())
                .limit(i64::from(limit))
                .select(AuditRow::as_select())
                .load(c)
        })
        .map_err(db_err)?;
        rows.into_iter().map(AuditRow::record).collect()
    }
}

//! Sign-in's storage ([`SignInStore`], issue 34): provider identities, sign-ins in flight
//! (taken once), browser sessions, and device authorizations whose polls are decided in one
//! transaction each (the row locked on PostgreSQL; SQLite's single writer), so an approved
//! code gives out one key however many polls race.

use diesel::prelude::*;
use switchboard_domain::identity::User;
use switchboard_domain::identity::audit::AuditEntry;
use switchboard_domain::identity::sign_in::{
    DeviceGrant, DevicePoll, DeviceStatus, SignInState, WebSession,
};
use switchboard_domain::ports::{IdentityLink, NewDeviceGrant, NewWebSession, SignInStore};
use switchboard_domain::{OrgId, Role, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::members::insert_audit;
use super::rows::{db_err, from_db, lock_row, parse_id, parse_opt_id, to_db};
use crate::connection::DbConnection;
use crate::schema::{
    device_grants, org_members, sign_in_states, user_identities, users, web_sessions,
};

/// A device grant's columns as a poll and the verification page read them.
type GrantRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    Option<PrimitiveDateTime>,
    PrimitiveDateTime,
    PrimitiveDateTime,
);

/// A device grant's columns as a poll reads them: user code, status, user, interval, last
/// poll, expiry.
type PollRow = (
    String,
    String,
    Option<String>,
    i64,
    Option<PrimitiveDateTime>,
    PrimitiveDateTime,
);

/// The status column and its user as a [`DeviceStatus`].
fn status_of(status: &str, user: Option<&str>) -> Result<DeviceStatus, StorageError> {
    match (status, user) {
        ("pending", _) => Ok(DeviceStatus::Pending),
        ("denied", _) => Ok(DeviceStatus::Denied),
        ("approved", Some(u)) => Ok(DeviceStatus::Approved(parse_id(u, "user")?)),
        _ => Err(StorageError::Other(
            format!("stored device grant status {status:?}").into(),
        )),
    }
}

/// Inserts an identity link on `conn`.
fn insert_identity(
    conn: &mut DbConnection,
    user: UserId,
    link: &IdentityLink<'_>,
) -> QueryResult<usize> {
    let values = (
        user_identities::issuer.eq(link.issuer),
        user_identities::subject.eq(link.subject),
        user_identities::user_id.eq(user.to_string()),
        user_identities::email.eq(link.email),
        user_identities::created_at.eq(to_db(link.at)),
        user_identities::last_sign_in_at.eq(to_db(link.at)),
    );
    native!(conn, |c| diesel::insert_into(user_identities::table)
        .values(values)
        .execute(c))
}

impl SignInStore for DieselStore {
    fn put_sign_in_state(&self, state_hash: &str, state: &SignInState) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(sign_in_states::table)
            .values((
                sign_in_states::state_hash.eq(state_hash),
                sign_in_states::nonce.eq(&state.nonce),
                sign_in_states::pkce_verifier.eq(&state.pkce_verifier),
                sign_in_states::return_to.eq(&state.return_to),
                sign_in_states::expires_at.eq(to_db(state.expires_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn take_sign_in_state(
        &self,
        state_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<SignInState>, StorageError> {
        self.write(|conn| {
            let row: Option<(String, String, String, PrimitiveDateTime)> = native!(conn, |c| {
                sign_in_states::table
                    .filter(sign_in_states::state_hash.eq(state_hash))
                    .select((
                        sign_in_states::nonce,
                        sign_in_states::pkce_verifier,
                        sign_in_states::return_to,
                        sign_in_states::expires_at,
                    ))
                    .get_result(c)
                    .optional()
            })
            .map_err(db_err)?;
            // Deleted whether it lapsed or not: a state is used once.
            let gone = native!(conn, |c| diesel::delete(
                sign_in_states::table.filter(sign_in_states::state_hash.eq(state_hash))
            )
            .execute(c))
            .map_err(db_err)?;
            Ok(row
                .filter(|_| gone == 1)
                .and_then(|(nonce, pkce_verifier, return_to, exp)| {
                    let expires_at = from_db(exp);
                    (expires_at > now).then_some(SignInState {
                        nonce,
                        pkce_verifier,
                        return_to,
                        expires_at,
                    })
                }))
        })
    }

    fn user_by_identity(
        &self,
        issuer: &str,
        subject: &str,
    ) -> Result<Option<UserId>, StorageError> {
        let mut conn = self.conn()?;
        let id: Option<String> = user_identities::table
            .filter(user_identities::issuer.eq(issuer))
            .filter(user_identities::subject.eq(subject))
            .select(user_identities::user_id)
            .get_result(&mut *conn)
            .optional()
            .map_err(db_err)?;
        parse_opt_id(id.as_deref(), "user")
    }

    fn link_identity(&self, user: UserId, link: &IdentityLink<'_>) -> Result<(), StorageError> {
        self.write(|conn| {
            let updated = native!(conn, |c| diesel::update(
                user_identities::table
                    .filter(user_identities::issuer.eq(link.issuer))
                    .filter(user_identities::subject.eq(link.subject))
            )
            .set((
                user_identities::email.eq(link.email),
                user_identities::last_sign_in_at.eq(to_db(link.at)),
            ))
            .execute(c))
            .map_err(db_err)?;
            if updated == 0 {
                insert_identity(conn, user, link).map_err(db_err)?;
            }
            Ok(())
        })
    }

    fn create_signed_in_user(
        &self,
        user: &User,
        link: &IdentityLink<'_>,
        memberships: &[(OrgId, Role, AuditEntry)],
    ) -> Result<(), StorageError> {
        let u = user.id.to_string();
        self.write(|conn| {
            let values = (
                users::id.eq(&u),
                users::email.eq(&user.email),
                users::name.eq(&user.name),
                users::current_org_id.eq(user.current_org_id.map(|o| o.to_string())),
                users::created_at.eq(to_db(user.created_at)),
                users::disabled_at.eq(None::<PrimitiveDateTime>),
            );
            native!(conn, |c| diesel::insert_into(users::table)
                .values(values)
                .execute(c))
            .map_err(db_err)?;
            insert_identity(conn, user.id, link).map_err(db_err)?;
            for (org, role, audit) in memberships {
                let values = (
                    org_members::org_id.eq(org.to_string()),
                    org_members::user_id.eq(&u),
                    org_members::role.eq(role.as_str()),
                    org_members::created_at.eq(to_db(user.created_at)),
                );
                native!(conn, |c| diesel::insert_into(org_members::table)
                    .values(values)
                    .execute(c))
                .map_err(db_err)?;
                insert_audit(conn, audit)?;
            }
            self.identity_changed(conn);
            Ok(())
        })?;
        self.keys.clear();
        Ok(())
    }

    fn insert_web_session(&self, s: &NewWebSession<'_>) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(web_sessions::table)
            .values((
                web_sessions::id_hash.eq(s.id_hash),
                web_sessions::user_id.eq(s.user_id.to_string()),
                web_sessions::csrf_token.eq(s.csrf_token),
                web_sessions::remote_addr.eq(s.remote_addr),
                web_sessions::created_at.eq(to_db(s.created_at)),
                web_sessions::expires_at.eq(to_db(s.expires_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn web_session(
        &self,
        id_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<WebSession>, StorageError> {
        let mut conn = self.conn()?;
        let row: Option<(String, String, PrimitiveDateTime, Option<PrimitiveDateTime>)> =
            native!(&mut *conn, |c| web_sessions::table
                .inner_join(users::table.on(users::id.eq(web_sessions::user_id)))
                .filter(web_sessions::id_hash.eq(id_hash))
                .filter(web_sessions::expires_at.gt(to_db(now)))
                .select((
                    web_sessions::user_id,
                    web_sessions::csrf_token,
                    web_sessions::expires_at,
                    users::disabled_at,
                ))
                .get_result(c)
                .optional())
            .map_err(db_err)?;
        row.map(|(user, csrf_token, exp, disabled)| {
            Ok(WebSession {
                user_id: parse_id(&user, "user")?,
                csrf_token,
                expires_at: from_db(exp),
                user_disabled: disabled.is_some(),
            })
        })
        .transpose()
    }

    fn delete_web_session(&self, id_hash: &str) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::delete(web_sessions::table.filter(web_sessions::id_hash.eq(id_hash)))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn count_pending_device_grants(&self, now: OffsetDateTime) -> Result<i64, StorageError> {
        let mut conn = self.conn()?;
        device_grants::table
            .filter(device_grants::status.eq("pending"))
            .filter(device_grants::expires_at.gt(to_db(now)))
            .count()
            .get_result(&mut *conn)
            .map_err(db_err)
    }

    fn insert_device_grant(&self, g: &NewDeviceGrant<'_>) -> Result<(), StorageError> {
        let mut conn = self.conn()?;
        diesel::insert_into(device_grants::table)
            .values((
                device_grants::device_code_hash.eq(g.device_code_hash),
                device_grants::user_code.eq(g.user_code),
                device_grants::status.eq("pending"),
                device_grants::user_id.eq(None::<String>),
                device_grants::remote_addr.eq(g.remote_addr),
                device_grants::interval_secs.eq(g.interval_secs),
                device_grants::last_polled_at.eq(None::<PrimitiveDateTime>),
                device_grants::created_at.eq(to_db(g.created_at)),
                device_grants::expires_at.eq(to_db(g.expires_at)),
            ))
            .execute(&mut *conn)
            .map_err(db_err)?;
        Ok(())
    }

    fn device_grant(
        &self,
        user_code: &str,
        now: OffsetDateTime,
    ) -> Result<Option<DeviceGrant>, StorageError> {
        let mut conn = self.conn()?;
        let row: Option<GrantRow> = native!(&mut *conn, |c| device_grants::table
            .filter(device_grants::user_code.eq(user_code))
            .filter(device_grants::expires_at.gt(to_db(now)))
            .select((
                device_grants::user_code,
                device_grants::status,
                device_grants::user_id,
                device_grants::remote_addr,
                device_grants::interval_secs,
                device_grants::last_polled_at,
                device_grants::created_at,
                device_grants::expires_at,
            ))
            .get_result(c)
            .optional())
        .map_err(db_err)?;
        row.map(|(code, status, user, remote, _, _, created, expires)| {
            Ok(DeviceGrant {
                status: status_of(&status, user.as_deref())?,
                user_code: code,
                remote_addr: remote,
                created_at: from_db(created),
                expires_at: from_db(expires),
            })
        })
        .transpose()
    }

    fn decide_device_grant(
        &self,
        user_code: &str,
        user: UserId,
        approve: bool,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let mut conn = self.conn()?;
        let n = native!(&mut *conn, |c| diesel::update(
            device_grants::table
                .filter(device_grants::user_code.eq(user_code))
                .filter(device_grants::status.eq("pending"))
                .filter(device_grants::expires_at.gt(to_db(now)))
        )
        .set((
            device_grants::status.eq(if approve { "approved" } else { "denied" }),
            device_grants::user_id.eq(Some(user.to_string())),
        ))
        .execute(c))
        .map_err(db_err)?;
        Ok(n == 1)
    }

    fn poll_device_grant(
        &self,
        device_code_hash: &str,
        now: OffsetDateTime,
    ) -> Result<DevicePoll, StorageError> {
        // The hash is hex this server computed: safe in the lock's condition.
        let hex = device_code_hash.bytes().all(|b| b.is_ascii_hexdigit());
        let kind = self.kind;
        self.write(|conn| {
            if !hex {
                return Ok(DevicePoll::Unknown);
            }
            lock_row(
                conn,
                kind,
                "device_grants",
                &format!("device_code_hash = '{device_code_hash}'"),
            )?;
            let mine = device_grants::device_code_hash.eq(device_code_hash);
            let row: Option<PollRow> = native!(conn, |c| device_grants::table
                .filter(mine)
                .select((
                    device_grants::user_code,
                    device_grants::status,
                    device_grants::user_id,
                    device_grants::interval_secs,
                    device_grants::last_polled_at,
                    device_grants::expires_at,
                ))
                .get_result(c)
                .optional())
            .map_err(db_err)?;
            let Some((code, status, user, interval, last, expires)) = row else {
                return Ok(DevicePoll::Unknown);
            };
            let delete = |conn: &mut DbConnection| {
                native!(conn, |c| diesel::delete(device_grants::table.filter(mine))
                    .execute(c))
                .map_err(db_err)
            };
            if from_db(expires) <= now {
                delete(conn)?;
                return Ok(DevicePoll::Expired);
            }
            match status_of(&status, user.as_deref())? {
                DeviceStatus::Denied => {
                    delete(conn)?;
                    Ok(DevicePoll::Denied)
                }
                DeviceStatus::Approved(u) => {
                    delete(conn)?;
                    Ok(DevicePoll::Approved(u, code))
                }
                DeviceStatus::Pending => {
                    let too_soon =
                        last.is_some_and(|t| now < from_db(t) + time::Duration::seconds(interval));
                    let interval = if too_soon { interval + 5 } else { interval };
                    native!(conn, |c| diesel::update(device_grants::table.filter(mine))
                        .set((
                            device_grants::interval_secs.eq(interval),
                            device_grants::last_polled_at.eq(Some(to_db(now))),
                        ))
                        .execute(c))
                    .map_err(db_err)?;
                    Ok(DevicePoll::Pending {
                        slow_down: too_soon,
                        interval_secs: interval,
                    })
                }
            }
        })
    }

    fn purge_sign_in(&self, now: OffsetDateTime) -> Result<u64, StorageError> {
        let mut conn = self.conn()?;
        let t = to_db(now);
        let a = diesel::delete(sign_in_states::table.filter(sign_in_states::expires_at.le(t)))
            .execute(&mut *conn)
            .map_err(db_err)?;
        let b = diesel::delete(web_sessions::table.filter(web_sessions::expires_at.le(t)))
            .execute(&mut *conn)
            .map_err(db_err)?;
        let d = diesel::delete(device_grants::table.filter(device_grants::expires_at.le(t)))
            .execute(&mut *conn)
            .map_err(db_err)?;
        let n = a + b + d;
        Ok(n as u64)
    }
}

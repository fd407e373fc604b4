//! The transaction of a start or a resume: the locks that serialize one owner's (and one
//! organization's) starts, the quotas, the warm-pool claim and the running limit.

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::ports::sandboxes::later;
use switchboard_domain::ports::{RunningLimit, StartSandbox};
use switchboard_domain::sandboxes::quotas::{
    HOLDING_STATUSES, HeldSandbox, QuotaExceeded, QuotaScope, SandboxQuota,
    least_recently_used_first,
};
use switchboard_domain::sandboxes::records::{EXTERNAL_RUNTIME, SandboxRecord};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::{OrgId, SandboxId, UserId};
use time::OffsetDateTime;

use super::row::{SandboxRow, records};
use crate::connection::DbConnection;
use crate::schema::sandboxes;
use crate::store::rows::{db_err, to_db};

/// The class of the PostgreSQL advisory locks that serialize one owner's starts and resumes
/// (the second key is derived from the owner's id), so two concurrent starts cannot both
/// stay under the running limit.
const OWNER_LOCK_CLASS: i32 = 0x5342_5358; // "SBSX"
/// The class of the advisory locks that serialize one organization's starts under
/// `--max-sandboxes-per-org` (taken before the owner's, always in that order).
const ORG_LOCK_CLASS: i32 = 0x5342_534F; // "SBSO"

/// On PostgreSQL, serializes the starts and resumes of one owner until the transaction ends.
pub(super) fn lock_owner(conn: &mut DbConnection, owner: UserId) -> Result<(), StorageError> {
    advisory_lock(conn, OWNER_LOCK_CLASS, owner.0.as_u64_pair().0 as i32)
}

/// On PostgreSQL, serializes the starts of one organization until the transaction ends.
fn lock_org(conn: &mut DbConnection, org: OrgId) -> Result<(), StorageError> {
    advisory_lock(conn, ORG_LOCK_CLASS, org.0.as_u64_pair().0 as i32)
}

/// `pg_advisory_xact_lock(class, key)` on PostgreSQL; nothing on SQLite, whose writes are
/// serialized already (one writer, `BEGIN IMMEDIATE`).
fn advisory_lock(conn: &mut DbConnection, class: i32, key: i32) -> Result<(), StorageError> {
    if let DbConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1, $2)")
            .bind::<diesel::sql_types::Integer, _>(class)
            .bind::<diesel::sql_types::Integer, _>(key)
            .execute(c)
            .map_err(db_err)?;
    }
    Ok(())
}

/// The managed sandboxes holding resources (`STARTING`, `RUNNING`, `PAUSED`) of an owner, or
/// of an organization, least recently used first.
fn holding(
    conn: &mut DbConnection,
    owner: Option<UserId>,
    org: Option<OrgId>,
) -> Result<Vec<HeldSandbox>, StorageError> {
    let owner = owner.map(|o| o.to_string());
    let org = org.map(|o| o.to_string());
    let statuses = HOLDING_STATUSES.map(SandboxStatus::as_str);
    let rows = native!(&mut *conn, |c| {
        let mut q = sandboxes::table
            .filter(sandboxes::deleted_at.is_null())
            .filter(sandboxes::runtime.ne(EXTERNAL_RUNTIME))
            .filter(sandboxes::status.eq_any(statuses))
            .select(SandboxRow::as_select())
            .into_boxed();
        if let Some(owner) = &owner {
            q = q.filter(sandboxes::owner_id.eq(owner));
        }
        if let Some(org) = &org {
            q = q.filter(sandboxes::org_id.eq(org));
        }
        q.load(c)
    })
    .map_err(db_err)?;
    let mut held: Vec<HeldSandbox> = records(rows)?.iter().map(HeldSandbox::of).collect();
    least_recently_used_first(&mut held);
    Ok(held)
}

/// Takes the locks of a start (organization first when it has a quota, then owner) and
/// checks its quotas: the refusal, if one is reached.
pub(super) fn check_quota(
    conn: &mut DbConnection,
    quota: &SandboxQuota,
) -> Result<Option<QuotaExceeded>, StorageError> {
    if quota.per_org.is_some() {
        lock_org(conn, quota.org)?;
    }
    lock_owner(conn, quota.owner)?;
    let mine = holding(conn, Some(quota.owner), None)?;
    if mine.len() >= quota.per_user.max(1) as usize {
        return Ok(Some(QuotaExceeded {
            scope: QuotaScope::User,
            limit: quota.per_user,
            held: mine,
        }));
    }
    if let Some(max) = quota.per_org {
        let org = holding(conn, None, Some(quota.org))?;
        if org.len() >= max.max(1) as usize {
            return Ok(Some(QuotaExceeded {
                scope: QuotaScope::Org,
                limit: max,
                held: org,
            }));
        }
    }
    Ok(None)
}

/// Applies the running limit after `keep` started or resumed: the owner's other running or
/// starting managed sandboxes beyond `limit.max - 1`, least recently used first, become
/// `PAUSED`. Returns them as they now are.
pub(super) fn enforce_limit(
    conn: &mut DbConnection,
    limit: RunningLimit,
    keep: SandboxId,
    now: OffsetDateTime,
) -> Result<Vec<SandboxRecord>, StorageError> {
    let owner = limit.owner.to_string();
    let keep = keep.to_string();
    let running = [
        SandboxStatus::Starting.as_str(),
        SandboxStatus::Running.as_str(),
    ];
    let others = records(
        native!(&mut *conn, |c| sandboxes::table
            .filter(sandboxes::owner_id.eq(&owner))
            .filter(sandboxes::deleted_at.is_null())
            .filter(sandboxes::runtime.ne(EXTERNAL_RUNTIME))
            .filter(sandboxes::status.eq_any(running))
            .filter(sandboxes::id.ne(&keep))
            .select(SandboxRow::as_select())
            .load(c))
        .map_err(db_err)?,
    )?;
    let allowed = limit.max.max(1) as usize - 1;
    if others.len() <= allowed {
        return Ok(Vec::new());
    }
    let mut others = others;
    // Least recently used first; never used counts as oldest.
    others.sort_by_key(|r| (r.last_used_at, r.created_at));
    let excess = others.len() - allowed;
    let mut displaced = Vec::with_capacity(excess);
    for mut r in others.into_iter().take(excess) {
        let updated_at = later(r.updated_at, now);
        diesel::update(sandboxes::table.filter(sandboxes::id.eq(r.id.to_string())))
            .set((
                sandboxes::status.eq(SandboxStatus::Paused.as_str()),
                sandboxes::updated_at.eq(to_db(updated_at)),
            ))
            .execute(conn)
            .map_err(db_err)?;
        r.status = SandboxStatus::Paused;
        r.updated_at = updated_at;
        displaced.push(r);
    }
    Ok(displaced)
}

/// Claims an unowned `RUNNING` sandbox of the spec and runtime for the new record's owner.
pub(super) fn claim(
    conn: &mut DbConnection,
    start: &StartSandbox,
    spec_id: &str,
    runtime: &str,
) -> Result<Option<SandboxRecord>, StorageError> {
    macro_rules! candidates {
        () => {
            sandboxes::table
                .filter(sandboxes::org_id.is_null())
                .filter(sandboxes::deleted_at.is_null())
                .filter(sandboxes::status.eq(SandboxStatus::Running.as_str()))
                .filter(sandboxes::spec_id.eq(spec_id))
                .filter(sandboxes::runtime.eq(runtime))
                .order(sandboxes::created_at.asc())
                .select(SandboxRow::as_select())
        };
    }
    let found = match conn {
        DbConnection::Postgres(c) => candidates!().for_update().skip_locked().first(c).optional(),
        DbConnection::Sqlite(c) => candidates!().first(c).optional(),
    }
    .map_err(db_err)?;
    let Some(row) = found else { return Ok(None) };
    let mut record = row.record()?;
    let now = start.record.created_at;
    record.org_id = start.record.org_id;
    record.owner_id = start.record.owner_id;
    record.created_at = now;
    record.last_used_at = Some(now);
    record.updated_at = later(record.updated_at, now);
    let claimed = diesel::update(
        sandboxes::table
            .filter(sandboxes::id.eq(record.id.to_string()))
            .filter(sandboxes::org_id.is_null()),
    )
    .set((
        sandboxes::org_id.eq(record.org_id.map(|o| o.to_string())),
        sandboxes::owner_id.eq(record.owner_id.map(|u| u.to_string())),
        sandboxes::created_at.eq(to_db(now)),
        sandboxes::last_used_at.eq(Some(to_db(now))),
        sandboxes::updated_at.eq(to_db(record.updated_at)),
    ))
    .execute(conn)
    .map_err(db_err)?;
    Ok((claimed == 1).then_some(record))
}

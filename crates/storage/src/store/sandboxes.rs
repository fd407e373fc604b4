//! Sandboxes ([`SandboxStore`]): registered and managed ones in one table, tombstoned on
//! delete. Starts and resumes run in one write transaction with the per-user running limit;
//! a warm-pool claim takes one unowned `RUNNING` row (PostgreSQL: `FOR UPDATE SKIP LOCKED`,
//! so concurrent claims never take the same one; SQLite: one writer at a time).

use diesel::prelude::*;
use switchboard_domain::StorageError;
use switchboard_domain::identity::session_keys::SessionKeyHash;
use switchboard_domain::ports::sandboxes::later;
use switchboard_domain::ports::{
    ResumeSandbox, RunningLimit, SandboxQuery, SandboxStore, SandboxUpdate, StartOutcome,
    StartSandbox, StartedSandbox,
};
use switchboard_domain::sandboxes::Sandbox;
use switchboard_domain::sandboxes::quotas::{
    HOLDING_STATUSES, HeldSandbox, QuotaExceeded, QuotaScope, SandboxQuota,
    least_recently_used_first,
};
use switchboard_domain::sandboxes::records::{EXTERNAL_RUNTIME, EXTERNAL_SPEC_ID, SandboxRecord};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use switchboard_domain::{OrgId, SandboxId, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, from_db, optional_row, parse_id, parse_opt_id, to_db};
use crate::connection::DbConnection;
use crate::schema::sandboxes;

/// Every status, for reading the stored name back.
const STATUSES: [SandboxStatus; 5] = [
    SandboxStatus::Starting,
    SandboxStatus::Running,
    SandboxStatus::Paused,
    SandboxStatus::Error,
    SandboxStatus::Missing,
];

/// The class of the PostgreSQL advisory locks that serialize one owner's starts and resumes
/// (the second key is derived from the owner's id), so two concurrent starts cannot both
/// stay under the running limit.
const OWNER_LOCK_CLASS: i32 = 0x5342_5358; // "SBSX"
/// The class of the advisory locks that serialize one organization's starts under
/// `--max-sandboxes-per-org` (taken before the owner's, always in that order).
const ORG_LOCK_CLASS: i32 = 0x5342_534F; // "SBSO"

#[derive(Queryable, Selectable)]
#[diesel(table_name = sandboxes)]
struct SandboxRow {
    id: String,
    org_id: Option<String>,
    owner_id: Option<String>,
    spec_id: String,
    runtime: String,
    status: String,
    session_key_sealed: Option<String>,
    handle: Option<String>,
    agent_server_url: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    started_at: Option<PrimitiveDateTime>,
    last_used_at: Option<PrimitiveDateTime>,
    deleted_at: Option<PrimitiveDateTime>,
}

impl SandboxRow {
    fn record(self) -> Result<SandboxRecord, StorageError> {
        let status = STATUSES
            .into_iter()
            .find(|s| s.as_str() == self.status)
            .ok_or_else(|| {
                StorageError::Other(format!("stored sandbox status {:?}", self.status).into())
            })?;
        Ok(SandboxRecord {
            id: parse_id(&self.id, "sandbox")?,
            org_id: parse_opt_id(self.org_id.as_deref(), "org")?,
            owner_id: parse_opt_id(self.owner_id.as_deref(), "user")?,
            spec_id: self.spec_id,
            runtime: self.runtime,
            status,
            session_key_sealed: self.session_key_sealed,
            handle: self.handle,
            agent_server_url: self.agent_server_url,
            created_at: from_db(self.created_at),
            updated_at: from_db(self.updated_at),
            started_at: self.started_at.map(from_db),
            last_used_at: self.last_used_at.map(from_db),
            deleted_at: self.deleted_at.map(from_db),
        })
    }

    fn sandbox(self) -> Result<Option<Sandbox>, StorageError> {
        Ok(self.record()?.owned())
    }
}

fn records(rows: Vec<SandboxRow>) -> Result<Vec<SandboxRecord>, StorageError> {
    rows.into_iter().map(SandboxRow::record).collect()
}

#[derive(AsChangeset)]
#[diesel(table_name = sandboxes)]
struct Changes<'a> {
    status: Option<&'a str>,
    handle: Option<&'a str>,
    agent_server_url: Option<&'a str>,
    started_at: Option<PrimitiveDateTime>,
    updated_at: PrimitiveDateTime,
}

fn insert(
    conn: &mut DbConnection,
    r: &SandboxRecord,
    key_hash: &SessionKeyHash,
) -> Result<(), StorageError> {
    diesel::insert_into(sandboxes::table)
        .values((
            sandboxes::id.eq(r.id.to_string()),
            sandboxes::org_id.eq(r.org_id.map(|o| o.to_string())),
            sandboxes::owner_id.eq(r.owner_id.map(|u| u.to_string())),
            sandboxes::session_key_hash.eq(&key_hash.0),
            sandboxes::created_at.eq(to_db(r.created_at)),
            sandboxes::spec_id.eq(&r.spec_id),
            sandboxes::runtime.eq(&r.runtime),
            sandboxes::status.eq(r.status.as_str()),
            sandboxes::session_key_sealed.eq(r.session_key_sealed.as_deref()),
            sandboxes::handle.eq(r.handle.as_deref()),
            sandboxes::agent_server_url.eq(r.agent_server_url.as_deref()),
            sandboxes::updated_at.eq(to_db(r.updated_at)),
            sandboxes::started_at.eq(r.started_at.map(to_db)),
            sandboxes::last_used_at.eq(r.last_used_at.map(to_db)),
            sandboxes::deleted_at.eq(r.deleted_at.map(to_db)),
        ))
        .execute(conn)
        .map_err(db_err)?;
    Ok(())
}

fn load(conn: &mut DbConnection, id: SandboxId) -> Result<Option<SandboxRecord>, StorageError> {
    let id = id.to_string();
    optional_row(
        native!(conn, |c| sandboxes::table
            .filter(sandboxes::id.eq(&id))
            .filter(sandboxes::deleted_at.is_null())
            .select(SandboxRow::as_select())
            .get_result(c)),
        SandboxRow::record,
    )
}

/// On PostgreSQL, serializes the starts and resumes of one owner until the transaction ends.
fn lock_owner(conn: &mut DbConnection, owner: UserId) -> Result<(), StorageError> {
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
fn check_quota(
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
fn enforce_limit(
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
fn claim(
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

impl SandboxStore for DieselStore {
    fn create_sandbox(
        &self,
        sandbox: &Sandbox,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError> {
        let record = SandboxRecord {
            id: sandbox.id,
            org_id: Some(sandbox.org_id),
            owner_id: Some(sandbox.owner_id),
            spec_id: EXTERNAL_SPEC_ID.to_owned(),
            runtime: EXTERNAL_RUNTIME.to_owned(),
            status: SandboxStatus::Running,
            session_key_sealed: None,
            handle: None,
            agent_server_url: None,
            created_at: sandbox.created_at,
            updated_at: sandbox.created_at,
            started_at: None,
            last_used_at: None,
            deleted_at: None,
        };
        self.write(|c| insert(c, &record, key_hash))
    }

    fn sandbox_by_key_hash(&self, hash: &SessionKeyHash) -> Result<Option<Sandbox>, StorageError> {
        let mut conn = self.conn()?;
        Ok(optional_row(
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::session_key_hash.eq(&hash.0))
                .filter(sandboxes::deleted_at.is_null())
                .select(SandboxRow::as_select())
                .get_result(c)),
            SandboxRow::sandbox,
        )?
        .flatten())
    }

    fn insert_sandbox(
        &self,
        record: &SandboxRecord,
        key_hash: &SessionKeyHash,
    ) -> Result<(), StorageError> {
        self.write(|c| insert(c, record, key_hash))
    }

    fn start_sandbox(&self, start: &StartSandbox) -> Result<StartOutcome, StorageError> {
        self.write(|c| {
            if let Some(refused) = check_quota(c, &start.quota)? {
                return Ok(StartOutcome::OverQuota(refused));
            }
            if start.limit.owner != start.quota.owner {
                lock_owner(c, start.limit.owner)?;
            }
            let claimed = match &start.claim_warm {
                Some(w) => claim(c, start, &w.spec_id, &w.runtime)?,
                None => None,
            };
            let (record, was_claimed) = match claimed {
                Some(r) => (r, true),
                None => {
                    insert(c, &start.record, &start.key_hash)?;
                    (start.record.clone(), false)
                }
            };
            let displaced = enforce_limit(c, start.limit, record.id, start.record.created_at)?;
            Ok(StartOutcome::Started(Box::new(StartedSandbox {
                record,
                claimed: was_claimed,
                displaced,
            })))
        })
    }

    fn resume_sandbox(
        &self,
        resume: &ResumeSandbox,
    ) -> Result<Option<Vec<SandboxRecord>>, StorageError> {
        self.write(|c| {
            lock_owner(c, resume.limit.owner)?;
            let Some(record) = load(c, resume.id)? else {
                return Ok(None);
            };
            if record.status != SandboxStatus::Paused {
                return Ok(None);
            }
            let now = to_db(resume.now);
            diesel::update(sandboxes::table.filter(sandboxes::id.eq(resume.id.to_string())))
                .set((
                    sandboxes::status.eq(SandboxStatus::Starting.as_str()),
                    sandboxes::started_at.eq(Some(now)),
                    sandboxes::last_used_at.eq(Some(now)),
                    sandboxes::updated_at.eq(to_db(later(record.updated_at, resume.now))),
                ))
                .execute(c)
                .map_err(db_err)?;
            enforce_limit(c, resume.limit, resume.id, resume.now).map(Some)
        })
    }

    fn sandbox(&self, id: SandboxId) -> Result<Option<SandboxRecord>, StorageError> {
        load(&mut *self.conn()?, id)
    }

    fn sandboxes_by_ids(&self, ids: &[SandboxId]) -> Result<Vec<SandboxRecord>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let mut conn = self.conn()?;
        records(
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::id.eq_any(&ids))
                .filter(sandboxes::deleted_at.is_null())
                .select(SandboxRow::as_select())
                .load(c))
            .map_err(db_err)?,
        )
    }

    fn search_sandboxes(&self, query: &SandboxQuery) -> Result<Vec<SandboxRecord>, StorageError> {
        let org = query.org.to_string();
        let owner = query.owner.map(|o| o.to_string());
        let after = query.after.map(|a| (to_db(a.created_at), a.id.to_string()));
        let limit = i64::from(query.limit);
        let mut conn = self.conn()?;
        records(
            native!(&mut *conn, |c| {
                let mut q = sandboxes::table
                    .filter(sandboxes::org_id.eq(&org))
                    .filter(sandboxes::deleted_at.is_null())
                    .select(SandboxRow::as_select())
                    .order((sandboxes::created_at.desc(), sandboxes::id.desc()))
                    .limit(limit)
                    .into_boxed();
                if let Some(owner) = &owner {
                    q = q.filter(sandboxes::owner_id.eq(owner));
                }
                if let Some((t, id)) = &after {
                    q = q.filter(
                        sandboxes::created_at
                            .lt(*t)
                            .or(sandboxes::created_at.eq(*t).and(sandboxes::id.lt(id))),
                    );
                }
                q.load(c)
            })
            .map_err(db_err)?,
        )
    }

    fn live_sandboxes(&self) -> Result<Vec<SandboxRecord>, StorageError> {
        let mut conn = self.conn()?;
        records(
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::deleted_at.is_null())
                .select(SandboxRow::as_select())
                .load(c))
            .map_err(db_err)?,
        )
    }

    fn update_sandbox(&self, update: &SandboxUpdate) -> Result<bool, StorageError> {
        let changes = Changes {
            status: update.status.map(SandboxStatus::as_str),
            handle: update.handle.as_deref(),
            agent_server_url: update.agent_server_url.as_deref(),
            started_at: update.started_at.map(to_db),
            updated_at: to_db(update.updated_at),
        };
        let n = self.write(|c| {
            diesel::update(
                sandboxes::table
                    .filter(sandboxes::id.eq(update.id.to_string()))
                    .filter(sandboxes::updated_at.eq(to_db(update.expected_updated_at)))
                    .filter(sandboxes::deleted_at.is_null()),
            )
            .set(&changes)
            .execute(c)
            .map_err(db_err)
        })?;
        Ok(n == 1)
    }

    fn touch_sandbox(&self, id: SandboxId, now: OffsetDateTime) -> Result<(), StorageError> {
        self.write(|c| {
            diesel::update(sandboxes::table.filter(sandboxes::id.eq(id.to_string())))
                .set(sandboxes::last_used_at.eq(Some(to_db(now))))
                .execute(c)
                .map_err(db_err)
        })?;
        Ok(())
    }

    fn delete_sandbox(&self, id: SandboxId, now: OffsetDateTime) -> Result<bool, StorageError> {
        let n = self.write(|c| {
            let n = diesel::update(
                sandboxes::table
                    .filter(sandboxes::id.eq(id.to_string()))
                    .filter(sandboxes::deleted_at.is_null()),
            )
            .set(sandboxes::deleted_at.eq(Some(to_db(now))))
            .execute(c)
            .map_err(db_err)?;
            // A launched sandbox keeps its sealed key until its cleanup, which reads its agent
            // server's last events with it (issue 19); the key no longer authenticates.
            diesel::update(
                sandboxes::table
                    .filter(sandboxes::id.eq(id.to_string()))
                    .filter(sandboxes::handle.is_null()),
            )
            .set(sandboxes::session_key_sealed.eq(None::<String>))
            .execute(c)
            .map_err(db_err)?;
            Ok(n)
        })?;
        Ok(n == 1)
    }

    fn pending_cleanups(&self) -> Result<Vec<SandboxRecord>, StorageError> {
        let mut conn = self.conn()?;
        records(
            native!(&mut *conn, |c| sandboxes::table
                .filter(sandboxes::deleted_at.is_not_null())
                .filter(sandboxes::handle.is_not_null())
                .select(SandboxRow::as_select())
                .load(c))
            .map_err(db_err)?,
        )
    }

    fn cleanup_done(&self, id: SandboxId) -> Result<(), StorageError> {
        self.write(|c| {
            diesel::update(sandboxes::table.filter(sandboxes::id.eq(id.to_string())))
                .set((
                    sandboxes::handle.eq(None::<String>),
                    sandboxes::session_key_sealed.eq(None::<String>),
                ))
                .execute(c)
                .map_err(db_err)
        })?;
        Ok(())
    }
}

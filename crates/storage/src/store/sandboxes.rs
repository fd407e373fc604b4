//! Sandboxes ([`SandboxStore`]): registered and managed ones in one table, tombstoned on
//! delete. Starts and resumes run in one write transaction with the per-user running limit;
//! a warm-pool claim takes one unowned `RUNNING` row (PostgreSQL: `FOR UPDATE SKIP LOCKED`,
//! so concurrent claims never take the same one; SQLite: one writer at a time).

use diesel::prelude::*;
use switchboard_domain::SandboxId;
use switchboard_domain::StorageError;
use switchboard_domain::identity::session_keys::SessionKeyHash;
use switchboard_domain::ports::sandboxes::later;
use switchboard_domain::ports::{
    ResumeSandbox, SandboxQuery, SandboxStore, SandboxUpdate, StartOutcome, StartSandbox,
    StartedSandbox,
};
use switchboard_domain::sandboxes::Sandbox;
use switchboard_domain::sandboxes::records::{EXTERNAL_RUNTIME, EXTERNAL_SPEC_ID, SandboxRecord};
use switchboard_domain::sandboxes::runtime::SandboxStatus;
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, optional_row, to_db};
use crate::connection::DbConnection;
use crate::schema::sandboxes;

pub(super) mod grouping;
mod row;
mod starts;

use row::{SandboxRow, records};
use starts::{check_quota, claim, enforce_limit, lock_owner};

#[derive(AsChangeset)]
#[diesel(table_name = sandboxes)]
struct Changes<'a> {
    status: Option<&'a str>,
    status_message: Option<Option<&'a str>>,
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
            sandboxes::status_message.eq(r.status_message.as_deref()),
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
            status_message: None,
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
            if let Some(task) = start.bind_task {
                grouping::bind_task(c, task, record.id)?;
            }
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
            // Written with every status: another status clears it.
            status_message: update.status.map(|_| update.status_message.as_deref()),
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

    fn delete_unowned_sandbox(
        &self,
        id: SandboxId,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let n = self.write(|c| {
            diesel::update(
                sandboxes::table
                    .filter(sandboxes::id.eq(id.to_string()))
                    .filter(sandboxes::org_id.is_null())
                    .filter(sandboxes::deleted_at.is_null()),
            )
            .set(sandboxes::deleted_at.eq(Some(to_db(now))))
            .execute(c)
            .map_err(db_err)
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

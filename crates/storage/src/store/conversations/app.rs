//! App conversations ([`AppConversationStore`], reference app-server §5): the
//! `conversations` rows searched (keyset, four orders), counted, read by id, patched and
//! deleted with their events and start tasks in one transaction.

use std::collections::HashMap;

use diesel::prelude::*;
use switchboard_domain::conversations::app::{
    AppConversationInfo, AppConversationPatch, AppConversationQuery,
};
use switchboard_domain::ports::sandboxes::later;
use switchboard_domain::ports::{AppConversationStore, DeletedConversation};
use switchboard_domain::{ConversationId, SandboxId, StorageError};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::app_row::AppConversationRow;
use super::app_search as search;
use crate::connection::DbConnection;
use crate::schema::{conversations, events, start_tasks};
use crate::store::DieselStore;
use crate::store::rows::ID_CHUNK;
use crate::store::rows::{db_err, from_db, parse_id, to_db};

/// Fills `sub_conversation_ids` (oldest first) of `infos`.
fn with_children(
    conn: &mut DbConnection,
    mut infos: Vec<AppConversationInfo>,
) -> Result<Vec<AppConversationInfo>, StorageError> {
    if infos.is_empty() {
        return Ok(infos);
    }
    let ids: Vec<String> = infos.iter().map(|i| i.id.to_string()).collect();
    let mut children: HashMap<String, Vec<ConversationId>> = HashMap::new();
    for chunk in ids.chunks(ID_CHUNK) {
        let rows: Vec<(String, Option<String>)> = native!(&mut *conn, |c| conversations::table
            .filter(conversations::parent_conversation_id.eq_any(chunk))
            .order((conversations::created_at.asc(), conversations::id.asc()))
            .select((conversations::id, conversations::parent_conversation_id))
            .load(c))
        .map_err(db_err)?;
        for (id, parent) in rows {
            if let Some(parent) = parent {
                children
                    .entry(parent)
                    .or_default()
                    .push(parse_id(&id, "conversation")?);
            }
        }
    }
    for info in &mut infos {
        if let Some(c) = children.remove(&info.id.to_string()) {
            info.sub_conversation_ids = c;
        }
    }
    Ok(infos)
}

/// A patch field as a change: `None` leaves the column, `Some(None)` clears it.
fn text(f: &Option<Option<String>>) -> Option<Option<&str>> {
    f.as_ref().map(|v| v.as_deref())
}

fn load_one(
    conn: &mut DbConnection,
    id: &str,
) -> Result<Option<AppConversationInfo>, StorageError> {
    let row = native!(&mut *conn, |c| conversations::table
        .filter(conversations::id.eq(id))
        .select(AppConversationRow::as_select())
        .get_result(c)
        .optional())
    .map_err(db_err)?;
    match row {
        Some(r) => Ok(with_children(conn, vec![r.info()?])?.pop()),
        None => Ok(None),
    }
}

#[derive(AsChangeset)]
#[diesel(table_name = conversations)]
struct PatchChanges<'a> {
    title: Option<Option<&'a str>>,
    public: Option<Option<bool>>,
    selected_repository: Option<Option<&'a str>>,
    selected_branch: Option<Option<&'a str>>,
    git_provider: Option<Option<&'a str>>,
    updated_at: PrimitiveDateTime,
}

impl AppConversationStore for DieselStore {
    fn search_app_conversations(
        &self,
        query: &AppConversationQuery,
    ) -> Result<Vec<(AppConversationInfo, OffsetDateTime)>, StorageError> {
        let mut conn = self.conn()?;
        let listed = search::search(&mut conn, self.kind, query)?;
        let (rows, at): (Vec<AppConversationRow>, Vec<OffsetDateTime>) = listed.into_iter().unzip();
        let infos = rows
            .into_iter()
            .map(AppConversationRow::info)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(with_children(&mut conn, infos)?
            .into_iter()
            .zip(at)
            .collect())
    }

    fn count_app_conversations(&self, query: &AppConversationQuery) -> Result<u64, StorageError> {
        let mut conn = self.conn()?;
        search::count(&mut conn, self.kind, query)
    }

    fn app_conversations_by_ids(
        &self,
        ids: &[ConversationId],
    ) -> Result<Vec<AppConversationInfo>, StorageError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let mut conn = self.conn()?;
        let mut infos = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ID_CHUNK) {
            let rows: Vec<AppConversationRow> = native!(&mut *conn, |c| conversations::table
                .filter(conversations::id.eq_any(chunk))
                .select(AppConversationRow::as_select())
                .load(c))
            .map_err(db_err)?;
            for r in rows {
                infos.push(r.info()?);
            }
        }
        with_children(&mut conn, infos)
    }

    fn patch_app_conversation(
        &self,
        id: ConversationId,
        patch: &AppConversationPatch,
        now: OffsetDateTime,
    ) -> Result<Option<AppConversationInfo>, StorageError> {
        let id = id.to_string();
        self.write(|conn| {
            let current: Option<PrimitiveDateTime> = native!(&mut *conn, |c| conversations::table
                .filter(conversations::id.eq(&id))
                .select(conversations::updated_at)
                .get_result(c)
                .optional())
            .map_err(db_err)?;
            let Some(current) = current else {
                return Ok(None);
            };
            let changes = PatchChanges {
                title: text(&patch.title),
                public: patch.public,
                selected_repository: text(&patch.selected_repository),
                selected_branch: text(&patch.selected_branch),
                git_provider: text(&patch.git_provider),
                updated_at: to_db(later(from_db(current), now)),
            };
            diesel::update(conversations::table.filter(conversations::id.eq(&id)))
                .set(&changes)
                .execute(conn)
                .map_err(db_err)?;
            load_one(conn, &id)
        })
    }

    fn delete_app_conversation(
        &self,
        id: ConversationId,
    ) -> Result<Option<DeletedConversation>, StorageError> {
        let id = id.to_string();
        self.write(|conn| remove_conversation(conn, &id, true))
    }

    fn conversations_in_sandbox(&self, sandbox: SandboxId) -> Result<u64, StorageError> {
        crate::store::sandboxes::grouping::others_in(&mut *self.conn()?, sandbox, None)
    }
}

/// Deletes conversation `id` (its events, with `tasks` its start tasks) in the caller's
/// transaction, buries it (no later webhook or listing creates it again) and takes its events
/// out of its organization's usage; `None` when it does not exist.
///
/// # Errors
/// A failed statement.
pub(super) fn remove_conversation(
    conn: &mut DbConnection,
    id: &str,
    tasks: bool,
) -> Result<Option<DeletedConversation>, StorageError> {
    let usage = crate::store::event_usage::conversation_usage(conn, &[id])?.remove(id);
    let events = diesel::delete(events::table.filter(events::conversation_id.eq(id)))
        .execute(conn)
        .map_err(db_err)?;
    let tasks = if tasks {
        diesel::delete(start_tasks::table.filter(start_tasks::conversation_id.eq(id)))
            .execute(conn)
            .map_err(db_err)?
    } else {
        0
    };
    let rows = diesel::delete(conversations::table.filter(conversations::id.eq(id)))
        .execute(conn)
        .map_err(db_err)?;
    if rows == 0 {
        // Nothing of an unknown conversation is deleted (events without their conversation
        // row cannot exist: the row is written with the first event).
        return Ok(None);
    }
    super::tombstones::bury(conn, id, OffsetDateTime::now_utc())?;
    // Its events no longer count against its organization's quota.
    if let Some(u) = usage {
        crate::store::event_usage::add_org_usage(conn, &u.org_id, -u.events, -u.bytes)?;
    }
    Ok(Some(DeletedConversation {
        events: events as u64,
        start_tasks: tasks as u64,
    }))
}

//! Named profiles' rows (issue 37): the one piece that loads a collection of named profiles
//! from `named_profiles` and writes an edited collection back, for the three collections the
//! domain keeps (`named_profiles::Collection`): a member's LLM profiles, an organization's
//! LLM profiles and a member's agent profiles. A collection is a [`Place`]; an item of the
//! domain becomes a row through [`Item`]. Each store calls these inside the write
//! transaction of the edit and under the lock it already takes (the member's settings row,
//! the organization's defaults row, the membership row), so two edits of one collection are
//! serialized.

use diesel::prelude::*;
use serde_json::{Map, Value};
use switchboard_domain::agent_profiles::StoredAgentProfile;
use switchboard_domain::user_settings::StoredProfile;
use switchboard_domain::{OrgId, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::rows::{db_err, to_db};
use crate::connection::DbConnection;
use crate::schema::named_profiles;

/// One collection: its organization, its owner (a user id, or `''` for the organization's
/// own) and its kind (`llm`, `agent`).
pub(super) struct Place {
    org: String,
    owner: String,
    collection: &'static str,
}

impl Place {
    /// The LLM profiles of `user` in `org`.
    pub(super) fn member_llm(org: OrgId, user: UserId) -> Place {
        Place {
            org: org.to_string(),
            owner: user.to_string(),
            collection: "llm",
        }
    }

    /// The organization's own LLM profiles.
    pub(super) fn org_llm(org: OrgId) -> Place {
        Place {
            org: org.to_string(),
            owner: String::new(),
            collection: "llm",
        }
    }

    /// The agent profiles of `user` in `org`.
    pub(super) fn member_agents(org: OrgId, user: UserId) -> Place {
        Place {
            org: org.to_string(),
            owner: user.to_string(),
            collection: "agent",
        }
    }
}

/// A stored profile, as a collection's [`load`] reads it (its place is the collection's).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = named_profiles)]
pub(super) struct ProfileRow {
    name: String,
    id: Option<String>,
    revision: i64,
    kind: Option<String>,
    body: String,
    secret_sealed: Option<String>,
    active: bool,
    created_at: PrimitiveDateTime,
}

/// A profile written: its place, its row, its times.
#[derive(Insertable, AsChangeset)]
#[diesel(
    table_name = named_profiles,
    primary_key(org_id, owner, collection, name),
    treat_none_as_null = true
)]
struct Written<'a> {
    org_id: &'a str,
    owner: &'a str,
    collection: &'a str,
    name: &'a str,
    id: Option<&'a str>,
    revision: i64,
    kind: Option<&'a str>,
    body: &'a str,
    secret_sealed: Option<&'a str>,
    active: bool,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

/// What a row holds of an item (the rest is its place, its flag and its times).
#[derive(Debug, PartialEq)]
pub(super) struct Content {
    name: String,
    id: Option<String>,
    revision: i64,
    kind: Option<String>,
    body: Map<String, Value>,
    secret_sealed: Option<String>,
}

/// An item of a collection, as a row.
pub(super) trait Item: Sized {
    /// Its row's content.
    fn content(&self) -> Content;
    /// The item a row holds.
    ///
    /// # Errors
    /// A row this item cannot be (a bad id).
    fn from_content(content: Content) -> Result<Self, StorageError>;
}

impl Item for StoredProfile {
    fn content(&self) -> Content {
        Content {
            name: self.name.clone(),
            id: None,
            revision: 0,
            kind: None,
            body: self.config.clone(),
            secret_sealed: self.api_key_sealed.clone(),
        }
    }

    fn from_content(c: Content) -> Result<Self, StorageError> {
        Ok(StoredProfile {
            name: c.name,
            config: c.body,
            api_key_sealed: c.secret_sealed,
        })
    }
}

impl Item for StoredAgentProfile {
    fn content(&self) -> Content {
        Content {
            name: self.name.clone(),
            id: Some(self.id.to_string()),
            revision: self.revision,
            kind: Some(self.agent_kind.clone()),
            body: self.body.clone(),
            secret_sealed: None,
        }
    }

    fn from_content(c: Content) -> Result<Self, StorageError> {
        let id =
            c.id.as_deref()
                .and_then(|i| i.parse().ok())
                .ok_or_else(|| other(format!("stored agent profile id {:?}", c.id)))?;
        let Some(agent_kind) = c.kind else {
            return Err(other(format!(
                "stored agent profile {:?} has no kind",
                c.name
            )));
        };
        Ok(StoredAgentProfile {
            id,
            name: c.name,
            revision: c.revision,
            agent_kind,
            body: c.body,
        })
    }
}

fn other(msg: String) -> StorageError {
    StorageError::Other(msg.into())
}

impl ProfileRow {
    fn content(&self) -> Result<Content, StorageError> {
        let body = match serde_json::from_str(&self.body) {
            Ok(Value::Object(m)) => m,
            _ => return Err(other("a stored profile is not a JSON object".into())),
        };
        Ok(Content {
            name: self.name.clone(),
            id: self.id.clone(),
            revision: self.revision,
            kind: self.kind.clone(),
            body,
            secret_sealed: self.secret_sealed.clone(),
        })
    }
}

/// A collection as read: its rows, in name order (bytewise, as the domain sorts), and the
/// items they hold with the active one's name.
pub(super) struct Loaded<T> {
    rows: Vec<ProfileRow>,
    /// The items, in name order.
    pub(super) items: Vec<T>,
    /// The active item's name.
    pub(super) active: Option<String>,
}

/// The collection at `place`.
///
/// # Errors
/// Storage; a row that is not an item.
pub(super) fn load<T: Item>(
    conn: &mut DbConnection,
    place: &Place,
) -> Result<Loaded<T>, StorageError> {
    let mut rows: Vec<ProfileRow> = native!(conn, |c| named_profiles::table
        .filter(named_profiles::org_id.eq(&place.org))
        .filter(named_profiles::owner.eq(&place.owner))
        .filter(named_profiles::collection.eq(place.collection))
        .select(ProfileRow::as_select())
        .load(c))
    .map_err(db_err)?;
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let items = rows
        .iter()
        .map(|r| T::from_content(r.content()?))
        .collect::<Result<_, _>>()?;
    let active = rows.iter().find(|r| r.active).map(|r| r.name.clone());
    Ok(Loaded {
        rows,
        items,
        active,
    })
}

/// Writes the collection `after` (the item named `active` flagged) over `before` ([`load`]ed
/// in the same transaction): nothing when they are equal (an edit of something else);
/// otherwise rows whose name is gone are deleted first (freeing the names a rename takes),
/// then each changed row is updated and each new one inserted. A row keeps its `created_at`
/// (a renamed one takes its namesake's by id); unchanged rows are not written.
///
/// # Errors
/// Storage.
pub(super) fn write_back<T: Item + PartialEq>(
    conn: &mut DbConnection,
    place: &Place,
    before: &Loaded<T>,
    after: &[T],
    active: Option<&str>,
    now: OffsetDateTime,
) -> Result<(), StorageError> {
    if before.items == after && before.active.as_deref() == active {
        return Ok(());
    }
    let before = &before.rows;
    let now = to_db(now);
    let contents: Vec<Content> = after.iter().map(Item::content).collect();
    let mine = named_profiles::table
        .filter(named_profiles::org_id.eq(place.org.clone()))
        .filter(named_profiles::owner.eq(place.owner.clone()))
        .filter(named_profiles::collection.eq(place.collection));
    for r in before {
        if !contents.iter().any(|c| c.name == r.name) {
            diesel::delete(mine.clone().filter(named_profiles::name.eq(&r.name)))
                .execute(conn)
                .map_err(db_err)?;
        }
    }
    for c in contents {
        let old = before.iter().find(|r| r.name == c.name);
        let created_at = old
            .or_else(|| before.iter().find(|r| c.id.is_some() && r.id == c.id))
            .map_or(now, |r| r.created_at);
        let row = ProfileRow {
            active: active == Some(c.name.as_str()),
            body: Value::Object(c.body).to_string(),
            name: c.name,
            id: c.id,
            revision: c.revision,
            kind: c.kind,
            secret_sealed: c.secret_sealed,
            created_at,
        };
        let written = Written {
            org_id: &place.org,
            owner: &place.owner,
            collection: place.collection,
            name: &row.name,
            id: row.id.as_deref(),
            revision: row.revision,
            kind: row.kind.as_deref(),
            body: &row.body,
            secret_sealed: row.secret_sealed.as_deref(),
            active: row.active,
            created_at,
            updated_at: now,
        };
        match old {
            Some(old) if *old == row => {}
            Some(_) => {
                diesel::update(mine.clone().filter(named_profiles::name.eq(&row.name)))
                    .set(&written)
                    .execute(conn)
                    .map_err(db_err)?;
            }
            None => {
                diesel::insert_into(named_profiles::table)
                    .values(&written)
                    .execute(conn)
                    .map_err(db_err)?;
            }
        }
    }
    Ok(())
}

//! The LLM pass-through's routes and usage ([`LlmRelayStore`]; issue 38, migration
//! `2026-12-09-000001_llm_relay`): a route is read with its sandbox and conversation in one
//! join by primary keys; usage is added by one upsert per request (so concurrent requests on
//! several replicas all count) and read summed over an organization's days.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Date as SqlDate, Double, Text};
use diesel::upsert::excluded;
use switchboard_domain::llm_relay::{
    LiveRoute, LlmRoute, UsageGroup, UsageQuery, UsageRecord, UsageRow,
};
use switchboard_domain::ports::LlmRelayStore;
use switchboard_domain::{ConversationId, OrgId, StorageError, UserId};
use time::{Date, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, from_db, optional_row, parse_id, to_db};
use crate::connection::DbConnection;
use crate::schema::llm_relay::{llm_routes, llm_usage};
use crate::schema::{conversations, sandboxes};

/// A route's columns: token hash, sandbox, conversation, organization, member, upstream,
/// sealed key, key owner, model, creation.
type RouteRow = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    PrimitiveDateTime,
);

/// A route with its conversation's budget and whether that budget stopped it.
type LiveRow = (RouteRow, Option<f64>, bool);

/// A live row as the domain's [`LiveRoute`]; a stored id that is not a UUID is a storage
/// failure.
fn live_route(
    (route, max_budget_per_task, budget_reached): LiveRow,
) -> Result<LiveRoute, StorageError> {
    let (
        token_hash,
        sandbox,
        conversation,
        org,
        user,
        upstream,
        api_key_sealed,
        key_owner,
        model,
        at,
    ) = route;
    Ok(LiveRoute {
        route: LlmRoute {
            token_hash,
            sandbox_id: parse_id(&sandbox, "sandbox")?,
            conversation_id: parse_id(&conversation, "conversation")?,
            org_id: parse_id(&org, "org")?,
            user_id: parse_id(&user, "user")?,
            upstream,
            api_key_sealed,
            key_owner,
            model,
            created_at: from_db(at),
        },
        max_budget_per_task,
        budget_reached,
    })
}

/// A count as stored (`BIGINT`): past `i64::MAX` is refused, never wrapped.
fn stored(n: u64, what: &str) -> Result<i64, StorageError> {
    i64::try_from(n).map_err(|_| StorageError::Other(format!("{what} {n} is out of range").into()))
}

/// A stored sum as a count; a negative one (never written) is a storage failure.
fn count(n: i64, what: &str) -> Result<u64, StorageError> {
    u64::try_from(n).map_err(|_| StorageError::Other(format!("stored {what} {n}").into()))
}

/// The sums of one group of usage rows.
#[derive(QueryableByName)]
struct Totals {
    #[diesel(sql_type = BigInt)]
    requests: i64,
    #[diesel(sql_type = BigInt)]
    input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    output_tokens: i64,
    #[diesel(sql_type = Double)]
    cost_usd: f64,
}

impl Totals {
    /// The domain's row of these sums, under its member or day.
    fn row(self, user_id: Option<UserId>, day: Option<Date>) -> Result<UsageRow, StorageError> {
        Ok(UsageRow {
            user_id,
            day,
            requests: count(self.requests, "requests")?,
            input_tokens: count(self.input_tokens, "input tokens")?,
            output_tokens: count(self.output_tokens, "output tokens")?,
            cost_usd: self.cost_usd,
        })
    }
}

/// A member's sums.
#[derive(QueryableByName)]
struct ByMember {
    #[diesel(sql_type = Text)]
    user_id: String,
    #[diesel(embed)]
    totals: Totals,
}

/// A day's sums.
#[derive(QueryableByName)]
struct ByDay {
    #[diesel(sql_type = SqlDate)]
    day: Date,
    #[diesel(embed)]
    totals: Totals,
}

/// The sums a usage read selects (`CAST`: PostgreSQL's `SUM` of a `BIGINT` is a `NUMERIC`).
const SUMS: &str = "CAST(SUM(requests) AS BIGINT) AS requests, \
    CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
    CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, SUM(cost_usd) AS cost_usd";

/// Loads the rows of `query` summed by `key` (`user_id` or `day`), in `key` order: one
/// statement over the index `(org_id, day)`, or `(org_id, user_id, day)` for one member.
fn summed<R>(conn: &mut DbConnection, key: &str, query: &UsageQuery) -> Result<Vec<R>, StorageError>
where
    R: QueryableByName<diesel::sqlite::Sqlite> + QueryableByName<diesel::pg::Pg> + 'static,
{
    let member = if query.user_id.is_some() {
        " AND user_id = ?4"
    } else {
        ""
    };
    let sql = format!(
        "SELECT {key}, {SUMS} FROM llm_usage WHERE org_id = ?1 AND day >= ?2 AND day <= ?3\
         {member} GROUP BY {key} ORDER BY {key}"
    );
    let sql = match conn {
        DbConnection::Sqlite(_) => sql,
        DbConnection::Postgres(_) => sql.replace('?', "$"),
    };
    let q = diesel::sql_query(sql)
        .bind::<Text, _>(query.org_id.to_string())
        .bind::<SqlDate, _>(query.from)
        .bind::<SqlDate, _>(query.to);
    match query.user_id {
        Some(user) => {
            let q = q.bind::<Text, _>(user.to_string());
            native!(conn, |c| q.load::<R>(c))
        }
        None => native!(conn, |c| q.load::<R>(c)),
    }
    .map_err(db_err)
}

impl LlmRelayStore for DieselStore {
    fn insert_llm_route(&self, route: &LlmRoute) -> Result<(), StorageError> {
        let values = (
            llm_routes::token_hash.eq(&route.token_hash),
            llm_routes::sandbox_id.eq(route.sandbox_id.to_string()),
            llm_routes::conversation_id.eq(route.conversation_id.to_string()),
            llm_routes::org_id.eq(route.org_id.to_string()),
            llm_routes::user_id.eq(route.user_id.to_string()),
            llm_routes::upstream.eq(&route.upstream),
            llm_routes::api_key_sealed.eq(&route.api_key_sealed),
            llm_routes::key_owner.eq(&route.key_owner),
            llm_routes::model.eq(&route.model),
            llm_routes::created_at.eq(to_db(route.created_at)),
        );
        // A second route under the same hash: the primary key's UniqueViolation.
        self.write(|conn| {
            native!(conn, |c| diesel::insert_into(llm_routes::table)
                .values(values)
                .execute(c))
            .map_err(db_err)
        })?;
        Ok(())
    }

    fn llm_route(&self, token_hash: &str) -> Result<Option<LiveRoute>, StorageError> {
        let mut conn = self.conn()?;
        optional_row(
            native!(&mut *conn, |c| llm_routes::table
                .inner_join(sandboxes::table.on(sandboxes::id.eq(llm_routes::sandbox_id)))
                .inner_join(
                    conversations::table.on(conversations::id.eq(llm_routes::conversation_id))
                )
                .filter(llm_routes::token_hash.eq(token_hash))
                .filter(sandboxes::deleted_at.is_null())
                .select((
                    (
                        llm_routes::token_hash,
                        llm_routes::sandbox_id,
                        llm_routes::conversation_id,
                        llm_routes::org_id,
                        llm_routes::user_id,
                        llm_routes::upstream,
                        llm_routes::api_key_sealed,
                        llm_routes::key_owner,
                        llm_routes::model,
                        llm_routes::created_at,
                    ),
                    conversations::max_budget_per_task,
                    conversations::budget_reached_at.is_not_null(),
                ))
                .get_result::<LiveRow>(c)),
            live_route,
        )
    }

    fn add_llm_usage(&self, usage: &UsageRecord) -> Result<(), StorageError> {
        let values = (
            llm_usage::org_id.eq(usage.org_id.to_string()),
            llm_usage::user_id.eq(usage.user_id.to_string()),
            llm_usage::conversation_id.eq(usage.conversation_id.to_string()),
            llm_usage::day.eq(usage.day),
            llm_usage::model.eq(&usage.model),
            llm_usage::requests.eq(stored(usage.requests, "requests")?),
            llm_usage::input_tokens.eq(stored(usage.input_tokens, "input tokens")?),
            llm_usage::output_tokens.eq(stored(usage.output_tokens, "output tokens")?),
            llm_usage::cost_usd.eq(usage.cost_usd),
        );
        // One statement: `INSERT … ON CONFLICT (conversation_id, day, model) DO UPDATE SET
        // requests = llm_usage.requests + excluded.requests, …`, atomic on both backends.
        self.write(|conn| {
            native!(conn, |c| diesel::insert_into(llm_usage::table)
                .values(values)
                .on_conflict((llm_usage::conversation_id, llm_usage::day, llm_usage::model))
                .do_update()
                .set((
                    llm_usage::requests.eq(llm_usage::requests + excluded(llm_usage::requests)),
                    llm_usage::input_tokens
                        .eq(llm_usage::input_tokens + excluded(llm_usage::input_tokens)),
                    llm_usage::output_tokens
                        .eq(llm_usage::output_tokens + excluded(llm_usage::output_tokens)),
                    llm_usage::cost_usd.eq(llm_usage::cost_usd + excluded(llm_usage::cost_usd)),
                ))
                .execute(c))
            .map_err(db_err)
        })?;
        Ok(())
    }

    fn llm_usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, StorageError> {
        let mut conn = self.conn()?;
        match query.group {
            UsageGroup::Member => {
                let rows: Vec<ByMember> = summed(&mut conn, "user_id", query)?;
                let mut out = rows
                    .into_iter()
                    .map(|r| {
                        let user = parse_id(&r.user_id, "user")?;
                        r.totals.row(Some(user), None)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // In id order whatever PostgreSQL's collation does with the text.
                out.sort_by_key(|r| r.user_id);
                Ok(out)
            }
            UsageGroup::Day => {
                let rows: Vec<ByDay> = summed(&mut conn, "day", query)?;
                rows.into_iter()
                    .map(|r| r.totals.row(None, Some(r.day)))
                    .collect()
            }
        }
    }

    fn llm_cost(
        &self,
        org: OrgId,
        conversation: Option<ConversationId>,
        since: Date,
    ) -> Result<f64, StorageError> {
        let mut conn = self.conn()?;
        let org = org.to_string();
        let conversation = conversation.map(|c| c.to_string());
        let cost: Option<f64> = native!(&mut *conn, |c| {
            let mut q = llm_usage::table
                .filter(llm_usage::org_id.eq(&org))
                .filter(llm_usage::day.ge(since))
                .select(diesel::dsl::sum(llm_usage::cost_usd))
                .into_boxed();
            if let Some(id) = &conversation {
                q = q.filter(llm_usage::conversation_id.eq(id));
            }
            q.get_result(c)
        })
        .map_err(db_err)?;
        Ok(cost.unwrap_or(0.0))
    }
}

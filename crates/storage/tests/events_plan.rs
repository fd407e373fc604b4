//! The event search query is an index range scan on both backends, with no sort step
//! (API.md, Events; ARCHITECTURE.md): `EXPLAIN` of the SQL the store issues for a page after a
//! cursor, with and without `kind__eq`, in both orders, over realistic data (5000 events over
//! 5 conversations, statistics gathered). The planner must choose the index on its own.

use std::sync::Arc;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamp};
use serde_json::Value;
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::schema::events;
use switchboard_storage::{DatabaseUrl, DbConnection, DieselStore};
use switchboard_testkit::{Backend, TestDatabase};
use time::PrimitiveDateTime;

const CONVERSATIONS: usize = 5;
const PER_CONVERSATION: usize = 1000;

/// Runs `$body` with `$c` bound to the native connection, whichever the backend.
macro_rules! on_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Postgres($c) => $body,
            DbConnection::Sqlite($c) => $body,
        }
    };
}

/// A few corpus events of different kinds and sizes, used as templates.
fn templates() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/fixtures/conformance/valid");
    [
        "PauseEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
    ]
    .iter()
    .map(|k| {
        let text = std::fs::read_to_string(dir.join(format!("{k}.jsonl"))).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    })
    .collect()
}

/// A database with `CONVERSATIONS` conversations of `PER_CONVERSATION` events each, ingested
/// through the services, then analyzed. Returns the database and the conversation ids.
fn populated(backend: Backend) -> (TestDatabase, Vec<ConversationId>) {
    let db = TestDatabase::new(backend);
    let (store, _) = DieselStore::open(db.url(), None).unwrap();
    let services = Switchboard::new(Arc::new(store));
    let boot = services
        .operator()
        .bootstrap("Plan org", "plan@example.com")
        .unwrap();
    let reg = services
        .sandboxes()
        .register_sandbox(boot.org_id, boot.user_id)
        .unwrap();
    let sandbox = services
        .sandboxes()
        .authenticate_sandbox(Some(&reg.session_api_key))
        .unwrap();
    let templates = templates();
    let base = time::macros::datetime!(2026-11-21 09:00 UTC);
    let mut ids = Vec::new();
    for c in 0..CONVERSATIONS {
        let conv = ConversationId(uuid::Uuid::new_v4());
        ids.push(conv);
        let all: Vec<String> = (0..PER_CONVERSATION)
            .map(|i| {
                let mut e = templates[i % templates.len()].clone();
                e["id"] = Value::String(format!("c{c}-e{i}"));
                // Conversations overlap in time; two events share each timestamp.
                let t = base + time::Duration::milliseconds((i / 2) as i64 * 250 + c as i64);
                e["timestamp"] = Value::String(naive(t));
                e.to_string()
            })
            .collect();
        for batch in all.chunks(250) {
            let body = format!("[{}]", batch.join(","));
            let out = services
                .events()
                .ingest_events(&sandbox, conv, &body)
                .unwrap();
            assert_eq!(out.stored, batch.len());
        }
    }
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    conn.batch_execute("ANALYZE").unwrap();
    (db, ids)
}

/// `2026-11-21T09:00:00.250000`: the SDK's naive timestamp.
fn naive(t: time::OffsetDateTime) -> String {
    t.format(time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]"
    ))
    .unwrap()
}

#[derive(QueryableByName)]
struct SqlitePlanRow {
    #[diesel(sql_type = Text)]
    detail: String,
}

#[derive(QueryableByName)]
struct PgPlanRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "QUERY PLAN")]
    line: String,
}

/// One query shape: its SQL (with `?` placeholders, numbered for PostgreSQL) and the index
/// it must use.
struct Shape {
    name: &'static str,
    sql: &'static str,
    with_kind: bool,
    index: &'static str,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "ascending after a cursor",
        sql: "SELECT seq, ts, payload FROM events WHERE conversation_id = ? AND ts >= ? \
              AND (ts > ? OR (ts = ? AND seq > ?)) ORDER BY ts, seq LIMIT ?",
        with_kind: false,
        index: "events_conversation_ts",
    },
    Shape {
        name: "ascending, kind__eq, after a cursor",
        sql: "SELECT seq, ts, payload FROM events WHERE conversation_id = ? AND kind = ? \
              AND ts >= ? AND (ts > ? OR (ts = ? AND seq > ?)) ORDER BY ts, seq LIMIT ?",
        with_kind: true,
        index: "events_conversation_kind_ts",
    },
    Shape {
        name: "descending after a cursor",
        sql: "SELECT seq, ts, payload FROM events WHERE conversation_id = ? AND ts <= ? \
              AND (ts < ? OR (ts = ? AND seq < ?)) ORDER BY ts DESC, seq DESC LIMIT ?",
        with_kind: false,
        index: "events_conversation_ts",
    },
    Shape {
        name: "descending, kind__eq, after a cursor",
        sql: "SELECT seq, ts, payload FROM events WHERE conversation_id = ? AND kind = ? \
              AND ts <= ? AND (ts < ? OR (ts = ? AND seq < ?)) ORDER BY ts DESC, seq DESC LIMIT ?",
        with_kind: true,
        index: "events_conversation_kind_ts",
    },
];

/// `?` → `$1`, `$2`, … for PostgreSQL.
fn numbered(sql: &str) -> String {
    let mut out = String::new();
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(ch);
        }
    }
    out
}

/// The plan of `shape` for conversation `conv` after the cursor `(ts, seq)`.
fn plan(
    conn: &mut DbConnection,
    shape: &Shape,
    conv: &str,
    ts: PrimitiveDateTime,
    seq: i64,
) -> String {
    macro_rules! bound {
        ($q:expr) => {{
            let mut q = $q.into_boxed().bind::<Text, _>(conv);
            if shape.with_kind {
                q = q.bind::<Text, _>("PauseEvent");
            }
            q.bind::<Timestamp, _>(ts)
                .bind::<Timestamp, _>(ts)
                .bind::<Timestamp, _>(ts)
                .bind::<BigInt, _>(seq)
                .bind::<BigInt, _>(8_i64)
        }};
    }
    match conn {
        DbConnection::Sqlite(c) => {
            let q = diesel::sql_query(format!("EXPLAIN QUERY PLAN {}", shape.sql));
            let rows: Vec<SqlitePlanRow> = bound!(q).load(c).unwrap();
            rows.into_iter()
                .map(|r| r.detail)
                .collect::<Vec<_>>()
                .join("\n")
        }
        DbConnection::Postgres(c) => {
            let q = diesel::sql_query(format!("EXPLAIN {}", numbered(shape.sql)));
            let rows: Vec<PgPlanRow> = bound!(q).load(c).unwrap();
            rows.into_iter()
                .map(|r| r.line)
                .collect::<Vec<_>>()
                .join("\n")
        }
    }
}

fn check(backend: Backend) {
    let (db, convs) = populated(backend);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    let conv = convs[2].to_string();
    let total: i64 = on_conn!(&mut conn, |c| events::table.count().get_result(c).unwrap());
    assert_eq!(total as usize, CONVERSATIONS * PER_CONVERSATION);
    // A cursor in the middle of the conversation.
    let (seq, ts): (i64, PrimitiveDateTime) = on_conn!(&mut conn, |c| events::table
        .filter(events::conversation_id.eq(&conv))
        .order((events::ts, events::seq))
        .select((events::seq, events::ts))
        .offset((PER_CONVERSATION / 2) as i64)
        .first(c)
        .unwrap());
    for shape in SHAPES {
        let p = plan(&mut conn, shape, &conv, ts, seq);
        eprintln!("{backend}: {}:\n{p}", shape.name);
        match backend {
            Backend::Sqlite => {
                assert!(
                    p.contains(&format!("SEARCH events USING INDEX {} ", shape.index)),
                    "{backend}: {}: not a range scan of {}:\n{p}",
                    shape.name,
                    shape.index
                );
                assert!(
                    !p.contains("SCAN events") && !p.contains("TEMP B-TREE"),
                    "{backend}: {}: a scan or a sort:\n{p}",
                    shape.name
                );
            }
            Backend::Postgres => {
                let index_scan = p.lines().any(|l| {
                    (l.contains("Index Scan") || l.contains("Index Only Scan"))
                        && l.contains(&format!("using {} on events", shape.index))
                });
                assert!(
                    index_scan,
                    "{backend}: {}: no index scan of {}:\n{p}",
                    shape.name, shape.index
                );
                assert!(
                    !p.contains("Sort") && !p.contains("Seq Scan") && !p.contains("Bitmap"),
                    "{backend}: {}: a sort or a non-index scan:\n{p}",
                    shape.name
                );
            }
        }
    }
}

#[test]
fn search_uses_an_index_range_scan_sqlite() {
    check(Backend::Sqlite);
}

#[test]
fn search_uses_an_index_range_scan_postgres() {
    check(Backend::Postgres);
}

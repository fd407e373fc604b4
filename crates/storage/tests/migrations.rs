//! Migrations on both backends: every migration runs up and down, and the schema each backend
//! produces is exactly `schema.rs` (column names, types, nullability).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Date, Double, Integer, Nullable, Text, Timestamp};
use switchboard_storage::schema::llm_relay::{llm_routes, llm_usage};
use switchboard_storage::schema::{
    api_keys, audit_log, conversation_counts, conversation_moves, conversation_tombstones,
    conversations, device_grants, events, git_provider_tokens, installation, named_profiles,
    org_defaults, org_event_usage, org_members, orgs, pending_messages, sandboxes, sign_in_states,
    start_task_counts, start_tasks, user_identities, user_secrets, user_settings, users,
    web_sessions,
};
use switchboard_storage::{
    DatabaseUrl, DbConnection, has_pending_migrations, revert_all_migrations, run_migrations,
};
use switchboard_testkit::{Backend, TestDatabase};

/// A normalized column type name for a diesel SQL type.
trait Describe {
    const NAME: &'static str;
    const NULLABLE: bool = false;
}
impl Describe for Text {
    const NAME: &'static str = "text";
}
impl Describe for Bool {
    const NAME: &'static str = "bool";
}
impl Describe for Double {
    const NAME: &'static str = "double";
}
impl Describe for Timestamp {
    const NAME: &'static str = "timestamp";
}
impl Describe for Date {
    const NAME: &'static str = "date";
}
impl Describe for BigInt {
    const NAME: &'static str = "bigint";
}
impl Describe for Integer {
    const NAME: &'static str = "integer";
}
impl<T: Describe + diesel::sql_types::SqlType> Describe for Nullable<T> {
    const NAME: &'static str = T::NAME;
    const NULLABLE: bool = true;
}

type Col = (String, &'static str, bool);

macro_rules! columns {
    ($table:ident: $($col:ident),* $(,)?) => {
        (stringify!($table), vec![$(
            (
                <$table::$col as diesel::Column>::NAME.to_owned(),
                <<$table::$col as diesel::Expression>::SqlType as Describe>::NAME,
                <<$table::$col as diesel::Expression>::SqlType as Describe>::NULLABLE,
            )
        ),*])
    };
}

fn expected() -> Vec<(&'static str, Vec<Col>)> {
    vec![
        columns!(orgs: id, name, enable_proactive_conversation_starters, max_budget_per_task, registered_marketplaces, created_at, updated_at, llm_monthly_budget),
        columns!(users: id, email, name, current_org_id, created_at, disabled_at),
        columns!(org_members: org_id, user_id, role, created_at),
        columns!(api_keys: id, user_id, org_id, name, key_hash, display_prefix, created_at, last_used_at, expires_at, revoked_at),
        columns!(sandboxes: id, org_id, owner_id, session_key_hash, created_at, spec_id, runtime, status, session_key_sealed, handle, agent_server_url, updated_at, started_at, last_used_at, deleted_at, url_port, status_message),
        columns!(conversations: id, org_id, owner_id, sandbox_id, title, execution_status, metadata, created_at, updated_at, selected_repository, selected_branch, git_provider, conversation_trigger, pr_number, llm_model, agent_kind, parent_conversation_id, public, tags, metrics, event_count, metrics_tokens, event_bytes, max_budget_per_task, budget_reached_at),
        columns!(start_tasks: id, org_id, created_by_user_id, status, detail, conversation_id, sandbox_id, agent_server_url, request, secrets_sealed, created_at, updated_at, claimed_by, claim_expires_at),
        columns!(events: seq, conversation_id, event_id, kind, source, timestamp, ts, payload, position),
        columns!(conversation_counts: org_id, owner_id, sub, n),
        columns!(start_task_counts: org_id, created_by_user_id, n),
        columns!(conversation_moves: conversation_id, org_id, old_updated_at, new_updated_at),
        columns!(conversation_tombstones: id, deleted_at),
        columns!(org_event_usage: org_id, event_count, event_bytes),
        columns!(user_settings: org_id, user_id, agent_settings, conversation_settings, preferences, llm_api_key_sealed, search_api_key_sealed, mcp_config_sealed, updated_at),
        columns!(user_secrets: org_id, user_id, name, description, value_sealed, created_at, updated_at),
        columns!(git_provider_tokens: org_id, user_id, provider, host, token_sealed, updated_at),
        columns!(org_defaults: org_id, agent_settings, conversation_settings, llm_api_key_sealed, search_api_key_sealed, mcp_config_sealed, updated_at, provider_connections),
        columns!(pending_messages: id, conversation_id, org_id, created_by_user_id, body, created_at),
        columns!(named_profiles: org_id, owner, collection, name, id, revision, kind, body, secret_sealed, active, created_at, updated_at),
        columns!(user_identities: issuer, subject, user_id, email, created_at, last_sign_in_at),
        columns!(sign_in_states: state_hash, nonce, pkce_verifier, return_to, expires_at),
        columns!(web_sessions: id_hash, user_id, csrf_token, remote_addr, created_at, expires_at),
        columns!(device_grants: device_code_hash, user_code, status, user_id, remote_addr, interval_secs, last_polled_at, created_at, expires_at),
        columns!(audit_log: id, org_id, actor_user_id, actor_email, action, target_user_id, target_email, detail, remote_addr, created_at),
        columns!(installation: singleton, id, key_fingerprint, created_at, restored_from, restored_at),
        columns!(llm_routes: token_hash, sandbox_id, conversation_id, org_id, user_id, upstream, api_key_sealed, key_owner, model, created_at),
        columns!(llm_usage: org_id, user_id, conversation_id, day, model, requests, input_tokens, output_tokens, cost_usd),
    ]
}

#[derive(QueryableByName, Debug)]
struct DbColumn {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Integer)]
    notnull: i32,
}

fn normalize(kind: &str) -> &'static str {
    match kind.to_ascii_lowercase().as_str() {
        "text" => "text",
        "boolean" => "bool",
        "double" | "double precision" | "real" => "double",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "date" => "date",
        "bigint" => "bigint",
        "integer" => "integer",
        other => panic!("unexpected column type {other}"),
    }
}

fn introspect(conn: &mut DbConnection, table: &str) -> Vec<Col> {
    let sql = match conn {
        DbConnection::Sqlite(_) => format!(
            "SELECT name, type AS kind, \"notnull\" FROM pragma_table_info('{table}') ORDER BY cid"
        ),
        DbConnection::Postgres(_) => format!(
            "SELECT column_name::text AS name, data_type::text AS kind, CASE WHEN is_nullable = 'NO' THEN 1 ELSE 0 END AS notnull \
             FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '{table}' ORDER BY ordinal_position"
        ),
    };
    let rows: Vec<DbColumn> = diesel::sql_query(sql).load(conn).unwrap();
    let sqlite = matches!(conn, DbConnection::Sqlite(_));
    rows.into_iter()
        .map(|c| {
            // SQLite integers are 64-bit (`INTEGER PRIMARY KEY` must be spelled so), and a
            // rowid primary key is never null although pragma_table_info says 0.
            let kind = match normalize(&c.kind) {
                "integer" if sqlite => "bigint",
                k => k,
            };
            let nullable = c.notnull == 0 && !(sqlite && c.name == "seq");
            (c.name, kind, nullable)
        })
        .collect()
}

fn tables(conn: &mut DbConnection) -> Vec<String> {
    #[derive(QueryableByName)]
    struct T {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let sql = match conn {
        DbConnection::Sqlite(_) => {
            // Ordinary tables only: not the FTS5 index of titles and its shadow tables.
            "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '__diesel_schema_migrations' ORDER BY name"
        }
        DbConnection::Postgres(_) => {
            "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name != '__diesel_schema_migrations' ORDER BY table_name"
        }
    };
    diesel::sql_query(sql)
        .load::<T>(conn)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn check_backend(backend: Backend) {
    let db = TestDatabase::new(backend);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    assert!(has_pending_migrations(&mut conn).unwrap());
    let applied = run_migrations(&mut conn).unwrap();
    assert!(!applied.is_empty(), "{backend}: no migration applied");
    assert!(!has_pending_migrations(&mut conn).unwrap());

    let want = expected();
    let mut want_tables: Vec<String> = want.iter().map(|(t, _)| t.to_string()).collect();
    want_tables.sort();
    assert_eq!(tables(&mut conn), want_tables, "{backend}: tables");
    for (table, cols) in &want {
        let mut got = introspect(&mut conn, table);
        let mut cols = cols.clone();
        got.sort();
        cols.sort();
        assert_eq!(got, cols, "{backend}: table {table} differs from schema.rs");
    }

    // Down, then up again: every migration is reversible and re-appliable.
    let reverted = revert_all_migrations(&mut conn).unwrap();
    assert_eq!(reverted.len(), applied.len());
    assert!(
        tables(&mut conn).is_empty(),
        "{backend}: tables left after down"
    );
    assert_eq!(run_migrations(&mut conn).unwrap(), applied);
}

#[test]
fn sqlite_migrations_up_down_and_schema() {
    check_backend(Backend::Sqlite);
}

#[test]
fn postgres_migrations_up_down_and_schema() {
    check_backend(Backend::Postgres);
}

#[test]
fn every_migration_folder_has_both_backends() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let list = |b: &str| {
        let mut v: Vec<String> = std::fs::read_dir(root.join(b))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(list("sqlite"), list("postgres"));
    for b in ["sqlite", "postgres"] {
        for m in list(b) {
            for f in ["up.sql", "down.sql"] {
                assert!(
                    root.join(b).join(&m).join(f).is_file(),
                    "{b}/{m}/{f} missing"
                );
            }
        }
    }
}

/// Runs the migrations up to and including `version` (`YYYY-MM-DD-NNNNNN`).
fn migrate_through(conn: &mut DbConnection, version: &str) {
    use diesel_migrations::MigrationHarness;
    use switchboard_storage::migrations::{POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
    let want = version.replace('-', "");
    loop {
        let ran = match conn {
            DbConnection::Sqlite(c) => c.run_next_migration(SQLITE_MIGRATIONS),
            DbConnection::Postgres(c) => c.run_next_migration(POSTGRES_MIGRATIONS),
        }
        .unwrap()
        .to_string();
        if ran.replace('-', "").starts_with(&want) {
            return;
        }
    }
}

/// The sandboxes migration keeps every registered sandbox (now `external`, `RUNNING`) and
/// every conversation's `sandbox_id`: on SQLite the table is rebuilt with foreign keys off,
/// so the implicit DELETE of dropping it does not set them to NULL.
fn check_sandboxes_migration_keeps_data(backend: Backend) {
    let db = TestDatabase::new(backend);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    let before = "2026-11-21-000002";
    migrate_through(&mut conn, before);
    use diesel::connection::SimpleConnection;
    conn.batch_execute(
        "INSERT INTO orgs (id, name, enable_proactive_conversation_starters, registered_marketplaces, created_at, updated_at) \
           VALUES ('o1', 'A', TRUE, '[]', '2026-01-01 00:00:00', '2026-01-01 00:00:00'); \
         INSERT INTO users (id, email, created_at) VALUES ('u1', 'a@x', '2026-01-01 00:00:00'); \
         INSERT INTO sandboxes (id, org_id, owner_id, session_key_hash, created_at) \
           VALUES ('s1', 'o1', 'u1', 'h1', '2026-01-01 00:00:00'); \
         INSERT INTO conversations (id, org_id, owner_id, sandbox_id, created_at, updated_at) \
           VALUES ('c1', 'o1', 'u1', 's1', '2026-01-01 00:00:00', '2026-01-01 00:00:00');",
    )
    .unwrap();
    run_migrations(&mut conn).unwrap();
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Nullable<Text>)]
        sandbox_id: Option<String>,
        #[diesel(sql_type = Text)]
        runtime: String,
        #[diesel(sql_type = Text)]
        status: String,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT c.sandbox_id, s.runtime, s.status FROM conversations c JOIN sandboxes s ON s.id = c.sandbox_id",
    )
    .load(&mut conn)
    .unwrap();
    assert_eq!(
        rows.len(),
        1,
        "{backend}: the conversation lost its sandbox"
    );
    assert_eq!(
        (
            rows[0].sandbox_id.as_deref(),
            rows[0].runtime.as_str(),
            rows[0].status.as_str()
        ),
        (Some("s1"), "external", "RUNNING"),
        "{backend}"
    );
    // Foreign keys still hold after the rebuild: a conversation of an unknown sandbox fails.
    assert!(
        conn.batch_execute(
            "INSERT INTO conversations (id, org_id, owner_id, sandbox_id, created_at, updated_at) \
             VALUES ('c2', 'o1', 'u1', 'nope', '2026-01-01 00:00:00', '2026-01-01 00:00:00');"
        )
        .is_err(),
        "{backend}: foreign keys are off after the migration"
    );
}

#[test]
fn sqlite_sandboxes_migration_keeps_data() {
    check_sandboxes_migration_keeps_data(Backend::Sqlite);
}

#[test]
fn postgres_sandboxes_migration_keeps_data() {
    check_sandboxes_migration_keeps_data(Backend::Postgres);
}

/// The event positions migration numbers existing events per conversation from 0 in append
/// order and sets each conversation's event count.
fn check_positions_backfill(backend: Backend) {
    use diesel::connection::SimpleConnection;
    let db = TestDatabase::new(backend);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    migrate_through(&mut conn, "2026-11-23-000002");
    let mut sql = String::from(
        "INSERT INTO orgs (id, name, enable_proactive_conversation_starters, registered_marketplaces, created_at, updated_at) \
           VALUES ('o1', 'A', TRUE, '[]', '2026-01-01 00:00:00', '2026-01-01 00:00:00'); \
         INSERT INTO users (id, email, created_at) VALUES ('u1', 'a@x', '2026-01-01 00:00:00'); \
         INSERT INTO conversations (id, org_id, owner_id, created_at, updated_at) VALUES \
           ('c1', 'o1', 'u1', '2026-01-01 00:00:00', '2026-01-01 00:00:00'), \
           ('c2', 'o1', 'u1', '2026-01-01 00:00:00', '2026-01-01 00:00:00'), \
           ('c3', 'o1', 'u1', '2026-01-01 00:00:00', '2026-01-01 00:00:00');",
    );
    // Interleaved: c1, c2, c1, c2, c1 ... with timestamps out of order.
    for i in 0..7 {
        let conv = if i % 2 == 0 { "c1" } else { "c2" };
        sql.push_str(&format!(
            " INSERT INTO events (conversation_id, event_id, kind, source, timestamp, ts, payload) \
              VALUES ('{conv}', 'e{i}', 'PauseEvent', 'user', 't', '2026-01-01 00:00:0{}', '{{}}');",
            9 - i
        ));
    }
    conn.batch_execute(&sql).unwrap();
    run_migrations(&mut conn).unwrap();
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        conversation_id: String,
        #[diesel(sql_type = Text)]
        event_id: String,
        #[diesel(sql_type = BigInt)]
        position: i64,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT conversation_id, event_id, position FROM events ORDER BY conversation_id, position",
    )
    .load(&mut conn)
    .unwrap();
    let got: Vec<(String, String, i64)> = rows
        .into_iter()
        .map(|r| (r.conversation_id, r.event_id, r.position))
        .collect();
    let want: Vec<(String, String, i64)> = [
        ("c1", "e0", 0),
        ("c1", "e2", 1),
        ("c1", "e4", 2),
        ("c1", "e6", 3),
        ("c2", "e1", 0),
        ("c2", "e3", 1),
        ("c2", "e5", 2),
    ]
    .iter()
    .map(|(c, e, p)| (c.to_string(), e.to_string(), *p))
    .collect();
    assert_eq!(got, want, "{backend}");
    let counts = pairs(
        &mut conn,
        "SELECT id, event_count AS n FROM conversations ORDER BY id",
    );
    assert_eq!(
        counts,
        vec![("c1".into(), 4), ("c2".into(), 3), ("c3".into(), 0)],
        "{backend}"
    );
    // The event quotas' usage (migration 2026-12-03-000001): each payload `{}` is 2 bytes.
    let bytes = pairs(
        &mut conn,
        "SELECT id, event_bytes AS n FROM conversations ORDER BY id",
    );
    assert_eq!(
        bytes,
        vec![("c1".into(), 8), ("c2".into(), 6), ("c3".into(), 0)],
        "{backend}"
    );
    let org = pairs(
        &mut conn,
        "SELECT org_id AS id, event_count AS n FROM org_event_usage UNION ALL \
         SELECT org_id AS id, event_bytes AS n FROM org_event_usage ORDER BY n",
    );
    assert_eq!(org, vec![("o1".into(), 7), ("o1".into(), 14)], "{backend}");
}

#[test]
fn sqlite_positions_backfill() {
    check_positions_backfill(Backend::Sqlite);
}

#[test]
fn postgres_positions_backfill() {
    check_positions_backfill(Backend::Postgres);
}

/// The `(id, n)` rows of `sql`.
fn pairs(conn: &mut DbConnection, sql: &str) -> Vec<(String, i64)> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    diesel::sql_query(sql)
        .load::<Row>(conn)
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.n))
        .collect()
}

/// The named profiles migration moves every profile into `named_profiles`: a member's LLM
/// profiles and the organization's (their keys and the active one kept) out of the JSON
/// arrays, and the agent profiles out of their table; down moves them back.
fn check_named_profiles_migration(backend: Backend) {
    use diesel::connection::SimpleConnection;
    use diesel_migrations::MigrationHarness;
    use switchboard_storage::migrations::{POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
    let db = TestDatabase::new(backend);
    let mut conn = DatabaseUrl::parse(db.url()).unwrap().connect().unwrap();
    let before = "2026-12-09-000002";
    migrate_through(&mut conn, before);
    let t = "'2026-01-01 00:00:00'";
    conn.batch_execute(&format!(
        "INSERT INTO orgs (id, name, enable_proactive_conversation_starters, registered_marketplaces, created_at, updated_at) \
           VALUES ('o1', 'A', TRUE, '[]', {t}, {t}); \
         INSERT INTO users (id, email, created_at) VALUES ('u1', 'a@x', {t}); \
         INSERT INTO user_settings (org_id, user_id, profiles, active_profile, updated_at) VALUES ('o1', 'u1', \
           '[{{\"name\":\"b\",\"config\":{{\"model\":\"m-b\",\"base_url\":null}}}},{{\"name\":\"a\",\"config\":{{\"model\":\"m-a\"}},\"api_key_sealed\":\"sealed-a\"}}]', \
           'b', {t}); \
         INSERT INTO org_defaults (org_id, profiles, active_profile, updated_at) VALUES ('o1', \
           '[{{\"name\":\"team\",\"config\":{{\"model\":\"m-t\"}},\"api_key_sealed\":\"sealed-t\"}}]', NULL, {t}); \
         INSERT INTO agent_profiles (org_id, user_id, id, name, revision, agent_kind, profile, active, created_at, updated_at) \
           VALUES ('o1', 'u1', '00000000-0000-0000-0000-000000000001', 'dev', 2, 'acp', '{{\"acp_server\":\"codex\"}}', TRUE, {t}, {t});"
    ))
    .unwrap();
    run_migrations(&mut conn).unwrap();
    #[derive(QueryableByName, Debug, PartialEq)]
    struct Row {
        #[diesel(sql_type = Text)]
        owner: String,
        #[diesel(sql_type = Text)]
        collection: String,
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Nullable<Text>)]
        id: Option<String>,
        #[diesel(sql_type = BigInt)]
        revision: i64,
        #[diesel(sql_type = Nullable<Text>)]
        kind: Option<String>,
        #[diesel(sql_type = Text)]
        body: String,
        #[diesel(sql_type = Nullable<Text>)]
        secret_sealed: Option<String>,
        #[diesel(sql_type = Bool)]
        active: bool,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT owner, collection, name, id, revision, kind, body, secret_sealed, active \
         FROM named_profiles ORDER BY collection, owner, name",
    )
    .load(&mut conn)
    .unwrap();
    let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                (r.owner.as_str(), r.collection.as_str(), r.name.as_str()),
                (r.id.as_deref(), r.revision, r.kind.as_deref()),
                (json(&r.body), r.secret_sealed.as_deref(), r.active),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                ("u1", "agent", "dev"),
                (Some("00000000-0000-0000-0000-000000000001"), 2, Some("acp")),
                (serde_json::json!({"acp_server": "codex"}), None, true)
            ),
            (
                ("", "llm", "team"),
                (None, 0, None),
                (serde_json::json!({"model": "m-t"}), Some("sealed-t"), false)
            ),
            (
                ("u1", "llm", "a"),
                (None, 0, None),
                (serde_json::json!({"model": "m-a"}), Some("sealed-a"), false)
            ),
            (
                ("u1", "llm", "b"),
                (None, 0, None),
                (
                    serde_json::json!({"model": "m-b", "base_url": null}),
                    None,
                    true
                )
            ),
        ],
        "{backend}"
    );
    // An agent profile has its id and kind; an LLM profile needs neither.
    let row = |collection: &str, name: &str, id: &str, kind: &str| {
        format!(
            "INSERT INTO named_profiles (org_id, owner, collection, name, id, kind, body, created_at, updated_at) \
             VALUES ('o1', 'u1', '{collection}', '{name}', {id}, {kind}, '{{}}', {t}, {t})"
        )
    };
    assert!(
        conn.batch_execute(&row("agent", "x", "'i'", "NULL"))
            .is_err(),
        "{backend}"
    );
    assert!(
        conn.batch_execute(&row("agent", "x", "NULL", "'acp'"))
            .is_err(),
        "{backend}"
    );
    assert!(
        conn.batch_execute(&row("agent", "x", "'i'", "'other'"))
            .is_err(),
        "{backend}"
    );
    conn.batch_execute(&row("llm", "c", "NULL", "NULL"))
        .unwrap();
    conn.batch_execute("DELETE FROM named_profiles WHERE name = 'c'")
        .unwrap();
    // Down: the arrays (in name order) and the agent profiles' table again.
    match &mut conn {
        DbConnection::Sqlite(c) => c.revert_last_migration(SQLITE_MIGRATIONS),
        DbConnection::Postgres(c) => c.revert_last_migration(POSTGRES_MIGRATIONS),
    }
    .unwrap();
    #[derive(QueryableByName)]
    struct Back {
        #[diesel(sql_type = Text)]
        profiles: String,
        #[diesel(sql_type = Nullable<Text>)]
        active_profile: Option<String>,
    }
    let back: Back = diesel::sql_query("SELECT profiles, active_profile FROM user_settings")
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(
        json(&back.profiles),
        serde_json::json!([
            {"name": "a", "config": {"model": "m-a"}, "api_key_sealed": "sealed-a"},
            {"name": "b", "config": {"model": "m-b", "base_url": null}, "api_key_sealed": null}
        ]),
        "{backend}"
    );
    assert_eq!(back.active_profile.as_deref(), Some("b"), "{backend}");
    let agents: Vec<Back> = diesel::sql_query(
        "SELECT profile AS profiles, name AS active_profile FROM agent_profiles WHERE active",
    )
    .load(&mut conn)
    .unwrap();
    assert_eq!(agents.len(), 1, "{backend}");
    assert_eq!(
        agents[0].active_profile.as_deref(),
        Some("dev"),
        "{backend}"
    );
}

#[test]
fn sqlite_named_profiles_migration_moves_every_profile() {
    check_named_profiles_migration(Backend::Sqlite);
}

#[test]
fn postgres_named_profiles_migration_moves_every_profile() {
    check_named_profiles_migration(Backend::Postgres);
}

use super::*;
use switchboard_model::LocItem;

fn entry(body: Value) -> ValidationError {
    read(&body).unwrap_err()
}

#[test]
fn an_openhands_body_gets_its_defaults() {
    let p =
        read(&json!({"llm_profile_ref": "fast", "id": "x", "name": "y", "revision": 4})).unwrap();
    assert_eq!(p.agent_kind, "openhands");
    assert_eq!(p.body["agent"], "CodeActAgent");
    assert_eq!(p.body["tools"], Value::Null);
    assert_eq!(p.body["disabled_skills"], json!([]));
    assert_eq!(p.body["enable_sub_agents"], false);
    assert_eq!(p.body["enable_switch_llm_tool"], true);
    assert_eq!(p.body["tool_concurrency_limit"], 1);
    assert_eq!(p.body["condenser"]["condenser_kind"], "llm_summarizing");
    assert_eq!(p.body["verification"]["critic_enabled"], false);
    assert_eq!(p.body["schema_version"], SCHEMA_VERSION);
    // The stored body: the kind's fields and the common ones, in the SDK's order; never the
    // server's own (id, name, revision) or the kind.
    let keys: Vec<&str> = p.body.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "mcp_server_refs",
            "secret_refs",
            "llm_profile_ref",
            "agent",
            "tools",
            "system_message_suffix",
            "disabled_skills",
            "condenser",
            "verification",
            "enable_sub_agents",
            "enable_switch_llm_tool",
            "tool_concurrency_limit",
        ]
    );
    // Reading what is stored (a start does) gives the same body.
    let mut again = p.body.clone();
    again.insert("agent_kind".into(), json!("openhands"));
    assert_eq!(read(&Value::Object(again)).unwrap(), p);
}

#[test]
fn an_acp_body_is_migrated_and_kept_apart() {
    let p =
        read(&json!({"agent_kind": "acp", "acp_command": "npx -y acp", "acp_prompt_timeout": 5}))
            .unwrap();
    assert_eq!(p.agent_kind, "acp");
    assert_eq!(p.body["acp_command"], json!(["npx", "-y", "acp"]));
    assert_eq!(p.body["acp_server"], "claude-code");
    assert_eq!(p.body["acp_prompt_timeout"], 5.0);
    assert_eq!(p.body["acp_startup_timeout"], 90.0);
    assert_eq!(p.body["acp_args"], Value::Null);
    let blank = read(&json!({"agent_kind": "acp", "acp_command": "  "})).unwrap();
    assert_eq!(blank.body["acp_command"], Value::Null);
    let argv = read(&json!({"agent_kind": "acp", "acp_command": ["a b", "c"]})).unwrap();
    assert_eq!(argv.body["acp_command"], json!(["a b", "c"]));
    let e = entry(json!({"agent_kind": "acp", "llm_profile_ref": "fast"}));
    assert_eq!(
        (e.error_type, e.loc),
        (ErrorType::ExtraForbidden, loc(["body", "llm_profile_ref"]))
    );
}

// One row per rule a body can break (over 100 lines: a table, read row by row).
#[test]
fn bad_bodies_name_their_field() {
    for (bad, at, kind) in [
        (json!([]), loc(["body"]), ErrorType::ModelType),
        (
            json!({}),
            loc(["body", "llm_profile_ref"]),
            ErrorType::Missing,
        ),
        (
            json!({"llm_profile_ref": ""}),
            loc(["body", "llm_profile_ref"]),
            ErrorType::StringTooShort,
        ),
        (
            json!({"llm_profile_ref": 3}),
            loc(["body", "llm_profile_ref"]),
            ErrorType::StringType,
        ),
        (
            json!({"llm_profile_ref": "a", "agent_kind": "other"}),
            loc(["body", "agent_kind"]),
            ErrorType::LiteralError,
        ),
        (
            json!({"llm_profile_ref": "a", "agent_kind": "a\u{0}"}),
            loc(["body", "agent_kind"]),
            ErrorType::StringPatternMismatch,
        ),
        (
            json!({"llm_profile_ref": "a", "tools": [{"params": {}}]}),
            vec![
                "body".into(),
                "tools".into(),
                LocItem::Index(0),
                "name".into(),
            ],
            ErrorType::Missing,
        ),
        (
            json!({"llm_profile_ref": "a", "tool_concurrency_limit": 0}),
            loc(["body", "tool_concurrency_limit"]),
            ErrorType::GreaterThanEqual,
        ),
        (
            json!({"llm_profile_ref": "a", "schema_version": 9}),
            loc(["body", "schema_version"]),
            ErrorType::LessThanEqual,
        ),
        (
            json!({"llm_profile_ref": "a", "mcp_server_refs": [1]}),
            vec!["body".into(), "mcp_server_refs".into(), LocItem::Index(0)],
            ErrorType::StringType,
        ),
        (
            json!({"llm_profile_ref": "a", "surprise": 1}),
            loc(["body", "surprise"]),
            ErrorType::ExtraForbidden,
        ),
        (
            json!({"agent_kind": "acp", "acp_prompt_timeout": 0}),
            loc(["body", "acp_prompt_timeout"]),
            ErrorType::GreaterThan,
        ),
        (
            json!({"agent_kind": "acp", "acp_server": "claude"}),
            loc(["body", "acp_server"]),
            ErrorType::LiteralError,
        ),
        (
            json!({"llm_profile_ref": "a", "agent": "PlannerAgent"}),
            loc(["body", "agent"]),
            ErrorType::ValueError,
        ),
        (
            json!({"llm_profile_ref": "a", "condenser": {"max_size": 5}}),
            loc(["body", "condenser", "max_size"]),
            ErrorType::GreaterThanEqual,
        ),
        (
            json!({"llm_profile_ref": "a", "verification": {"critic_enabled": true}}),
            loc(["body", "verification", "critic_enabled"]),
            ErrorType::ValueError,
        ),
        (
            json!({"llm_profile_ref": "a", "agent": "a\u{0}"}),
            loc(["body", "agent"]),
            ErrorType::StringPatternMismatch,
        ),
        (
            json!({"llm_profile_ref": "a\u{0}"}),
            loc(["body", "llm_profile_ref"]),
            ErrorType::StringPatternMismatch,
        ),
        (
            json!({"llm_profile_ref": "a", "condenser": {"x": "\u{0}"}}),
            loc(["body", "condenser", "x"]),
            ErrorType::StringPatternMismatch,
        ),
    ] {
        let e = entry(bad.clone());
        assert_eq!((e.error_type, &e.loc), (kind, &at), "{bad}: {e:?}");
    }
    let agent = entry(json!({"llm_profile_ref": "a", "agent": "PlannerAgent"}));
    assert!(agent.msg.contains("one agent class"), "{}", agent.msg);
}

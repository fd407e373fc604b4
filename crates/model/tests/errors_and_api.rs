//! The public API beyond the corpus: error shapes an HTTP layer relies on, run-time kinds,
//! generated fields, batch parsing, serde integration and redaction.

use serde_json::{Value, json};
use switchboard_model::{
    Action, ActionEvent, ErrorType, Event, EventBody, EventKind, LocItem, Observation, PauseEvent,
    Source, parse_event_batch,
};

fn loc(items: &[&dyn Fn() -> LocItem]) -> Vec<LocItem> {
    items.iter().map(|f| f()).collect()
}

fn err(v: Value) -> switchboard_model::ValidationError {
    Event::from_value(&v).unwrap_err()
}

fn action_event(action: Value) -> Value {
    json!({
        "thought": [], "action": action, "tool_name": "terminal", "tool_call_id": "c1",
        "tool_call": {"id": "c1", "name": "terminal", "arguments": "{}", "origin": "completion"},
        "llm_response_id": "r1", "kind": "ActionEvent"
    })
}

#[test]
fn malformed_json_is_json_invalid() {
    let e = Event::from_json_str("{\"kind\": ").unwrap_err();
    assert_eq!(e.error_type, ErrorType::JsonInvalid);
    assert!(e.loc.is_empty());
    assert!(e.msg.starts_with("Invalid JSON"), "{}", e.msg);
    assert_eq!(
        Event::from_slice(b"\xff").unwrap_err().error_type,
        ErrorType::JsonInvalid
    );
}

#[test]
fn nested_errors_carry_the_full_path_type_and_input() {
    let e = err(action_event(
        json!({"command": 5, "kind": "TerminalAction"}),
    ));
    assert_eq!(e.error_type.as_str(), "string_type");
    assert_eq!(e.loc, loc(&[&|| "action".into(), &|| "command".into()]));
    assert_eq!(e.msg, "Input should be a valid string");
    assert_eq!(e.input.as_deref(), Some(&json!(5)));

    let mut v = action_event(json!({"command": "ls", "kind": "TerminalAction"}));
    v["tool_call"]["arguments"] = json!({"a": 1});
    let e = err(v);
    assert_eq!(e.loc, [LocItem::from("tool_call"), "arguments".into()]);

    let mut v = action_event(Value::Null);
    v["thought"] = json!([{"text": "ok"}, {"text": 1}]);
    let e = err(v);
    assert_eq!(e.loc, [LocItem::from("thought"), 1.into(), "text".into()]);

    // FastAPI entry shape.
    let entry = serde_json::to_value(&e).unwrap();
    assert_eq!(entry["type"], "string_type");
    assert_eq!(entry["loc"], json!(["thought", 1, "text"]));
    assert_eq!(entry["input"], 1);
    let prefixed = e.prefixed([LocItem::from("body"), 3.into()]);
    assert_eq!(
        serde_json::to_value(&prefixed).unwrap()["loc"],
        json!(["body", 3, "thought", 1, "text"])
    );
}

#[test]
fn literal_and_bound_errors_carry_context() {
    let e = err(json!({"source": "env", "kind": "PauseEvent"}));
    assert_eq!(e.error_type.as_str(), "literal_error");
    assert_eq!(
        e.msg,
        "Input should be 'agent', 'user', 'environment' or 'hook'"
    );
    assert_eq!(
        e.ctx.as_deref(),
        Some(&json!({"expected": "'agent', 'user', 'environment' or 'hook'"}))
    );

    let e = err(json!({"llm_response_id": "r", "summary_offset": -1, "kind": "Condensation"}));
    assert_eq!(e.error_type.as_str(), "greater_than_equal");
    assert_eq!(e.ctx.as_deref(), Some(&json!({"ge": 0})));
    assert_eq!(e.loc, [LocItem::from("summary_offset")]);

    let mut v = action_event(Value::Null);
    v["critic_result"] = json!({"score": 1.5, "message": null});
    let e = err(v);
    assert_eq!(e.error_type.as_str(), "less_than_equal");
    assert_eq!(e.msg, "Input should be less than or equal to 1");

    let e = err(action_event(
        json!({"name": "w", "script": "s", "max_concurrency": 65, "kind": "WorkflowAction"}),
    ));
    assert_eq!(e.loc, [LocItem::from("action"), "max_concurrency".into()]);
}

#[test]
fn unknown_keys_follow_the_models_extra_policy() {
    // Event: forbidden, reported after field errors.
    let e = err(json!({"source": "user", "kind": "PauseEvent", "zzz": 1}));
    assert_eq!(
        (e.error_type, e.loc),
        (ErrorType::ExtraForbidden, vec![LocItem::from("zzz")])
    );
    // Message and MessageToolCall: ignored and dropped.
    let v = json!({"source": "user", "llm_message": {"role": "user", "content": "hi", "vision_enabled": true},
                   "kind": "MessageEvent"});
    let out = Event::from_value(&v).unwrap().to_json_string();
    assert!(!out.contains("vision_enabled"));
    assert!(
        out.contains(r#""content":[{"cache_prompt":false,"type":"text","text":"hi"}]"#),
        "{out}"
    );
    // ErrorClassification: forbidden.
    let e = err(json!({"tool_name": "t", "tool_call_id": "c", "error": "x",
                       "classification": {"kind": "auth", "retryable": false, "nope": 1}, "kind": "AgentErrorEvent"}));
    assert_eq!(e.loc, [LocItem::from("classification"), "nope".into()]);
}

#[test]
fn strict_where_the_sdk_coerces() {
    for (field, value, t) in [
        ("success", json!("true"), "bool_type"),
        ("exit_code", json!("0"), "int_type"),
        ("exit_code", json!(1.5), "int_from_float"),
    ] {
        let mut v = json!({"hook_event_type": "Stop", "hook_command": "h", "success": true, "exit_code": 0,
                           "kind": "HookExecutionEvent"});
        v[field] = value;
        let e = err(v);
        assert_eq!(
            (e.error_type.as_str(), e.loc.clone()),
            (t, vec![LocItem::from(field)])
        );
    }
    // An integral float is an integer in JSON terms.
    let v = json!({"hook_event_type": "Stop", "hook_command": "h", "success": true, "exit_code": 2.0,
                   "kind": "HookExecutionEvent"});
    assert!(
        Event::from_value(&v)
            .unwrap()
            .to_json_string()
            .contains(r#""exit_code":2,"#)
    );
}

#[test]
fn unknown_kinds_are_errors_but_run_time_action_kinds_are_kept() {
    let e = err(json!({"kind": "Pause"}));
    assert_eq!(e.error_type, ErrorType::ValueError);
    assert!(
        e.msg
            .starts_with("Value error, Unknown kind 'Pause' for openhands.sdk.event.base.Event"),
        "{}",
        e.msg
    );
    assert!(e.loc.is_empty());
    assert_eq!(
        err(json!({"source": "user"}))
            .msg
            .split(';')
            .next()
            .unwrap(),
        "Value error, Unknown kind '' for openhands.sdk.event.base.Event"
    );

    let e = err(action_event(
        json!({"command": "ls", "kind": "ShellAction"}),
    ));
    assert_eq!(
        (e.error_type, e.loc.clone()),
        (ErrorType::ValueError, vec![LocItem::from("action")])
    );

    let client = json!({"query": "weather", "limit": null, "kind": "ClientAction_lookup"});
    let event = Event::from_value(&action_event(client.clone())).unwrap();
    let EventBody::ActionEvent(ActionEvent {
        action: Some(Action::Opaque(opaque)),
        ..
    }) = &event.body
    else {
        panic!("not opaque: {event:?}")
    };
    assert_eq!(opaque.kind(), "ClientAction_lookup");
    let back: Value = serde_json::from_str(&event.to_json_string()).unwrap();
    assert_eq!(
        back["action"], client,
        "opaque objects are written back as received"
    );
    assert_eq!(
        Action::from_value(&json!({"kind": "TerminalActionWithRisk", "x": 1}))
            .unwrap()
            .kind(),
        "TerminalActionWithRisk"
    );
    assert!(Observation::from_value(&json!({"kind": "TerminalAction"})).is_err());
}

#[test]
fn sources_default_per_kind_and_are_required_where_the_sdk_requires_them() {
    let e = err(json!({"code": "X", "detail": "d", "kind": "ConversationErrorEvent"}));
    assert_eq!(
        (e.error_type, e.loc),
        (ErrorType::Missing, vec![LocItem::from("source")])
    );
    for kind in EventKind::ALL {
        match kind.default_source() {
            Some(_) => assert!(!matches!(
                kind,
                EventKind::MessageEvent | EventKind::TokenEvent
            )),
            None => assert!(matches!(
                kind,
                EventKind::MessageEvent
                    | EventKind::TokenEvent
                    | EventKind::ConversationErrorEvent
                    | EventKind::ServerErrorEvent
            )),
        }
    }
    let hook = Event::from_value(
        &json!({"hook_event_type": "Stop", "hook_command": "h", "success": true,
                                         "exit_code": 0, "kind": "HookExecutionEvent"}),
    )
    .unwrap();
    assert_eq!(hook.source(), Source::Hook);
}

#[test]
fn generated_fields_have_the_sdks_formats() {
    let event = Event::from_value(&json!({"kind": "PauseEvent"})).unwrap();
    let id = uuid::Uuid::parse_str(event.id()).unwrap();
    assert_eq!(id.get_version_num(), 4);
    assert_eq!(event.id(), id.to_string(), "lowercase, hyphenated");
    let ts = event.timestamp();
    assert!(ts.len() == 19 || ts.len() == 26, "{ts}");
    assert!(!ts.contains('+') && !ts.ends_with('Z'));
    let age = time::OffsetDateTime::now_utc() - event.timestamp_instant().unwrap();
    assert!(age.whole_seconds().abs() < 60, "timestamps are UTC");
    let made = Event::new(Source::User, PauseEvent {});
    assert_eq!(
        made.to_json_string(),
        format!(
            r#"{{"id":"{}","timestamp":"{}","source":"user","kind":"PauseEvent"}}"#,
            made.id, made.timestamp
        )
    );
}

#[test]
fn batches_are_all_or_nothing_with_the_index_in_the_location() {
    let ok = r#"[{"source":"user","kind":"PauseEvent"},{"kind":"InterruptEvent"}]"#;
    let events = parse_event_batch(ok).unwrap();
    assert_eq!(
        events.iter().map(Event::kind).collect::<Vec<_>>(),
        [EventKind::PauseEvent, EventKind::InterruptEvent]
    );
    let bad = r#"[{"kind":"PauseEvent"},{"kind":"PauseEvent","source":7}]"#;
    let e = parse_event_batch(bad).unwrap_err();
    assert_eq!(e.loc, [LocItem::from(1usize), "source".into()]);
    assert_eq!(
        parse_event_batch("{}").unwrap_err().error_type,
        ErrorType::ListType
    );
}

#[test]
fn serde_integration_uses_the_same_rules() {
    let events: Vec<Event> =
        serde_json::from_str(r#"[{"source":"user","kind":"PauseEvent"}]"#).unwrap();
    assert_eq!(events[0].kind(), EventKind::PauseEvent);
    let e = serde_json::from_str::<Vec<Event>>(r#"[{"kind":"PauseEvent","x":1}]"#).unwrap_err();
    assert!(e.to_string().contains("extra_forbidden"), "{e}");
}

#[test]
fn encrypted_reasoning_is_never_shown_by_debug() {
    let mut v = action_event(Value::Null);
    v["responses_reasoning_item"] = json!({"id": "r", "encrypted_content": "TOP-SECRET-BLOB"});
    let event = Event::from_value(&v).unwrap();
    assert!(!format!("{event:?}").contains("TOP-SECRET-BLOB"));
    assert!(
        event.to_json_string().contains("TOP-SECRET-BLOB"),
        "still persisted as received"
    );
}

#[test]
fn conversation_errors_are_classified_when_the_sender_did_not() {
    let e = Event::from_value(
        &json!({"source": "environment", "code": "APIError", "detail": "Error code: 401",
                                      "kind": "ConversationErrorEvent"}),
    )
    .unwrap();
    assert!(e.to_json_string().contains(
        r#""classification":{"kind":"auth","retryable":false,"user_action":"settings"}"#
    ));
}

#[test]
fn a_null_state_value_is_written_and_reloads_as_null() {
    let e = Event::from_value(
        &json!({"key": "stats", "value": null, "kind": "ConversationStateUpdateEvent"}),
    )
    .unwrap();
    let out = e.to_json_string();
    assert!(
        out.contains(r#""key":"stats","value":null,"kind""#),
        "{out}"
    );
    assert_eq!(Event::from_json_str(&out).unwrap(), e);
}

/// Integers are exactly 64-bit: a literal just outside either end is refused, although the one
/// below `i64::MIN` rounds to `-2^63` as a float.
#[test]
fn integers_are_exactly_64_bit() {
    let token = |ids: &str| {
        switchboard_model::Event::from_json_str(&format!(
            r#"{{"id":"t","timestamp":"2026-01-01T00:00:00","source":"agent","prompt_token_ids":[],"response_token_ids":[{ids}],"kind":"TokenEvent"}}"#
        ))
    };
    assert!(token("-9223372036854775808").is_ok());
    assert!(token("9223372036854775807").is_ok());
    assert!(token("9223372036854775808").is_err());
    assert!(token("-9223372036854775809").is_err());
    assert!(token("1e3").is_ok(), "an integral float is an integer");
}

//! Conformance with the Python SDK: every line of the corpus in `fixtures/conformance/`
//! (openhands-sdk 1.58.2, see its PROVENANCE.md), one case per line.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchboard_model::{Action, Event, EventKind, LocItem, Observation, ValidationError};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance")
}

fn jsonl(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    out
}

/// Runs `check` on every case, collecting failures so one run reports all of them.
fn run_cases(cases: Vec<(String, String)>, check: impl Fn(&str) -> Result<(), String>) -> usize {
    let mut failures = Vec::new();
    for (name, line) in &cases {
        if let Err(why) = check(line) {
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    cases.len()
}

fn cases_of(paths: &[PathBuf]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in paths {
        for (i, line) in jsonl(p).into_iter().enumerate() {
            out.push((
                format!("{}:{}", p.file_name().unwrap().to_string_lossy(), i + 1),
                line,
            ));
        }
    }
    out
}

fn canonical_files() -> Vec<PathBuf> {
    files(&corpus().join("valid"))
}

#[test]
fn canonical_lines_round_trip_byte_identical() {
    let n = run_cases(cases_of(&canonical_files()), |line| {
        let event = Event::from_json_str(line).map_err(|e| format!("rejected: {e}"))?;
        let out = event.to_json_string();
        if out != line {
            return Err(format!("\n  sent: {line}\n  got:  {out}"));
        }
        // And the output parses to the same event.
        let again = Event::from_json_str(&out).map_err(|e| e.to_string())?;
        if again != event {
            return Err("re-parse differs".into());
        }
        Ok(())
    });
    assert_eq!(n, 209, "canonical lines (conversation logs included)");
}

#[test]
fn full_lines_parse_and_write_the_canonical_line_of_the_same_event() {
    let mut canonical: HashMap<String, String> = HashMap::new();
    for (_, line) in cases_of(&canonical_files()) {
        let v: Value = serde_json::from_str(&line).unwrap();
        canonical.insert(v["id"].as_str().unwrap().to_owned(), line);
    }
    let reload_failures = jsonl(&corpus().join("notes/exclude_none_reload_failures.jsonl"));
    let unpaired_ids: HashSet<String> = reload_failures
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["full"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let n = run_cases(cases_of(&files(&corpus().join("valid/full"))), |line| {
        let event = Event::from_json_str(line).map_err(|e| format!("rejected: {e}"))?;
        let out = event.to_json_string();
        match canonical.get(&event.id) {
            Some(expected) if &out == expected => Ok(()),
            Some(expected) => Err(format!("\n  want: {expected}\n  got:  {out}")),
            None if unpaired_ids.contains(&event.id) => Ok(()),
            None => Err("no canonical line with this id".into()),
        }
    });
    assert_eq!(n, 186, "full lines");
}

/// `TerminalObservation.command = null` is dropped by the SDK's writer, so its output does not
/// reload; ours writes `"command": null` and reloads.
#[test]
fn required_nullable_fields_are_always_written() {
    for line in jsonl(&corpus().join("notes/exclude_none_reload_failures.jsonl")) {
        let note: Value = serde_json::from_str(&line).unwrap();
        let event = Event::from_value(&note["full"]).unwrap();
        let out: Value = serde_json::from_str(&event.to_json_string()).unwrap();
        assert_eq!(out["observation"]["command"], Value::Null);
        assert!(
            out["observation"]
                .as_object()
                .unwrap()
                .contains_key("command")
        );
        let mut expected = note["canonical_exclude_none"].clone();
        expected["observation"]["command"] = Value::Null;
        assert_eq!(out, expected);
        assert_eq!(Event::from_value(&out).unwrap(), event);
        // The SDK's own null-less form is rejected, as the SDK rejects it.
        let err = Event::from_value(&note["canonical_exclude_none"]).unwrap_err();
        assert_eq!(err.error_type.as_str(), "missing");
        assert_eq!(err.loc, [LocItem::from("observation"), "command".into()]);
    }
}

/// The SDK's error location (`a.0.TextContent.b`) as field names and indices. Class-name
/// segments mark a union member: the location is compared up to that point.
fn sdk_loc(sdk_error: &str) -> (Vec<LocItem>, bool) {
    let at = sdk_error.split_once(" at '").map(|(_, r)| r).unwrap_or("");
    let path = at.split_once("': ").map(|(p, _)| p).unwrap_or("");
    let mut out = Vec::new();
    if path.is_empty() {
        return (out, false);
    }
    // Map keys may contain dots only in the free-form maps, which these cases do not use.
    for seg in path.split('.') {
        if seg.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && !seg.contains('/') {
            return (out, true);
        }
        match seg.parse::<usize>() {
            Ok(i) => out.push(LocItem::Index(i)),
            Err(_) => out.push(LocItem::Key(seg.to_owned())),
        }
    }
    (out, false)
}

fn check_location(err: &ValidationError, sdk_error: &str) -> Result<(), String> {
    let (expected, union_member) = sdk_loc(sdk_error);
    let ok = if union_member {
        err.loc.starts_with(&expected)
    } else {
        err.loc == expected
    };
    // The SDK's only path through a map key with dots: `commit.changes.src/lib.rs.type`.
    let ok =
        ok || sdk_error.contains("src/lib.rs") && err.loc.contains(&LocItem::from("src/lib.rs"));
    if ok {
        Ok(())
    } else {
        Err(format!("loc {:?}, sdk said {sdk_error}", err.loc))
    }
}

#[test]
fn invalid_lines_are_rejected_at_the_sdk_location() {
    let n = run_cases(cases_of(&files(&corpus().join("invalid"))), |line| {
        let case: Value = serde_json::from_str(line).unwrap();
        let sdk_error = case["sdk_error"].as_str().unwrap();
        // Both entry points: the JSON text and an already parsed value.
        let text = serde_json::to_string(&case["event"]).unwrap();
        let err = match Event::from_json_str(&text) {
            Ok(e) => return Err(format!("accepted {}: {}", case["why"], e.to_json_string())),
            Err(err) => err,
        };
        assert_eq!(Event::from_value(&case["event"]).unwrap_err(), err);
        if err.msg.is_empty() {
            return Err("empty message".into());
        }
        check_location(&err, sdk_error)
    });
    assert_eq!(n, 338, "invalid lines");
}

fn strip_generated(v: &mut Value, fields: &[Value]) -> Result<(), String> {
    for f in fields {
        let f = f.as_str().unwrap();
        let got = v
            .get(f)
            .and_then(Value::as_str)
            .ok_or(format!("generated field {f} missing"))?;
        let ok = match f {
            "id" | "key" => uuid::Uuid::parse_str(got)
                .is_ok_and(|u| u.get_version_num() == 4 && got == u.to_string()),
            "timestamp" => {
                let re_ok = got.len() == 19 || (got.len() == 26 && got.as_bytes()[19] == b'.');
                re_ok && switchboard_model::parse_instant(got).is_some() && !got.ends_with('Z')
            }
            _ => false,
        };
        if !ok {
            return Err(format!("generated {f} has the wrong format: {got}"));
        }
        v.as_object_mut().unwrap().remove(f);
    }
    Ok(())
}

#[test]
fn defaults_fill_exactly_the_sdk_output() {
    let n = run_cases(cases_of(&[corpus().join("defaults.jsonl")]), |line| {
        let case: Value = serde_json::from_str(line).unwrap();
        let fields = case["generated_fields"].as_array().unwrap();
        let text = serde_json::to_string(&case["input"]).unwrap();
        let out = match case["model"].as_str().unwrap() {
            "Event" => Event::from_json_str(&text).map(|e| e.to_json_string()),
            "Action" => Action::from_json_str(&text).map(|a| serde_json::to_string(&a).unwrap()),
            "Observation" => {
                Observation::from_json_str(&text).map(|o| serde_json::to_string(&o).unwrap())
            }
            other => return Err(format!("unknown model {other}")),
        }
        .map_err(|e| format!("rejected: {e}"))?;
        let mut got: Value = serde_json::from_str(&out).unwrap();
        let mut want = case["output_exclude_none"].clone();
        strip_generated(&mut got, fields)?;
        for f in fields {
            want.as_object_mut().unwrap().remove(f.as_str().unwrap());
        }
        // Same keys in the same order, same values.
        let order = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        if got != want || order(&got) != order(&want) {
            return Err(format!("\n  want: {want}\n  got:  {got}"));
        }
        Ok(())
    });
    assert_eq!(n, 49);
}

/// Removes every null (the SDK's `output` here is `model_dump()` with nulls).
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Inputs the SDK accepts through lax coercion and Switchboard rejects (README, "Where
/// Switchboard differs from the SDK"): the note and the error type expected.
const REJECTED_COERCIONS: &[(&str, &str)] = &[
    ("is_error must be bool", "bool_type"),
    ("lax coercion: 'true' -> true, '0' -> 0", "bool_type"),
    (
        "lax coercion of list items; negative ints allowed",
        "int_type",
    ),
];

#[test]
fn accepted_edge_cases_are_accepted_or_rejected_as_documented() {
    let n = run_cases(
        cases_of(&[corpus().join("accepted_edge_cases.jsonl")]),
        |line| {
            let case: Value = serde_json::from_str(line).unwrap();
            let note = case["note"].as_str().unwrap();
            let result = Event::from_value(&case["input"]);
            if let Some((_, t)) = REJECTED_COERCIONS.iter().find(|(n, _)| note.contains(n)) {
                return match result {
                    Err(e) if e.error_type.as_str() == *t => Ok(()),
                    Err(e) => Err(format!("rejected with {e}, expected {t}")),
                    Ok(_) => Err("accepted a lax coercion".into()),
                };
            }
            let event = result.map_err(|e| format!("rejected: {e}"))?;
            let mut got: Value = serde_json::from_str(&event.to_json_string()).unwrap();
            let mut want = case["output"].clone();
            if note.contains("random uuid key") {
                let key = got["key"].as_str().unwrap().to_owned();
                assert!(uuid::Uuid::parse_str(&key).is_ok());
                want["key"] = Value::String(key);
            }
            strip_nulls(&mut got);
            strip_nulls(&mut want);
            // `forgotten_event_ids` is a set: the SDK's order depends on its hash seed.
            for v in [&mut got, &mut want] {
                if let Some(Value::Array(ids)) = v.get_mut("forgotten_event_ids") {
                    ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                }
            }
            if got == want {
                Ok(())
            } else {
                Err(format!("\n  want: {want}\n  got:  {got}"))
            }
        },
    );
    assert_eq!(n, 18);
}

#[test]
fn conversation_logs_parse_in_order_and_every_parent_resolves() {
    let logs: Vec<PathBuf> = canonical_files()
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("conversation_"))
        .collect();
    assert!(!logs.is_empty());
    for log in logs {
        let mut seen = HashSet::new();
        let mut kinds = HashSet::new();
        for (i, line) in jsonl(&log).iter().enumerate() {
            let event = Event::from_json_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", log.display(), i + 1));
            if let Some(parent) = event.parent_id() {
                assert!(
                    parent == "__root__" || seen.contains(parent),
                    "{}:{}: parent {parent} not seen before",
                    log.display(),
                    i + 1
                );
            }
            assert!(seen.insert(event.id.clone()), "duplicate id {}", event.id);
            kinds.insert(event.kind());
            assert!(event.timestamp_instant().is_some());
        }
        assert!(
            kinds.contains(&EventKind::SystemPromptEvent)
                && kinds.contains(&EventKind::ActionEvent)
        );
    }
}

#[test]
fn every_kind_of_schema_md_is_known() {
    let schema = fs::read_to_string(corpus().join("SCHEMA.md")).unwrap();
    let section = |from: &str, to: &str| -> Vec<String> {
        let start = schema.find(from).unwrap();
        let end = schema[start..].find(to).unwrap() + start;
        schema[start..end]
            .lines()
            .filter_map(|l| l.strip_prefix("### "))
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    let mut events = section("## 6. Event kinds", "## 7.");
    events.sort();
    let mut ours: Vec<String> = EventKind::NAMES.iter().map(|s| s.to_string()).collect();
    ours.sort();
    assert_eq!(events, ours);
    let actions = section("## 7. Action kinds", "## 8.");
    let observations = section("## 8. Observation kinds", "## 9.");
    assert_eq!(actions.len(), 40);
    assert_eq!(observations.len(), 27);
    assert_eq!(
        Action::KINDS,
        actions
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
    );
    assert_eq!(
        Observation::KINDS,
        observations
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
    );
    assert_eq!(EventKind::NAMES.len(), 20);
}

/// Cross-checks every model against the SDK's JSON Schema (`schema/Event.json`): for each key
/// of each corpus event and of its action or observation, removing a key the schema requires
/// gives `missing` at that key; removing any other key is accepted and, where the schema gives
/// a default, the default is written back.
#[test]
fn required_fields_and_defaults_agree_with_the_json_schema() {
    let schema: Value =
        serde_json::from_str(&fs::read_to_string(corpus().join("schema/Event.json")).unwrap())
            .unwrap();
    let defs = schema["$defs"].as_object().unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for (name, line) in cases_of(&canonical_files()) {
        let event: Value = serde_json::from_str(&line).unwrap();
        let mut targets: Vec<(Vec<&str>, String)> =
            vec![(vec![], event["kind"].as_str().unwrap().to_owned())];
        for nested in ["action", "observation"] {
            if let Some(k) = event
                .get(nested)
                .and_then(|a| a.get("kind"))
                .and_then(Value::as_str)
            {
                targets.push((vec![nested], k.to_owned()));
            }
        }
        for (path, model) in targets {
            let Some(def) = defs.get(&model) else {
                failures.push(format!("{name}: {model} not in the schema"));
                continue;
            };
            let required: HashSet<&str> = def["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let target = path.iter().fold(&event, |v, p| &v[*p]);
            for key in target.as_object().unwrap().keys() {
                if key == "kind" {
                    continue;
                }
                let mut v = event.clone();
                let obj = path.iter().fold(&mut v, |v, p| &mut v[*p]);
                obj.as_object_mut().unwrap().remove(key);
                let result = Event::from_value(&v);
                let mut want_loc: Vec<LocItem> = path.iter().map(|p| LocItem::from(*p)).collect();
                want_loc.push(LocItem::from(key.as_str()));
                checked += 1;
                match (required.contains(key.as_str()), result) {
                    (true, Err(e)) if e.error_type.as_str() == "missing" && e.loc == want_loc => {}
                    (true, other) => {
                        failures.push(format!("{name}: {model}.{key} is required, got {other:?}"))
                    }
                    (false, Err(e)) => {
                        failures.push(format!("{name}: {model}.{key} is optional, got {e}"))
                    }
                    (false, Ok(parsed)) => {
                        let out: Value = serde_json::from_str(&parsed.to_json_string()).unwrap();
                        let written = path.iter().fold(&out, |v, p| &v[*p]).get(key.as_str());
                        let default = def["properties"][key.as_str()].get("default");
                        let generated = matches!(key.as_str(), "id" | "timestamp" | "key");
                        match default {
                            Some(Value::Null) | None if !generated => {
                                // A `default_factory` (`[]`, `{}`) does not appear in the schema.
                                let empty = |w: &&Value| {
                                    w.is_null() || w == &&json!([]) || w == &&json!({})
                                };
                                if let Some(w) = written.filter(|w| !empty(w)) {
                                    // Filled after validation (SCHEMA.md §5), or a default
                                    // factory the schema does not show (SCHEMA.md §8).
                                    let factory =
                                        model == "TerminalObservation" && key == "metadata";
                                    if key != "classification" && !factory {
                                        failures.push(format!("{name}: {model}.{key} has no default but {w} was written"));
                                    }
                                }
                            }
                            Some(d) if !d.is_null() && written != Some(d) => {
                                failures.push(format!(
                                    "{name}: {model}.{key} default {d}, wrote {written:?}"
                                ));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 1500, "only {checked} keys checked");
}

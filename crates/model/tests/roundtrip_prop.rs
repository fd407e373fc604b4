//! Property: for any event the reader accepts, write → read → write is stable (the second
//! write is byte-identical to the first and reads back to an equal event).
//!
//! Inputs are the corpus events with random leaves replaced by arbitrary JSON scalars
//! (unicode strings, control characters, integers, floats, booleans, null), so every kind and
//! every field type is exercised, including mutations the reader must reject without panicking.

use std::fs;
use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::Value;
use switchboard_model::Event;

static CORPUS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/valid");
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|x| x == "jsonl") {
            for line in fs::read_to_string(&p)
                .unwrap()
                .lines()
                .filter(|l| !l.is_empty())
            {
                out.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    out
});

/// The number of values in a document (every node, depth first).
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count).sum(),
        Value::Array(a) => a.iter().map(count).sum(),
        _ => 0,
    }
}

fn replace_leaf(v: &mut Value, index: usize, with: Value) {
    fn walk(v: &mut Value, target: usize, counter: &mut usize, with: &mut Option<Value>) {
        if *counter == target {
            if let Some(w) = with.take() {
                *v = w;
            }
            *counter += 1;
            return;
        }
        *counter += 1;
        match v {
            Value::Object(m) => m.values_mut().for_each(|x| walk(x, target, counter, with)),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, target, counter, with)),
            _ => {}
        }
    }
    let mut with = Some(with);
    walk(v, index, &mut 0, &mut with);
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\/\u{7f}\u{2028}\u{1F600}é]{0,8}".prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (0.0f64..=1.0).prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        Just(Value::Array(vec![])),
        Just(Value::Object(Default::default())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn write_read_write_is_stable(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), scalar()), 0..4),
    ) {
        let mut value = pick.get(&CORPUS).clone();
        for (at, with) in mutations {
            let n = count(&value);
            replace_leaf(&mut value, at.index(n), with);
        }
        let text = serde_json::to_string(&value).unwrap();
        match Event::from_json_str(&text) {
            Ok(event) => {
                let first = event.to_json_string();
                let again = Event::from_json_str(&first)
                    .map_err(|e| TestCaseError::fail(format!("own output rejected: {e}\n{first}")))?;
                prop_assert_eq!(&again, &event);
                prop_assert_eq!(again.to_json_string(), first);
                // Reading from a Value gives the same event.
                prop_assert_eq!(Event::from_value(&value).unwrap(), event);
            }
            Err(err) => {
                // Rejections are deterministic and identical through both entry points.
                prop_assert_eq!(Event::from_value(&value).unwrap_err(), err.clone());
                prop_assert!(!err.msg.is_empty());
            }
        }
    }

    #[test]
    fn any_text_content_survives(text in any::<String>(), thought in "\\PC{0,40}") {
        let v = serde_json::json!({
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": text}]},
            "extended_content": [{"text": thought}],
            "kind": "MessageEvent",
        });
        let event = Event::from_value(&v).unwrap();
        let out = event.to_json_string();
        let back: Value = serde_json::from_str(&out).unwrap();
        prop_assert_eq!(&back["llm_message"]["content"][0]["text"], &Value::String(text.clone()));
        // Non-ASCII is written raw, not escaped.
        if !text.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
            prop_assert!(out.contains(&text));
        }
        prop_assert_eq!(Event::from_json_str(&out).unwrap(), event);
    }
}

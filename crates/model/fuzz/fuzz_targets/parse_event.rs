//! Fuzzes the event reader with arbitrary bytes: it must never panic, and whatever it accepts
//! must write → read → write to the same bytes and an equal event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_model::{Event, parse_event_batch};

fuzz_target!(|data: &[u8]| {
    match Event::from_slice(data) {
        Ok(event) => {
            let first = event.to_json_string();
            let again = Event::from_json_str(&first).expect("own output must parse");
            assert_eq!(again, event);
            assert_eq!(again.to_json_string(), first);
        }
        Err(err) => {
            assert!(!err.msg.is_empty());
            // The error serializes as a FastAPI entry.
            serde_json::to_string(&err).expect("error serializes");
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(events) = parse_event_batch(text) {
            for e in events {
                let _ = e.to_json_string();
            }
        }
    }
});

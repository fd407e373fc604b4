//! The webhook batch reader (`switchboard_domain::events::prepare_batch`) on arbitrary bodies:
//! never panics; a batch it accepts holds no streaming delta and no event id with a NUL
//! (API.md, Event ingestion and NUL characters), and reading it again gives the same events
//! (kinds, sources, and the ids sent: an event without an id or a timestamp is given a fresh
//! UUID and the time of reading, as the SDK's defaults, so those and the payloads may differ
//! between two readings).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_domain::events::prepare_batch;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(batch) = prepare_batch(body) {
        for e in &batch.events {
            assert!(!e.event_id.contains('\0'), "{body:?}");
            assert_ne!(e.kind.as_str(), "StreamingDeltaEvent", "{body:?}");
        }
        let again = prepare_batch(body).expect("accepted once, accepted again");
        assert_eq!(again.events.len(), batch.events.len(), "{body:?}");
        for (a, b) in again.events.iter().zip(&batch.events) {
            assert_eq!((a.kind, a.source), (b.kind, b.source), "{body:?}");
            // An event sent without an id is given a fresh UUID at each reading (the SDK's
            // default); an id that was sent is kept as sent.
            if a.event_id != b.event_id {
                for id in [&a.event_id, &b.event_id] {
                    assert!(
                        id.len() == 36 && !body.contains(id.as_str()),
                        "{id} is neither the id sent nor a generated one: {body:?}"
                    );
                }
            }
        }
        assert_eq!(again.status, batch.status);
    }
});

//! The webhook batch reader (`switchboard_domain::events::prepare_batch`) on arbitrary bodies:
//! never panics; a batch it accepts holds no streaming delta and no event id with a NUL
//! (API.md, Event ingestion and NUL characters), and reading it again gives the same events
//! (ids, kinds and sources: an event without a timestamp is given the time of reading, as the
//! SDK's default, so timestamps and payloads may differ between two readings).
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
        let key = |b: &switchboard_domain::events::PreparedBatch| {
            b.events
                .iter()
                .map(|e| (e.event_id.clone(), e.kind, e.source))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&again), key(&batch));
        assert_eq!(again.status, batch.status);
    }
});

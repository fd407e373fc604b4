//! The page cursor codec (`switchboard_domain::cursor::Keyset`) on arbitrary `page_id` text:
//! decoding never panics, and whatever decodes re-encodes to a cursor that decodes to the same
//! position (so a client can only ever continue from a position the service wrote).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::events::EventCursor;
use switchboard_domain::sandboxes::records::{SandboxCursor, SpecCursor};

fn roundtrip<C: Keyset + PartialEq + std::fmt::Debug>(page_id: &str) {
    if let Some(c) = C::decode(page_id) {
        let again = C::decode(&c.encode());
        assert_eq!(again.as_ref(), Some(&c), "{page_id:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(page_id) = std::str::from_utf8(data) else {
        return;
    };
    roundtrip::<EventCursor>(page_id);
    roundtrip::<SandboxCursor>(page_id);
    roundtrip::<SpecCursor>(page_id);
});

//! SQLite's write-ahead log stays bounded under steady reads and writes (issue 13, the soak).
//!
//! With automatic checkpoints off (as the server runs) and only PASSIVE checkpoints, SQLite
//! never starts the log over while readers keep arriving: a 2-minute soak grew a 64 MB
//! database's log to 1.9 GB, and its index, mapped into the server's memory, with it.
//! `DieselStore::checkpoint_with` truncates the log once it passes a threshold; here readers
//! and a writer run without pause while the checkpoint runs as the server's supervisor runs it,
//! and the log file must stay near the threshold.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use switchboard_domain::conversations::Conversation;
use switchboard_domain::events::{NewEvent, prepare_batch};
use switchboard_domain::ports::{Append, EventStore};
use switchboard_domain::{ConversationId, Switchboard};
use switchboard_storage::{BackendKind, DieselStore, PoolConfig};
use switchboard_testkit::TestDatabase;
use time::OffsetDateTime;

/// SQLite's page size here: every log frame is one page (plus a 24-byte header).
const PAGE_BYTES: u64 = 4096;
/// The threshold of the test: 256 frames, about 1 MiB of log.
const THRESHOLD_FRAMES: i64 = 256;

fn batch(from: usize) -> Vec<NewEvent> {
    let events: Vec<String> = (from..from + 20)
        .map(|i| {
            format!(
                r#"{{"id":"e{i}","timestamp":"2026-11-23T10:00:00.{:06}","source":"agent","kind":"MessageEvent","llm_message":{{"role":"assistant","content":[{{"type":"text","text":"{}"}}]}}}}"#,
                i % 1_000_000,
                "x".repeat(400)
            )
        })
        .collect();
    prepare_batch(&format!("[{}]", events.join(",")))
        .unwrap()
        .events
}

fn wal_bytes(db: &TestDatabase) -> u64 {
    let path = format!("{}-wal", db.url().trim_start_matches("sqlite://"));
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn the_log_stays_bounded_under_steady_reads_and_writes() {
    let db = TestDatabase::sqlite();
    let config = PoolConfig {
        manual_checkpoints: true,
        ..PoolConfig::default_for(BackendKind::Sqlite)
    };
    let store = Arc::new(DieselStore::open(db.url(), Some(config)).unwrap().0);
    let services = Switchboard::new(store.clone());
    let owner = services.operator().bootstrap("A", "a@example.com").unwrap();
    let conversation = Conversation {
        id: ConversationId(uuid::Uuid::from_u128(1)),
        org_id: owner.org_id,
        owner_id: owner.user_id,
        sandbox_id: None,
        title: None,
        execution_status: None,
        created_at: OffsetDateTime::now_utc(),
        updated_at: OffsetDateTime::now_utc(),
    };
    let stop = Arc::new(AtomicBool::new(false));

    let writer = {
        let (store, stop, conversation) = (store.clone(), stop.clone(), conversation.clone());
        std::thread::spawn(move || {
            let mut next = 0;
            while !stop.load(Ordering::Relaxed) {
                store
                    .append_events(Append {
                        conversation: conversation.clone(),
                        events: batch(next),
                        status: None,
                        details: Default::default(),
                        now: OffsetDateTime::now_utc(),
                    })
                    .unwrap();
                next += 20;
            }
            next
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (store, stop, id) = (store.clone(), stop.clone(), conversation.id);
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let count = store.event_count(id).unwrap();
                    let after = (count - 50 - r * 7).max(-1);
                    store.events_after(id, after, None, 50).unwrap();
                    reads += 1;
                }
                reads
            })
        })
        .collect();

    // The supervisor's loop, faster: a checkpoint every 20 ms for 4 s.
    let mut largest = 0;
    let mut truncations = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        let c = store.checkpoint_with(THRESHOLD_FRAMES).unwrap();
        truncations += u32::from(c.truncated);
        largest = largest.max(wal_bytes(&db));
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(
        written > 0 && reads > 0,
        "no load: {written} events, {reads} reads"
    );

    // Between two checkpoints the writer adds some frames; the log must never get far past
    // the threshold. Without the truncation it grows by the whole write volume.
    let bound = 8 * THRESHOLD_FRAMES as u64 * (PAGE_BYTES + 24);
    assert!(
        largest <= bound,
        "the log reached {largest} bytes (bound {bound}; {written} events, {truncations} truncations)"
    );

    assert!(
        truncations > 0,
        "the log was never truncated ({written} events written)"
    );

    // With the load gone, one checkpoint empties the log.
    let last = store.checkpoint_with(1).unwrap();
    assert!(last.truncated, "{last:?}");
    assert_eq!(wal_bytes(&db), 0);
    assert_eq!(store.event_count(conversation.id).unwrap(), written as i64);

    // The truncation waited with a short busy timeout; every pooled connection has the pool's
    // own back (holding them all at once reaches the one the checkpoints used).
    let held: Vec<_> = (0..store.pool_usage().connections)
        .map(|_| store.conn().unwrap())
        .collect();
    for mut conn in held {
        assert_eq!(
            busy_timeout(&mut conn),
            i64::from(switchboard_storage::SQLITE_BUSY_TIMEOUT_MS)
        );
    }
}

fn busy_timeout(conn: &mut switchboard_storage::DbConnection) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        timeout: i64,
    }
    use diesel::RunQueryDsl;
    diesel::sql_query("PRAGMA busy_timeout")
        .get_result::<Row>(conn)
        .unwrap()
        .timeout
}

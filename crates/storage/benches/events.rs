//! Event store benchmark, storage layer (`just bench-events`, driven by
//! `scripts/bench-events.sh`; not a CI test, and not meant to be run on its own).
//!
//! Loads one conversation with `SB_BENCH_BIG` events (default 1,000,000), one with 1,000 and
//! `SB_BENCH_CONVS` conversations (default 10,000) of 100 events each through
//! [`EventStore::append_events`] in batches of 1,000 (100 for the small conversations), then
//! times the search, count and batch-get calls of the API's queries on the store directly
//! (p50/p99 over a timing loop) and pages through the big conversation once. Writes what the
//! HTTP half of the benchmark needs (conversation ids, cursors, windows, ids) to
//! `SB_BENCH_OUT` as JSON.
//!
//! Environment: `SB_BENCH_DB_URL` (required), `SB_BENCH_ORG`, `SB_BENCH_USER`,
//! `SB_BENCH_SANDBOX` (an existing org, member and sandbox: `switchboard bootstrap` and
//! `switchboard sandboxes register`), `SB_BENCH_OUT`, `SB_BENCH_BIG`, `SB_BENCH_CONVS`.
//!
//! Events: `MessageEvent` (1% exactly: every 100th), `ActionEvent` and `ObservationEvent`
//! alternating, 300–600 bytes of canonical JSON each; timestamps 10 ms apart, every 7th equal
//! to the previous one (ties) and every 50th 3 s early (out of order).

use std::time::{Duration, Instant};

use serde_json::json;
use switchboard_domain::conversations::Conversation;
use switchboard_domain::cursor::Keyset;
use switchboard_domain::event_quota::EventQuota;
use switchboard_domain::events::{
    EventCursor as Cursor, EventFilter, SearchQuery, SortOrder, prepare_batch,
};
use switchboard_domain::ports::{Append, EventStore};
use switchboard_domain::{ConversationId, OrgId, SandboxId, UserId};
use switchboard_storage::DieselStore;
use time::OffsetDateTime;

/// 2026-11-21T00:00:00Z in microseconds.
const BASE_MICROS: i64 = 1_795_219_200_000_000;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_num(name: &str, default: u64) -> u64 {
    env(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Microseconds of event `i`'s timestamp.
fn ts_micros(i: u64) -> i64 {
    let mut j = i;
    if j % 7 == 3 {
        j -= 1; // same timestamp as the previous event
    }
    let mut t = BASE_MICROS + j as i64 * 10_000;
    if i % 50 == 25 {
        t -= 3_000_000; // arrives after ~300 later events
    }
    t
}

fn instant(micros: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000).unwrap()
}

/// Naive ISO-8601, as the agent server sends.
fn naive_iso(micros: i64) -> String {
    let t = instant(micros);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// The id of event `i` of conversation number `conv`.
fn event_id(conv: u32, i: u64) -> String {
    format!("{conv:08x}-0000-4000-8000-{i:012x}")
}

fn event_json(conv: u32, i: u64) -> String {
    let id = event_id(conv, i);
    let ts = naive_iso(ts_micros(i));
    let call = format!("call_{conv:x}_{i:x}");
    if i.is_multiple_of(100) {
        json!({"id": id, "timestamp": ts, "source": "user",
            "llm_message": {"role": "user", "content": [{"cache_prompt": false, "type": "text",
                "text": format!("Please fix the failing test number {i} in tests/test_api.py and run the suite again.")}],
                "thinking_blocks": []},
            "activated_skills": [], "extended_content": [], "kind": "MessageEvent"})
    } else if i % 2 == 1 {
        let cmd = format!("pytest -q tests/test_api.py -k case_{}", i % 997);
        json!({"id": id, "timestamp": ts, "source": "agent",
            "thought": [{"cache_prompt": false, "type": "text", "text": "Running the tests that cover this change."}],
            "reasoning_content": "", "thinking_blocks": [],
            "action": {"command": cmd, "is_input": false, "reset": false, "kind": "TerminalAction"},
            "tool_name": "terminal", "tool_call_id": call,
            "tool_call": {"id": call, "name": "terminal",
                "arguments": json!({"command": cmd, "is_input": false}).to_string(), "origin": "completion"},
            "llm_response_id": format!("resp_{conv:x}_{i:x}"), "security_risk": "LOW",
            "summary": "run the tests", "kind": "ActionEvent"})
    } else {
        json!({"id": id, "timestamp": ts, "source": "environment", "tool_name": "terminal",
            "tool_call_id": format!("call_{conv:x}_{:x}", i - 1),
            "observation": {"content": [{"cache_prompt": false, "type": "text",
                "text": format!("..F.\nFAILED tests/test_api.py::case_{} - AssertionError: 2 != 3\n1 failed, 3 passed in 0.{:02}s\n", i % 997, i % 100)}],
                "is_error": false, "command": "pytest -q", "exit_code": 1, "timeout": false,
                "kind": "TerminalObservation"},
            "action_id": event_id(conv, i - 1), "kind": "ObservationEvent"})
    }
    .to_string()
}

/// A webhook-shaped batch: events `from..to` of conversation `conv`.
fn batch_json(conv: u32, from: u64, to: u64) -> String {
    let mut s = String::from("[");
    for i in from..to {
        if i > from {
            s.push(',');
        }
        s.push_str(&event_json(conv, i));
    }
    s.push(']');
    s
}

struct Ctx {
    store: DieselStore,
    org: OrgId,
    user: UserId,
    sandbox: SandboxId,
}

impl Ctx {
    fn conversation(&self, n: u32) -> Conversation {
        let now = OffsetDateTime::now_utc();
        Conversation {
            id: ConversationId(uuid::Uuid::from_u128(
                0x5b00_0000_0000_4000_8000_0000_0000_0000 | u128::from(n),
            )),
            org_id: self.org,
            owner_id: self.user,
            sandbox_id: Some(self.sandbox),
            title: None,
            execution_status: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Appends events `0..n` to conversation `conv` in batches of `batch`; returns seconds.
    fn load(&self, conv: u32, n: u64, batch: u64) -> f64 {
        let c = self.conversation(conv);
        let start = Instant::now();
        let mut from = 0;
        while from < n {
            let to = (from + batch).min(n);
            let batch = prepare_batch(&batch_json(conv, from, to)).unwrap();
            let out = self
                .store
                .append_events(Append {
                    conversation: c.clone(),
                    events: batch.events,
                    status: batch.status,
                    details: Default::default(),
                    now: OffsetDateTime::now_utc(),
                })
                .unwrap()
                .unwrap();
            assert_eq!(
                out.stored as u64,
                to - from,
                "conversation {conv} at {from}"
            );
            from = to;
        }
        start.elapsed().as_secs_f64()
    }
}

struct Stats {
    n: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

/// Runs `f` (after 10 warm-up calls) up to `iters` times or for about `budget`, at least 20.
fn measure(iters: usize, budget: Duration, mut f: impl FnMut()) -> Stats {
    for _ in 0..10 {
        f();
    }
    let mut samples = Vec::with_capacity(iters);
    let start = Instant::now();
    while samples.len() < iters && (samples.len() < 20 || start.elapsed() < budget) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples.sort();
    let pct =
        |p: f64| samples[((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1];
    Stats {
        n: samples.len(),
        p50: pct(0.50),
        p99: pct(0.99),
        mean: samples.iter().sum::<Duration>() / samples.len() as u32,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn page(filter: EventFilter, sort: SortOrder, after: Option<Cursor>) -> SearchQuery {
    SearchQuery {
        filter,
        sort,
        after,
        limit: 100,
    }
}

/// The cursor of a page whose last item is the first event at or after event `i`'s nominal
/// time (what `next_page_id` is after paging ~`i` events in).
fn cursor_at(ctx: &Ctx, conv: ConversationId, i: u64) -> Cursor {
    let q = SearchQuery {
        filter: EventFilter {
            timestamp_gte: Some(instant(BASE_MICROS + i as i64 * 10_000)),
            ..Default::default()
        },
        sort: SortOrder::Timestamp,
        after: None,
        limit: 1,
    };
    let row = &ctx.store.search_events(conv, &q).unwrap()[0];
    Cursor {
        ts: row.ts,
        seq: row.seq,
    }
}

fn main() {
    let url =
        env("SB_BENCH_DB_URL").expect("SB_BENCH_DB_URL (run through scripts/bench-events.sh)");
    let id = |name: &str| -> uuid::Uuid {
        env(name)
            .unwrap_or_else(|| panic!("{name}"))
            .parse()
            .unwrap()
    };
    // Every quota judged (limits no load reaches), so the load's rate includes the judgment:
    // the default 100,000 events per conversation would refuse the big conversation.
    let (store, _) = DieselStore::open(&url, None).unwrap();
    let store = store.with_event_quota(EventQuota {
        max_events_per_conversation: Some(i64::MAX),
        max_bytes_per_conversation: Some(i64::MAX),
        max_bytes_per_org: Some(i64::MAX),
    });
    let ctx = Ctx {
        store,
        org: OrgId(id("SB_BENCH_ORG")),
        user: UserId(id("SB_BENCH_USER")),
        sandbox: SandboxId(id("SB_BENCH_SANDBOX")),
    };
    let big_n = env_num("SB_BENCH_BIG", 1_000_000);
    let convs = env_num("SB_BENCH_CONVS", 10_000) as u32;
    let (big, small) = (0u32, 1u32);

    // ---- load
    let t = ctx.load(big, big_n, 1000);
    println!(
        "load: {big_n} events into one conversation in {t:.1} s ({:.0} events/s, batches of 1000)",
        big_n as f64 / t
    );
    let t = ctx.load(small, 1000, 1000);
    println!("load: 1000 events into one conversation in {t:.2} s");
    let start = Instant::now();
    for c in 0..convs {
        ctx.load(100 + c, 100, 100);
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "load: {convs} conversations x 100 events in {t:.1} s ({:.0} events/s, {:.0} batches/s)",
        f64::from(convs) * 100.0 / t,
        f64::from(convs) / t
    );
    if ctx.store.kind() == switchboard_storage::BackendKind::Postgres {
        // What autovacuum does shortly after a bulk load: visibility map and statistics.
        use diesel::connection::SimpleConnection;
        let start = Instant::now();
        let mut conn = ctx.store.conn().unwrap();
        conn.batch_execute("VACUUM ANALYZE events").unwrap();
        println!(
            "VACUUM ANALYZE events: {:.1} s",
            start.elapsed().as_secs_f64()
        );
    }

    // ---- queries, on the store directly
    let big_id = ctx.conversation(big).id;
    let small_id = ctx.conversation(small).id;
    let deep = cursor_at(&ctx, big_id, big_n / 2);
    let small_deep = cursor_at(&ctx, small_id, 500);
    let (w0, w1) = (big_n * 2 / 5, big_n * 2 / 5 + 1000);
    let window = EventFilter {
        timestamp_gte: Some(instant(BASE_MICROS + w0 as i64 * 10_000)),
        timestamp_lt: Some(instant(BASE_MICROS + w1 as i64 * 10_000)),
        ..Default::default()
    };
    let kind = EventFilter {
        kind: Some(switchboard_model::EventKind::MessageEvent),
        ..Default::default()
    };
    let batch_ids: Vec<String> = (0..100)
        .map(|k| event_id(big, k * (big_n / 100) + 37))
        .collect();
    let s = &ctx.store;
    let budget = Duration::from_secs(3);
    println!(
        "\nstorage calls (conversation of {big_n} events unless noted): n, p50, p99, mean in ms"
    );
    let report = |name: &str, st: Stats| {
        println!(
            "  {name:<44} {:>6} {:>8.3} {:>8.3} {:>8.3}",
            st.n,
            ms(st.p50),
            ms(st.p99),
            ms(st.mean)
        );
    };
    type Case<'a> = (&'a str, Box<dyn FnMut() + 'a>);
    let cases: Vec<Case<'_>> = vec![
        (
            "search: first page",
            Box::new(|| {
                assert_eq!(
                    s.search_events(
                        big_id,
                        &page(EventFilter::default(), SortOrder::Timestamp, None)
                    )
                    .unwrap()
                    .len(),
                    101
                );
            }),
        ),
        (
            "search: page after cursor ~500k in",
            Box::new(|| {
                assert_eq!(
                    s.search_events(
                        big_id,
                        &page(EventFilter::default(), SortOrder::Timestamp, Some(deep))
                    )
                    .unwrap()
                    .len(),
                    101
                );
            }),
        ),
        (
            "search: kind__eq=MessageEvent (1%)",
            Box::new(|| {
                assert_eq!(
                    s.search_events(big_id, &page(kind.clone(), SortOrder::Timestamp, None))
                        .unwrap()
                        .len(),
                    101
                );
            }),
        ),
        (
            "search: TIMESTAMP_DESC first page",
            Box::new(|| {
                assert_eq!(
                    s.search_events(
                        big_id,
                        &page(EventFilter::default(), SortOrder::TimestampDesc, None)
                    )
                    .unwrap()
                    .len(),
                    101
                );
            }),
        ),
        (
            "search: time window (~1000 events)",
            Box::new(|| {
                assert_eq!(
                    s.search_events(big_id, &page(window.clone(), SortOrder::Timestamp, None))
                        .unwrap()
                        .len(),
                    101
                );
            }),
        ),
        (
            "count: whole conversation",
            Box::new(|| {
                assert_eq!(
                    s.count_events(big_id, &EventFilter::default()).unwrap(),
                    big_n as i64
                );
            }),
        ),
        (
            "count: kind__eq=MessageEvent",
            Box::new(|| {
                assert_eq!(
                    s.count_events(big_id, &kind).unwrap(),
                    big_n.div_ceil(100) as i64
                );
            }),
        ),
        (
            "count: time window",
            Box::new(|| {
                assert!(s.count_events(big_id, &window).unwrap() > 900);
            }),
        ),
        (
            "get: 100 ids",
            Box::new(|| {
                assert_eq!(s.get_events(big_id, &batch_ids).unwrap().len(), 100);
            }),
        ),
        (
            "1k conversation: search first page",
            Box::new(|| {
                assert_eq!(
                    s.search_events(
                        small_id,
                        &page(EventFilter::default(), SortOrder::Timestamp, None)
                    )
                    .unwrap()
                    .len(),
                    101
                );
            }),
        ),
        (
            "1k conversation: page after cursor ~500 in",
            Box::new(|| {
                assert_eq!(
                    s.search_events(
                        small_id,
                        &page(
                            EventFilter::default(),
                            SortOrder::Timestamp,
                            Some(small_deep)
                        )
                    )
                    .unwrap()
                    .len(),
                    101
                );
            }),
        ),
    ];
    for (name, mut f) in cases {
        report(name, measure(5000, budget, &mut f));
    }

    // ---- full scan on the store
    let start = Instant::now();
    let (mut after, mut total, mut pages) = (None, 0usize, 0usize);
    loop {
        let mut rows = s
            .search_events(
                big_id,
                &page(EventFilter::default(), SortOrder::Timestamp, after),
            )
            .unwrap();
        let more = rows.len() > 100;
        rows.truncate(100);
        total += rows.len();
        pages += 1;
        after = rows.last().map(|r| Cursor {
            ts: r.ts,
            seq: r.seq,
        });
        if !more {
            break;
        }
    }
    assert_eq!(total as u64, big_n);
    println!(
        "  full scan (storage calls, limit 100): {total} events in {pages} pages, {:.2} s",
        start.elapsed().as_secs_f64()
    );

    if let Some(out) = env("SB_BENCH_OUT") {
        let iso =
            |t: OffsetDateTime| format!("{}Z", naive_iso((t.unix_timestamp_nanos() / 1000) as i64));
        let info = json!({
            "big": big_id.to_string(),
            "small": small_id.to_string(),
            "big_events": big_n,
            "deep_page_id": deep.encode(),
            "small_deep_page_id": small_deep.encode(),
            "window_gte": iso(window.timestamp_gte.unwrap()),
            "window_lt": iso(window.timestamp_lt.unwrap()),
            "batch_ids": batch_ids,
        });
        std::fs::write(out, info.to_string()).unwrap();
    }
}

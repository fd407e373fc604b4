//! `kill -9` of the real binary at random moments during sustained webhook ingestion and
//! concurrent settings writes, on both backends (API.md, Reliability and security): after each
//! restart every event answered 2xx is stored exactly once, the settings are those of the last
//! acknowledged write or of the one in flight at the kill (never older), and no write is half
//! applied (the two fields of each write always agree).
//!
//! Rounds: `SWITCHBOARD_CRASH_ROUNDS` (default 20); the kill comes 150 to 1,500 ms after the
//! load started, drawn from a seed printed at the start (`SWITCHBOARD_CRASH_SEED` replays it).

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchboard_testkit::{Backend, TestDatabase};

const CONVERSATION: &str = "7d3c2b1a-9e8f-4a6b-8c5d-0e1f2a3b4c5d";
/// Events per webhook batch.
const BATCH: usize = 5;

/// A small deterministic generator (xorshift), seeded once per test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// What the load threads saw answered.
#[derive(Default)]
struct Acked {
    /// Event ids of batches answered 200.
    events: Vec<String>,
    /// The last settings write answered 200, and the last one sent.
    settings_acked: Option<u64>,
    settings_sent: Option<u64>,
}

fn event_id(round: usize, seq: usize, i: usize) -> String {
    format!("00000000-{round:04}-4000-8000-{:012}", seq * BATCH + i)
}

fn settings_body(n: u64) -> Value {
    json!({
        "max_budget_per_task": n as f64,
        "registered_marketplaces": [{"name": format!("m{n}"), "source": format!("github:o/r{n}")}],
    })
}

/// The ingesting thread: the acknowledged event ids.
type EventsThread = thread::JoinHandle<Vec<String>>;
/// The settings writer: the last acknowledged write and the last sent.
type SettingsThread = thread::JoinHandle<(Option<u64>, Option<u64>)>;

/// Ingests batches and writes settings until `stop`, recording what was acknowledged.
fn load(
    server: &Server,
    round: usize,
    key: &str,
    session: &str,
    next_settings: u64,
    stop: Arc<AtomicBool>,
) -> (EventsThread, SettingsThread) {
    let hook = server.url(&format!("/api/v1/webhooks/events/{CONVERSATION}"));
    let session = session.to_owned();
    let stop_events = stop.clone();
    let events = thread::spawn(move || {
        let http = client();
        let mut acked = Vec::new();
        for seq in 0.. {
            if stop_events.load(Ordering::Relaxed) {
                break;
            }
            let ids: Vec<String> = (0..BATCH).map(|i| event_id(round, seq, i)).collect();
            let body: Vec<String> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    format!(
                        r#"{{"id":"{id}","timestamp":"2026-11-23T{:02}:{:02}:{:02}.{:06}","kind":"PauseEvent"}}"#,
                        round % 24,
                        (seq / 60) % 60,
                        seq % 60,
                        i
                    )
                })
                .collect();
            let r = http
                .post(&hook)
                .header("X-Session-API-Key", &session)
                .header("content-type", "application/json")
                .body(format!("[{}]", body.join(",")))
                .send();
            match r {
                Ok(r) if r.status().as_u16() == 200 => acked.extend(ids),
                Ok(r) => panic!("webhook answered {}", r.status()),
                Err(_) => break, // the server is gone
            }
        }
        acked
    });
    let url = server.url("/api/organizations/app");
    let key = key.to_owned();
    let settings = thread::spawn(move || {
        let http = client();
        let (mut acked, mut sent) = (None, None);
        for n in next_settings.. {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            sent = Some(n);
            let r = http
                .post(&url)
                .header("X-Access-Token", &key)
                .json(&settings_body(n))
                .send();
            match r {
                Ok(r) if r.status().as_u16() == 200 => acked = Some(n),
                Ok(r) => panic!("settings write answered {}", r.status()),
                Err(_) => break,
            }
        }
        (acked, sent)
    });
    (events, settings)
}

/// Every event id stored in the conversation, with how many times it appears.
fn stored_events(server: &Server, key: &str) -> HashMap<String, usize> {
    let http = client();
    let mut out: HashMap<String, usize> = HashMap::new();
    let mut page: Option<String> = None;
    loop {
        let mut url = server.url(&format!(
            "/api/v1/conversation/{CONVERSATION}/events/search?limit=100"
        ));
        if let Some(p) = &page {
            url.push_str(&format!("&page_id={p}"));
        }
        let (status, body) = send_json(http.get(url).header("X-Access-Token", key));
        if status == 404 && page.is_none() {
            return out; // nothing ingested yet
        }
        assert_eq!(status, 200, "{body}");
        for e in body["items"].as_array().unwrap() {
            *out.entry(e["id"].as_str().unwrap().to_owned()).or_default() += 1;
        }
        match body["next_page_id"].as_str() {
            Some(p) => page = Some(p.to_owned()),
            None => return out,
        }
    }
}

fn kill_nine_rounds(backend: Backend) {
    let rounds: usize = std::env::var("SWITCHBOARD_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("SWITCHBOARD_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("{backend}: {rounds} rounds, SWITCHBOARD_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let db = TestDatabase::new(backend);
    let url = db.url();
    let boot = cli_json(
        url,
        &[
            "bootstrap",
            "--org-name",
            "Crash",
            "--email",
            "c@example.com",
        ],
    );
    let key = str_of(&boot, "api_key").to_owned();
    let reg = cli_json(
        url,
        &[
            "sandboxes",
            "register",
            "--org-id",
            str_of(&boot, "org_id"),
            "--user-id",
            str_of(&boot, "user_id"),
        ],
    );
    let session = str_of(&reg, "session_api_key").to_owned();

    let mut all_acked: HashSet<String> = HashSet::new();
    let mut last_acked_settings: Option<u64> = None;
    let mut next_settings = 1u64;
    let mut acked_total = Acked::default();
    for round in 0..rounds {
        let mut server = Server::spawn(url);
        let stop = Arc::new(AtomicBool::new(false));
        let (events, settings) = load(&server, round, &key, &session, next_settings, stop.clone());
        let delay = 150 + rng.next() % 1350;
        thread::sleep(Duration::from_millis(delay));
        server.signal("KILL");
        server
            .wait_exit(Duration::from_secs(30))
            .expect("not killed");
        stop.store(true, Ordering::Relaxed);
        let acked_events = events.join().unwrap();
        let (acked, sent) = settings.join().unwrap();
        all_acked.extend(acked_events.iter().cloned());
        acked_total.events.extend(acked_events);
        if acked.is_some() {
            last_acked_settings = acked;
        }
        acked_total.settings_acked = last_acked_settings;
        acked_total.settings_sent = sent.or(acked_total.settings_sent);
        if let Some(s) = sent {
            next_settings = s + 1;
        }

        // Restart and check.
        let server = Server::spawn(url);
        let stored = stored_events(&server, &key);
        for id in &all_acked {
            assert_eq!(
                stored.get(id).copied(),
                Some(1),
                "{backend} round {round} (kill after {delay} ms): acknowledged event {id}"
            );
        }
        let (status, got) = send_json(
            client()
                .get(server.url("/api/organizations/app"))
                .header("X-Access-Token", &key),
        );
        assert_eq!(status, 200, "{got}");
        if let Some(acked) = last_acked_settings {
            let n = got["max_budget_per_task"].as_f64().unwrap() as u64;
            let sent = acked_total.settings_sent.unwrap();
            assert!(
                (acked..=sent).contains(&n),
                "{backend} round {round}: settings {n}, acknowledged {acked}, last sent {sent}"
            );
            assert_eq!(
                got["registered_marketplaces"][0]["name"],
                format!("m{n}"),
                "{backend} round {round}: a half-applied write: {got}"
            );
            // What is stored is now the floor: a later round cannot go back before it.
            last_acked_settings = Some(n);
        }
        server.stop(Duration::from_secs(30));
    }
    assert!(
        all_acked.len() >= rounds * BATCH,
        "{backend}: too little was acknowledged to mean anything ({})",
        all_acked.len()
    );
    assert!(
        last_acked_settings.is_some(),
        "{backend}: no settings write acknowledged"
    );
    eprintln!(
        "{backend}: {rounds} kills survived; {} events acknowledged, last acknowledged settings write #{}",
        all_acked.len(),
        acked_total.settings_acked.unwrap_or(0)
    );
}

#[test]
fn kill_nine_loses_nothing_acknowledged_sqlite() {
    kill_nine_rounds(Backend::Sqlite);
}

#[test]
fn kill_nine_loses_nothing_acknowledged_postgres() {
    kill_nine_rounds(Backend::Postgres);
}

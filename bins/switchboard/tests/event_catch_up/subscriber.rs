//! A subscriber of `/sockets/session/{id}` that stays for a whole test: it replays from the
//! start, reconnects with `after_seq` whenever its socket ends (Switchboard killed and
//! restarted on the same port), and records every `durable` frame's `seq` and event id.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// What the subscriber received: `(seq, event id)` of every durable frame, in arrival order.
pub struct Subscriber {
    received: Arc<Mutex<Vec<(i64, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Subscriber {
    /// Subscribes to conversation `id` on `addr` (`host:port`) with API key `key`.
    pub fn start(addr: &str, key: &str, id: &str) -> Subscriber {
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (received.clone(), stop.clone());
        let (addr, key, id) = (addr.to_owned(), key.to_owned(), id.to_owned());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let after = r.lock().unwrap().last().map_or(-1, |(seq, _)| *seq);
                if let Some(mut socket) = connect(&addr, &key, &id, after) {
                    read(&mut socket, &r, &s);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Subscriber {
            received,
            stop,
            thread: Some(thread),
        }
    }

    /// Waits until the subscriber has received `ids` (in any order), at most `within`.
    pub fn wait_for(&self, ids: &[String], within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        loop {
            {
                let got = self.received.lock().unwrap();
                if ids.iter().all(|id| got.iter().any(|(_, g)| g == id)) {
                    return true;
                }
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops and answers what was received.
    pub fn finish(mut self) -> Vec<(i64, String)> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.received.lock().unwrap().clone()
    }
}

fn connect(
    addr: &str,
    key: &str,
    id: &str,
    after: i64,
) -> Option<WebSocket<MaybeTlsStream<TcpStream>>> {
    let mut request = format!("ws://{addr}/sockets/session/{id}?after_seq={after}")
        .into_client_request()
        .ok()?;
    request
        .headers_mut()
        .insert("X-Access-Token", key.parse().ok()?);
    let (socket, _) = tungstenite::connect(request).ok()?;
    if let MaybeTlsStream::Plain(tcp) = socket.get_ref() {
        tcp.set_read_timeout(Some(Duration::from_millis(200)))
            .ok()?;
    }
    Some(socket)
}

/// Reads frames until the socket ends or `stop` is set.
fn read(
    socket: &mut WebSocket<MaybeTlsStream<TcpStream>>,
    received: &Mutex<Vec<(i64, String)>>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::SeqCst) {
        match socket.read() {
            Ok(Message::Text(text)) => {
                let Ok(frame) = serde_json::from_str::<Value>(text.as_str()) else {
                    continue;
                };
                if frame["type"] == "durable" {
                    let seq = frame["seq"].as_i64().expect("a durable frame has a seq");
                    let id = frame["event"]["id"].as_str().unwrap_or_default().to_owned();
                    received.lock().unwrap().push((seq, id));
                }
            }
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
    let _ = socket.close(None);
}

/// Asserts a gapless, duplicate-free stream: `seq` 0, 1, 2, … each once, and no event id twice.
#[track_caller]
pub fn assert_gapless(received: &[(i64, String)]) {
    for (i, (seq, _)) in received.iter().enumerate() {
        assert_eq!(
            *seq, i as i64,
            "frame {i} has seq {seq}: a gap or a repeat; all: {received:?}"
        );
    }
    let mut ids: Vec<&String> = received.iter().map(|(_, id)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), received.len(), "an event id came twice");
}

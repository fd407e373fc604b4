//! Live delivery (API.md, Live delivery): conversations' events over websockets,
//! `GET /sockets/events/{id}` (the agent server's protocol) and `GET /sockets/session/{id}`
//! (its 1.58.2 envelope protocol).
//!
//! Delivery is a tail of the event store plus a wake-up: each subscriber remembers the last
//! position it sent, reads the next page from the store, writes it (awaiting the socket, so a
//! slow client only reads slower and the server holds at most one page for it), and once
//! caught up waits on the conversation's wake-up in the [`hub::Hub`]. Appends of this process
//! wake it directly; on PostgreSQL, appends of other processes wake it through the `LISTEN`
//! connection. There is no in-memory bus that could drop: what a subscriber sends is what the
//! store holds, in position order, each event once.

pub mod hub;
pub mod relay;
pub mod sockets;
mod tail;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_domain::{OrgId, UserId};
use tokio::sync::watch;

pub use hub::Hub;
pub use relay::{DEFAULT_MAX_RELAYS, Relays};

use crate::member_sockets::{MemberPermit, MemberSockets, SocketLimit};

/// Limits and timings of live delivery.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Sockets this process serves at once; one more is accepted and closed with 1013
    /// (`--max-subscribers`).
    pub max_subscribers: usize,
    /// Sockets one member (user) may hold at once on this process, whatever keys they use;
    /// one more is closed with 1013 once authenticated, so that one member never takes every
    /// socket, also by minting keys (`--max-sockets-per-member`; issue 18, Quotas, counted
    /// per key then; issue 33, per member).
    pub max_sockets_per_member: usize,
    /// Sockets the members of one organization may hold together on this process (of the
    /// conversation's organization; `--max-sockets-per-org`, issue 33); `None`: no limit
    /// but the members'. One more is closed with 1013 once authenticated.
    pub max_sockets_per_org: Option<usize>,
    /// Upstream sockets of transient-event relays at once; a conversation watched beyond it
    /// gets durable frames only (its subscribers are not refused). Derived from the
    /// open-files limit by `serve`.
    pub max_relays: usize,
    /// How often the server pings each socket; a socket that leaves two pings unanswered is
    /// closed.
    pub ping_interval: Duration,
    /// Largest client frame (and message, continuations aggregated), bytes; a larger one
    /// closes the socket with 1009.
    pub max_frame_bytes: usize,
    /// How long a socket without credentials on the upgrade may take to send its `auth`
    /// frame before it is closed with 4001.
    pub auth_timeout: Duration,
}

/// Default [`LiveConfig::max_subscribers`].
pub const DEFAULT_MAX_SUBSCRIBERS: usize = 20_000;
/// Default [`LiveConfig::max_sockets_per_member`] (issue 18, Quotas; issue 33).
pub const DEFAULT_MAX_SOCKETS_PER_MEMBER: usize = 200;

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            max_subscribers: DEFAULT_MAX_SUBSCRIBERS,
            max_sockets_per_member: DEFAULT_MAX_SOCKETS_PER_MEMBER,
            max_sockets_per_org: None,
            max_relays: DEFAULT_MAX_RELAYS,
            ping_interval: Duration::from_secs(20),
            max_frame_bytes: 1 << 20,
            auth_timeout: Duration::from_secs(10),
        }
    }
}

/// What every socket of a process is told at once: a heartbeat is due, or the server stops.
/// One `watch` for all sockets, instead of a timer per socket: an idle socket holds one
/// receiver, and 10,000 of them put no 10,000 timers in the runtime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Signal {
    /// Heartbeats so far: each one pings every socket (and closes those that left the last
    /// two unanswered).
    pub beat: u64,
    /// The server is stopping: close with 1001.
    pub stopping: bool,
}

/// Live delivery's shared state: the hub, the limits, the subscriber count, and the heartbeat
/// and shutdown signal.
pub struct Live {
    hub: Arc<Hub>,
    relays: Arc<Relays>,
    config: LiveConfig,
    subscribers: AtomicUsize,
    max_subscribers: AtomicUsize,
    /// Sockets per member, for [`LiveConfig::max_sockets_per_member`].
    per_member: Arc<MemberSockets>,
    /// [`LiveConfig::ping_interval`] in milliseconds, changeable ([`Live::set_ping_interval`]).
    ping_interval_ms: AtomicU64,
    /// Whether the heartbeat task runs (it starts with the first socket).
    beating: AtomicBool,
    signals: watch::Sender<Signal>,
}

impl Default for Live {
    fn default() -> Self {
        Live::new(LiveConfig::default())
    }
}

impl Live {
    /// Live delivery under `config`.
    pub fn new(config: LiveConfig) -> Self {
        Live {
            hub: Arc::new(Hub::default()),
            relays: Arc::new(Relays::new(config.max_relays)),
            config: config.clone(),
            subscribers: AtomicUsize::new(0),
            max_subscribers: AtomicUsize::new(config.max_subscribers),
            per_member: MemberSockets::new(
                config.max_sockets_per_member,
                config.max_sockets_per_org,
            ),
            ping_interval_ms: AtomicU64::new(millis(config.ping_interval)),
            beating: AtomicBool::new(false),
            signals: watch::Sender::new(Signal::default()),
        }
    }

    /// The hub: give it to the store (`observe_appends`) and, on PostgreSQL, to the `LISTEN`
    /// task, so appends wake subscribers.
    pub fn hub(&self) -> Arc<Hub> {
        self.hub.clone()
    }

    /// The relays of agent servers' transient events (one per watched conversation).
    pub fn relays(&self) -> Arc<Relays> {
        self.relays.clone()
    }

    /// The limits in force.
    pub fn config(&self) -> &LiveConfig {
        &self.config
    }

    /// Changes the subscriber limit for sockets admitted from now on.
    pub fn set_max_subscribers(&self, max: usize) {
        self.max_subscribers.store(max, Ordering::Relaxed);
    }

    /// Changes the per-member socket limit for sockets admitted from now on.
    pub fn set_max_sockets_per_member(&self, max: usize) {
        self.per_member.set_max(max);
    }

    /// Changes the per-organization socket limit (`None`: none) for sockets admitted from
    /// now on.
    pub fn set_max_sockets_per_org(&self, max: Option<usize>) {
        self.per_member.set_max_per_org(max);
    }

    /// Changes the heartbeat interval (tests use a short one). It applies from the heartbeat
    /// after the current one; set it before the first socket opens to have it from the start.
    pub fn set_ping_interval(&self, every: Duration) {
        self.ping_interval_ms
            .store(millis(every), Ordering::Relaxed);
    }

    /// Sockets open now.
    pub fn subscribers(&self) -> usize {
        self.subscribers.load(Ordering::Relaxed)
    }

    /// Closes every socket (1001, going away) and refuses new ones: called when the server
    /// starts to stop, so that open sockets do not hold the shutdown.
    pub fn shutdown(&self) {
        self.signals.send_modify(|s| s.stopping = true);
    }

    /// The heartbeat and shutdown signal, for one socket.
    pub(crate) fn signals(&self) -> watch::Receiver<Signal> {
        self.signals.subscribe()
    }

    /// Counts a socket in under `--max-subscribers`, or `None` at the limit. The first one
    /// starts the heartbeat task (on the caller's runtime).
    fn admit(self: &Arc<Self>) -> Option<Admission> {
        let max = self.max_subscribers.load(Ordering::Relaxed);
        self.subscribers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        if !self.beating.swap(true, Ordering::AcqRel) {
            actix_web::rt::spawn(heartbeat(Arc::downgrade(self)));
        }
        Some(Admission {
            live: self.clone(),
            member: None,
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// Signals a heartbeat every [`LiveConfig::ping_interval`] until the server stops (or its
/// live state is gone).
async fn heartbeat(live: Weak<Live>) {
    loop {
        let Some(every) = live
            .upgrade()
            .map(|l| Duration::from_millis(l.ping_interval_ms.load(Ordering::Relaxed)))
        else {
            return;
        };
        tokio::time::sleep(every).await;
        let Some(live) = live.upgrade() else { return };
        let mut stopping = false;
        live.signals.send_modify(|s| {
            s.beat += 1;
            stopping = s.stopping;
        });
        if stopping {
            return;
        }
    }
}

/// One admitted socket; counted until dropped (and, once authenticated, counted for its
/// member too).
pub(crate) struct Admission {
    live: Arc<Live>,
    member: Option<MemberPermit>,
}

impl Admission {
    /// Counts the socket for `member` of `org` under [`LiveConfig::max_sockets_per_member`]
    /// and [`LiveConfig::max_sockets_per_org`].
    ///
    /// # Errors
    /// The limit met (nothing counted).
    pub(crate) fn count_for_member(
        &mut self,
        member: UserId,
        org: OrgId,
    ) -> Result<(), SocketLimit> {
        if self.member.is_none() {
            self.member = Some(self.live.per_member.take(member, Some(org))?);
        }
        Ok(())
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.live.subscribers.fetch_sub(1, Ordering::AcqRel);
    }
}

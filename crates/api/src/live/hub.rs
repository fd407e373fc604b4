//! The in-process wake-up of live subscribers (API.md, Live delivery): one
//! `tokio::sync::watch` per watched conversation holding its latest known event count. It
//! carries no events: a subscriber woken up reads what it has not sent from the store, so a
//! wake-up that is merged with another, or lost, never loses an event.
//!
//! Beside it, each watched conversation has a [`Recent`] window: the last events read from
//! the store for any of its subscribers. The subscribers woken by one append all need the
//! same few events; the first reads them (one query), the others take them from the window.
//! A window answers only a subscriber whose wake-up it is known to include (its end reaches
//! the count the subscriber was woken with, and its read began after the last
//! [`resync`](AppendObserver::resync)); anything else reads the store.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytestring::ByteString;

use switchboard_domain::ConversationId;
use switchboard_domain::events::PositionedEvent;
use switchboard_domain::ports::AppendObserver;
use tokio::sync::watch;

/// Watched conversations and their wake-up channels.
#[derive(Default)]
pub struct Hub {
    watched: Mutex<HashMap<ConversationId, Entry>>,
    /// Incremented by every resync: a window read before it may miss events.
    epoch: AtomicU64,
}

struct Entry {
    latest: watch::Sender<i64>,
    watchers: usize,
    recent: Arc<Recent>,
}

/// A subscriber's registration: wakes when the conversation gains events (or on a resync);
/// unregisters when dropped.
pub struct Watch {
    hub: Arc<Hub>,
    conversation: ConversationId,
    /// Changes when the conversation may have new events.
    pub wake: watch::Receiver<i64>,
    /// The conversation's shared window of recent events.
    pub recent: Arc<Recent>,
}

/// Events read from the store per page by a subscriber: the most the server holds for one.
pub(crate) const PAGE: u32 = 256;

/// The most events a [`Recent`] window keeps: one page of a subscriber's read.
pub const RECENT_EVENTS: usize = PAGE as usize;

/// Something sent to many sockets (a stored event of a [`Recent`] window, a relayed transient
/// event) with the frames sent for it, each rendered once, by the first subscriber that sends
/// it, and shared by the others (a frame is a reference-counted `ByteString`: sending it to a
/// thousand sockets copies no JSON).
pub struct Shared<T> {
    /// What the frames are rendered from.
    pub item: T,
    /// One frame per protocol ([`FRAME_KINDS`]), rendered on first use.
    frames: [OnceLock<ByteString>; FRAME_KINDS],
}

/// A stored event of a [`Recent`] window, with its frames.
pub type SharedEvent = Shared<PositionedEvent>;

/// How many different frames an item can be sent as (one per socket protocol).
pub const FRAME_KINDS: usize = 2;

impl<T> Shared<T> {
    /// Wraps an item; no frame is rendered yet.
    pub fn new(item: T) -> Self {
        Shared {
            item,
            frames: Default::default(),
        }
    }

    /// Frame number `kind` (< [`FRAME_KINDS`]) of this item: `render`ed by the first caller,
    /// a cheap clone for every later one.
    pub fn frame(&self, kind: usize, render: impl FnOnce(&T) -> ByteString) -> ByteString {
        self.frames[kind].get_or_init(|| render(&self.item)).clone()
    }
}

impl SharedEvent {
    /// The event's position in its conversation.
    pub fn position(&self) -> i64 {
        self.item.position
    }
}

/// The last events read from the store for a conversation's subscribers, positions
/// contiguous, shared by them (see the module docs).
#[derive(Default)]
pub struct Recent {
    /// Whether a subscriber is reading the store for the window now: the others wait for it
    /// and then take what it read, instead of each running the same query.
    reading: std::sync::atomic::AtomicBool,
    /// Wakes every waiter at once when a read ends (not one after the other, as a lock's
    /// queue would: a thousand subscribers of one conversation would wait in line).
    read_done: tokio::sync::Notify,
    window: Mutex<Window>,
}

/// The right to read the store for a [`Recent`] window; ends the read (waking the waiters)
/// when dropped, also when the read failed or its task was cancelled.
pub struct ReadTurn<'a> {
    recent: &'a Recent,
}

impl Drop for ReadTurn<'_> {
    fn drop(&mut self) {
        self.recent.reading.store(false, Ordering::Release);
        self.recent.read_done.notify_waiters();
    }
}

#[derive(Default)]
struct Window {
    /// The hub's epoch when the read that reached the window's end began.
    epoch: u64,
    /// Contiguous positions, oldest first, at most [`RECENT_EVENTS`].
    events: VecDeque<Arc<SharedEvent>>,
}

impl Recent {
    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The right to read the store for the window: `Some` at once when no other subscriber
    /// is reading; otherwise `None` once that read ended (look at the window again, then ask
    /// again if it still cannot answer).
    pub async fn read_turn(&self) -> Option<ReadTurn<'_>> {
        let done = self.read_done.notified();
        tokio::pin!(done);
        // Registered before the flag is checked: a read ending in between still wakes us.
        done.as_mut().enable();
        if self
            .reading
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Some(ReadTurn { recent: self });
        }
        done.await;
        None
    }

    /// The events after position `after` (at most `limit`), if the window can answer for a
    /// subscriber woken with event count `needed` in hub epoch `epoch`: it holds position
    /// `after + 1` (or `after` is its last and nothing newer is needed) and everything up to
    /// `needed - 1`, read in that epoch or later. `None`: read the store.
    pub fn after(
        &self,
        after: i64,
        needed: i64,
        epoch: u64,
        limit: usize,
    ) -> Option<Vec<Arc<SharedEvent>>> {
        let w = self.lock();
        let (first, last) = (w.events.front()?.position(), w.events.back()?.position());
        if w.epoch < epoch || last < needed - 1 || after + 1 < first || after > last {
            return None;
        }
        let skip = usize::try_from(after + 1 - first).ok()?;
        Some(w.events.iter().skip(skip).take(limit).cloned().collect())
    }

    /// Adds what a store read begun in hub epoch `epoch` returned for a subscriber after
    /// position `after`, and returns its contiguous prefix from `after + 1` (a later event
    /// past a gap is a commit not yet visible: left for the next read). The prefix extends the
    /// window when it joins it, else replaces it (unless it is older than the window); the
    /// window keeps its last [`RECENT_EVENTS`] events. An empty prefix leaves the window
    /// alone. The flag: whether the read had events past a gap.
    pub fn absorb(
        &self,
        after: i64,
        epoch: u64,
        read: Vec<PositionedEvent>,
    ) -> (Vec<Arc<SharedEvent>>, bool) {
        let read_len = read.len();
        let fresh: Vec<Arc<SharedEvent>> = read
            .into_iter()
            .zip(after + 1..)
            .take_while(|(e, want)| e.position == *want)
            .map(|(e, _)| Arc::new(SharedEvent::new(e)))
            .collect();
        let gap = fresh.len() < read_len;
        let Some(fresh_last) = fresh.last().map(|e| e.position()) else {
            return (fresh, gap);
        };
        let mut w = self.lock();
        let joins = match (w.events.front(), w.events.back()) {
            (Some(f), Some(l)) => f.position() <= after + 1 && after <= l.position(),
            _ => false,
        };
        if !joins {
            if w.events.front().is_some_and(|f| fresh_last < f.position()) {
                // A subscriber far behind: the window serves the ones at the front.
                return (fresh, gap);
            }
            w.events.clear();
        }
        let window_last = w.events.back().map_or(after, |e| e.position());
        // Events never change: only those past the window's end are new to it.
        w.events
            .extend(fresh.iter().filter(|e| e.position() > window_last).cloned());
        while w.events.len() > RECENT_EVENTS {
            w.events.pop_front();
        }
        if fresh_last >= window_last {
            w.epoch = epoch;
        }
        (fresh, gap)
    }
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConversationId, Entry>> {
        self.watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a subscriber of `conversation`. Register before reading the store: an append
    /// committed after the registration always wakes it.
    pub fn watch(self: &Arc<Self>, conversation: ConversationId) -> Watch {
        let mut map = self.lock();
        let entry = map.entry(conversation).or_insert_with(|| Entry {
            latest: watch::Sender::new(0),
            watchers: 0,
            recent: Arc::default(),
        });
        entry.watchers += 1;
        Watch {
            hub: self.clone(),
            conversation,
            wake: entry.latest.subscribe(),
            recent: entry.recent.clone(),
        }
    }

    /// The resync epoch: read it after a wake-up (and before a store read for a window).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Conversations with at least one subscriber in this process.
    pub fn watched(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut map = self.hub.lock();
        if let Some(e) = map.get_mut(&self.conversation) {
            e.watchers -= 1;
            if e.watchers == 0 {
                map.remove(&self.conversation);
            }
        }
    }
}

impl AppendObserver for Hub {
    fn appended(&self, conversation: ConversationId, event_count: i64) {
        if let Some(e) = self.lock().get(&conversation) {
            e.latest.send_if_modified(|v| {
                let newer = event_count > *v;
                if newer {
                    *v = event_count;
                }
                newer
            });
        }
    }

    fn resync(&self) {
        // First the epoch, then the wake-ups: a woken subscriber sees the new epoch and trusts
        // no window read before it.
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for e in self.lock().values() {
            e.latest.send_modify(|_| {});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(from: i64, to: i64) -> Vec<PositionedEvent> {
        (from..to)
            .map(|position| PositionedEvent {
                position,
                ts: time::OffsetDateTime::UNIX_EPOCH,
                payload: format!("{{\"n\":{position}}}"),
            })
            .collect()
    }

    fn positions(page: &[Arc<SharedEvent>]) -> Vec<i64> {
        page.iter().map(|e| e.position()).collect()
    }

    #[test]
    fn a_frame_is_rendered_once_and_shared() {
        let recent = Recent::default();
        recent.absorb(-1, 0, events(0, 1));
        let renders = std::cell::Cell::new(0);
        let render = |e: &PositionedEvent| {
            renders.set(renders.get() + 1);
            ByteString::from(format!("[{}]", e.payload))
        };
        let a = recent.after(-1, 1, 0, 1).unwrap()[0].frame(1, render);
        let b = recent.after(-1, 1, 0, 1).unwrap()[0].frame(1, render);
        assert_eq!((a.as_ref(), renders.get()), ("[{\"n\":0}]", 1));
        assert!(std::ptr::eq(a.as_ptr(), b.as_ptr()), "the same bytes");
        let other = recent.after(-1, 1, 0, 1).unwrap()[0].frame(0, |e| e.payload.clone().into());
        assert_eq!((other.as_ref(), renders.get()), ("{\"n\":0}", 1));
    }

    #[test]
    fn a_window_answers_only_wake_ups_it_covers() {
        let recent = Recent::default();
        assert!(
            recent.after(-1, 0, 0, 10).is_none(),
            "empty: read the store"
        );
        let (read, gap) = recent.absorb(4, 0, events(5, 8));
        assert_eq!((positions(&read), gap), (vec![5, 6, 7], false));
        // Caught up at 4, woken with count 8: 5..=7 from the window.
        assert_eq!(positions(&recent.after(4, 8, 0, 10).unwrap()), [5, 6, 7]);
        assert_eq!(
            positions(&recent.after(5, 8, 0, 2).unwrap()),
            [6, 7],
            "at most limit"
        );
        assert_eq!(
            recent.after(7, 8, 0, 10).unwrap().len(),
            0,
            "nothing new, nothing needed"
        );
        assert!(
            recent.after(7, 9, 0, 10).is_none(),
            "woken for 8, which it lacks"
        );
        assert!(
            recent.after(3, 8, 0, 10).is_none(),
            "4 is before the window"
        );
        assert!(recent.after(8, 9, 0, 10).is_none(), "ahead of the window");
        assert!(
            recent.after(4, 8, 1, 10).is_none(),
            "read before the last resync"
        );
    }

    #[actix_web::test]
    async fn one_read_at_a_time_and_every_waiter_woken_when_it_ends() {
        let recent = Arc::new(Recent::default());
        let turn = recent.read_turn().await.expect("nobody reads yet");
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let recent = recent.clone();
                tokio::spawn(async move { recent.read_turn().await.is_none() })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(
            waiters.iter().all(|w| !w.is_finished()),
            "they wait for the read"
        );
        drop(turn);
        for w in waiters {
            assert!(
                w.await.unwrap(),
                "woken by the end of the read, without a turn"
            );
        }
        assert!(recent.read_turn().await.is_some(), "the turn is free again");
    }

    #[test]
    fn reads_extend_or_replace_the_window_and_stop_at_gaps() {
        let recent = Recent::default();
        recent.absorb(-1, 0, events(0, 3));
        // A read from 2 joins the window (0..=2) and extends it.
        recent.absorb(1, 1, events(2, 5));
        assert_eq!(
            positions(&recent.after(-1, 5, 1, 10).unwrap()),
            [0, 1, 2, 3, 4]
        );
        // 6 without 5 (a commit not yet visible): nothing past the gap is kept.
        let (read, gap) = recent.absorb(4, 1, {
            let mut e = events(6, 7);
            e.extend(events(7, 8));
            e
        });
        assert!(read.is_empty() && gap);
        assert!(recent.after(4, 6, 1, 10).is_none());
        // A read far ahead replaces it; one far behind leaves it alone.
        recent.absorb(99, 2, events(100, 102));
        assert_eq!(
            positions(&recent.after(99, 102, 2, 10).unwrap()),
            [100, 101]
        );
        let (read, _) = recent.absorb(9, 2, events(10, 12));
        assert_eq!(positions(&read), [10, 11]);
        assert_eq!(
            positions(&recent.after(99, 102, 2, 10).unwrap()),
            [100, 101]
        );
        // It keeps the last RECENT_EVENTS events.
        let n = RECENT_EVENTS as i64;
        recent.absorb(101, 3, events(102, 102 + n));
        assert!(recent.after(100, 0, 3, 10).is_none(), "101 fell out");
        assert_eq!(
            recent.after(101, 102 + n, 3, RECENT_EVENTS).unwrap().len(),
            RECENT_EVENTS
        );
    }

    #[test]
    fn wakes_watchers_and_forgets_unwatched() {
        let hub = Arc::new(Hub::default());
        let conv = ConversationId(uuid::Uuid::from_u128(7));
        let mut w = hub.watch(conv);
        let w2 = hub.watch(conv);
        assert!(!w.wake.has_changed().unwrap());
        hub.appended(conv, 3);
        assert!(w.wake.has_changed().unwrap());
        assert_eq!(*w.wake.borrow_and_update(), 3);
        hub.appended(conv, 2);
        assert!(
            !w.wake.has_changed().unwrap(),
            "an older count wakes nobody"
        );
        hub.resync();
        assert!(w.wake.has_changed().unwrap(), "a resync wakes everyone");
        drop(w);
        assert_eq!(hub.watched(), 1);
        drop(w2);
        assert_eq!(hub.watched(), 0);
        hub.appended(conv, 9);
        assert_eq!(hub.watched(), 0);
    }
}

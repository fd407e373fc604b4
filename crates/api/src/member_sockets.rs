//! Sockets counted per member (issue 33, "caps per member, not per key"): how many sockets of
//! one kind (Switchboard's own websockets, proxied websockets to sandboxes) each user holds at
//! once on this process, under one limit (`--max-sockets-per-member`). Counted by user, not by
//! API key: minting keys does not multiply what a member may hold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use switchboard_domain::UserId;

/// The sockets of one kind each member holds, and the limit.
#[derive(Debug)]
pub struct MemberSockets {
    max: AtomicUsize,
    held: Mutex<HashMap<UserId, usize>>,
}

impl MemberSockets {
    /// At most `max` sockets per member.
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(MemberSockets {
            max: AtomicUsize::new(max),
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Changes the limit for sockets counted from now on (those held stay).
    pub fn set_max(&self, max: usize) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// How many sockets `member` holds now.
    pub fn held_by(&self, member: UserId) -> usize {
        self.table().get(&member).copied().unwrap_or(0)
    }

    /// Counts one more socket for `member`, released when the permit is dropped; `None`
    /// (nothing counted) when the member already holds the limit.
    pub fn take(self: &Arc<Self>, member: UserId) -> Option<MemberPermit> {
        let max = self.max();
        let mut table = self.table();
        let held = table.entry(member).or_insert(0);
        if *held >= max {
            if *held == 0 {
                table.remove(&member);
            }
            return None;
        }
        *held += 1;
        Some(MemberPermit {
            sockets: self.clone(),
            member,
        })
    }

    fn table(&self) -> MutexGuard<'_, HashMap<UserId, usize>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One socket counted for a member; uncounted when dropped.
#[derive(Debug)]
pub struct MemberPermit {
    sockets: Arc<MemberSockets>,
    member: UserId,
}

impl Drop for MemberPermit {
    fn drop(&mut self) {
        let mut table = self.sockets.table();
        if let Some(held) = table.get_mut(&self.member) {
            *held -= 1;
            if *held == 0 {
                table.remove(&self.member);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_holds_at_most_the_limit_and_gets_room_back() {
        let sockets = MemberSockets::new(2);
        let (a, b) = (
            UserId(uuid::Uuid::from_u128(1)),
            UserId(uuid::Uuid::from_u128(2)),
        );
        let p1 = sockets.take(a).unwrap();
        let _p2 = sockets.take(a).unwrap();
        assert!(sockets.take(a).is_none());
        assert_eq!(sockets.held_by(a), 2);
        let _q = sockets.take(b).expect("another member is counted apart");
        drop(p1);
        assert_eq!(sockets.held_by(a), 1);
        assert!(sockets.take(a).is_some());
        sockets.set_max(0);
        assert!(sockets.take(b).is_none());
    }
}

//! Sockets counted per member and per organization (issue 33, "caps per member, not per
//! key"): how many sockets of one kind (Switchboard's own websockets, proxied websockets to
//! sandboxes) each user, and each organization, holds at once on this process, under one
//! limit each (`--max-sockets-per-member`, `--max-sockets-per-org`). Counted by user and
//! organization, not by API key: minting keys does not multiply what a member may hold, and
//! many members of one organization do not take every socket from the others.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use switchboard_domain::{OrgId, UserId};

/// Why a socket was not counted: the limit it met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketLimit {
    /// The member holds `--max-sockets-per-member` already.
    Member,
    /// The organization holds `--max-sockets-per-org` already.
    Org,
}

/// The sockets of one kind each member and each organization holds, and the limits.
#[derive(Debug)]
pub struct MemberSockets {
    max: AtomicUsize,
    /// `usize::MAX`: no limit per organization.
    max_per_org: AtomicUsize,
    held: Mutex<Held>,
}

/// Sockets held, by member and by organization; absent keys hold none.
#[derive(Debug, Default)]
struct Held {
    members: HashMap<UserId, usize>,
    orgs: HashMap<OrgId, usize>,
}

impl MemberSockets {
    /// At most `max` sockets per member and, when given, `max_per_org` per organization.
    pub fn new(max: usize, max_per_org: Option<usize>) -> Arc<Self> {
        Arc::new(MemberSockets {
            max: AtomicUsize::new(max),
            max_per_org: AtomicUsize::new(max_per_org.unwrap_or(usize::MAX)),
            held: Mutex::new(Held::default()),
        })
    }

    /// Changes the per-member limit for sockets counted from now on (those held stay).
    pub fn set_max(&self, max: usize) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// Changes the per-organization limit (`None`: none) for sockets counted from now on.
    pub fn set_max_per_org(&self, max: Option<usize>) {
        self.max_per_org
            .store(max.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// The per-member limit.
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// How many sockets `member` holds now.
    pub fn held_by(&self, member: UserId) -> usize {
        self.table().members.get(&member).copied().unwrap_or(0)
    }

    /// How many sockets the members of `org` hold now (those counted for it).
    pub fn held_in(&self, org: OrgId) -> usize {
        self.table().orgs.get(&org).copied().unwrap_or(0)
    }

    /// Counts one more socket for `member` and, when the socket is of one, `org`; released
    /// when the permit is dropped.
    ///
    /// # Errors
    /// The limit met (nothing counted): the member's first, then the organization's.
    pub fn take(
        self: &Arc<Self>,
        member: UserId,
        org: Option<OrgId>,
    ) -> Result<MemberPermit, SocketLimit> {
        let mut table = self.table();
        if count(&table.members, &member) >= self.max() {
            return Err(SocketLimit::Member);
        }
        if let Some(org) = org
            && count(&table.orgs, &org) >= self.max_per_org.load(Ordering::Relaxed)
        {
            return Err(SocketLimit::Org);
        }
        *table.members.entry(member).or_insert(0) += 1;
        if let Some(org) = org {
            *table.orgs.entry(org).or_insert(0) += 1;
        }
        Ok(MemberPermit {
            sockets: self.clone(),
            member,
            org,
        })
    }

    fn table(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What `key` holds in `counts`.
fn count<K: Hash + Eq>(counts: &HashMap<K, usize>, key: &K) -> usize {
    counts.get(key).copied().unwrap_or(0)
}

/// One less for `key`, forgotten at zero.
fn release<K: Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(held) = counts.get_mut(key) {
        *held -= 1;
        if *held == 0 {
            counts.remove(key);
        }
    }
}

/// One socket counted for a member (and its organization); uncounted when dropped.
#[derive(Debug)]
pub struct MemberPermit {
    sockets: Arc<MemberSockets>,
    member: UserId,
    org: Option<OrgId>,
}

impl Drop for MemberPermit {
    fn drop(&mut self) {
        let mut table = self.sockets.table();
        release(&mut table.members, &self.member);
        if let Some(org) = &self.org {
            release(&mut table.orgs, org);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(n: u128) -> UserId {
        UserId(uuid::Uuid::from_u128(n))
    }

    #[test]
    fn a_member_holds_at_most_the_limit_and_gets_room_back() {
        let sockets = MemberSockets::new(2, None);
        let (a, b) = (user(1), user(2));
        let p1 = sockets.take(a, None).unwrap();
        let _p2 = sockets.take(a, None).unwrap();
        assert_eq!(sockets.take(a, None).unwrap_err(), SocketLimit::Member);
        assert_eq!(sockets.held_by(a), 2);
        let _q = sockets
            .take(b, None)
            .expect("another member is counted apart");
        drop(p1);
        assert_eq!(sockets.held_by(a), 1);
        assert!(sockets.take(a, None).is_ok());
        sockets.set_max(0);
        assert!(sockets.take(b, None).is_err());
    }

    #[test]
    fn an_organization_holds_at_most_its_limit_whoever_its_members_are() {
        let sockets = MemberSockets::new(2, Some(3));
        let (org, other) = (
            OrgId(uuid::Uuid::from_u128(7)),
            OrgId(uuid::Uuid::from_u128(8)),
        );
        let held: Vec<_> = [1, 1, 2]
            .into_iter()
            .map(|u| sockets.take(user(u), Some(org)).unwrap())
            .collect();
        assert_eq!(sockets.held_in(org), 3);
        // A third member of the organization, under their own limit, meets the org's.
        assert_eq!(
            sockets.take(user(3), Some(org)).unwrap_err(),
            SocketLimit::Org
        );
        assert_eq!(sockets.held_by(user(3)), 0, "nothing counted when refused");
        // Another organization's member goes on.
        let _elsewhere = sockets.take(user(4), Some(other)).unwrap();
        drop(held);
        assert_eq!((sockets.held_in(org), sockets.held_by(user(1))), (0, 0));
        assert!(sockets.take(user(3), Some(org)).is_ok());
        sockets.set_max_per_org(None);
        let many: Vec<_> = (10..20)
            .map(|u| sockets.take(user(u), Some(org)).unwrap())
            .collect();
        assert_eq!(sockets.held_in(org), many.len());
    }
}

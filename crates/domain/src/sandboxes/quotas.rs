//! Quotas on the sandboxes a user or an organization holds (issue 18, Quotas; issue 24 item
//! 6): `--max-sandboxes-per-user` (default 20) and `--max-sandboxes-per-org` (default
//! unbounded). A sandbox holds resources while it is `STARTING`, `RUNNING` or `PAUSED` (a
//! paused process keeps its memory; a paused container its memory and disk); `ERROR` and
//! `MISSING` ones hold nothing and do not count, nor do registered (external) ones, which run
//! elsewhere. The count and the insert happen in one transaction, serialized per owner and
//! per organization, so concurrent starts (on any replica) never pass a quota together.

use std::fmt;

use time::OffsetDateTime;

use crate::ids::{OrgId, SandboxId, UserId};
use crate::sandboxes::records::SandboxRecord;
use crate::sandboxes::runtime::SandboxStatus;

/// The statuses that hold resources, counted by the quotas.
pub const HOLDING_STATUSES: [SandboxStatus; 3] = [
    SandboxStatus::Starting,
    SandboxStatus::Running,
    SandboxStatus::Paused,
];

/// How many sandboxes a refusal names as candidates to delete.
pub const NAMED_IN_REFUSAL: usize = 5;

/// The quotas applied in the transaction of a start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxQuota {
    /// The owner of the new sandbox.
    pub owner: UserId,
    /// The most sandboxes holding resources the owner may have, the new one included.
    pub per_user: u32,
    /// The organization of the new sandbox.
    pub org: OrgId,
    /// The most its organization may have, the new one included (`None`: unbounded).
    pub per_org: Option<u32>,
}

/// Which quota refused a start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaScope {
    /// `--max-sandboxes-per-user`.
    User,
    /// `--max-sandboxes-per-org`.
    Org,
}

/// One sandbox that counts against a quota, as a refusal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldSandbox {
    /// Its id.
    pub id: SandboxId,
    /// Its owner.
    pub owner: Option<UserId>,
    /// `STARTING`, `RUNNING` or `PAUSED`.
    pub status: SandboxStatus,
    /// When it was last used (started, claimed, resumed, or a webhook from it).
    pub last_used_at: Option<OffsetDateTime>,
}

impl HeldSandbox {
    /// The sandbox as a refusal names it.
    pub fn of(record: &SandboxRecord) -> Self {
        HeldSandbox {
            id: record.id,
            owner: record.owner_id,
            status: record.status,
            last_used_at: record.last_used_at,
        }
    }
}

/// A start refused by a quota: which one, its limit, and every sandbox counted against it,
/// least recently used first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    /// The quota.
    pub scope: QuotaScope,
    /// Its limit.
    pub limit: u32,
    /// The sandboxes counted, least recently used first.
    pub held: Vec<HeldSandbox>,
}

impl QuotaExceeded {
    /// The `detail` of the 409 (and of a conversation start's `ERROR`): the quota, the count,
    /// and which sandboxes to delete, least recently used first, among those `caller` may
    /// delete (their own; every one of the organization's with `see_all`, i.e.
    /// `view_org_conversations`). Never names a sandbox the caller cannot see.
    pub fn detail(&self, caller: UserId, see_all: bool) -> String {
        let mine: Vec<&HeldSandbox> = self
            .held
            .iter()
            .filter(|h| see_all || h.owner == Some(caller))
            .collect();
        let listed = mine
            .iter()
            .take(NAMED_IN_REFUSAL)
            .map(|h| format!("{} ({})", h.id, h.status))
            .collect::<Vec<_>>()
            .join(", ");
        let (who, flag) = match self.scope {
            QuotaScope::User => ("you have", "--max-sandboxes-per-user"),
            QuotaScope::Org => ("this organization has", "--max-sandboxes-per-org"),
        };
        let mut out = format!(
            "Sandbox limit reached: {who} {} sandboxes holding resources (STARTING, RUNNING or PAUSED; paused ones keep their memory), the most allowed ({flag} {}). Delete one to start another (DELETE /api/v1/sandboxes/{{id}})",
            self.held.len(),
            self.limit
        );
        if listed.is_empty() {
            out.push_str("; none of them is yours: ask an admin or owner of the organization");
        } else {
            out.push_str(", least recently used first: ");
            out.push_str(&listed);
            if mine.len() > NAMED_IN_REFUSAL {
                out.push_str(&format!(" and {} more", mine.len() - NAMED_IN_REFUSAL));
            }
        }
        out
    }
}

impl fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuotaScope::User => "user",
            QuotaScope::Org => "organization",
        })
    }
}

/// Sorts held sandboxes least recently used first (never used counts as oldest), as the
/// running limit does.
pub fn least_recently_used_first(held: &mut [HeldSandbox]) {
    held.sort_by_key(|h| (h.last_used_at, h.id.0));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(owner: UserId, status: SandboxStatus, used: i64) -> HeldSandbox {
        HeldSandbox {
            id: SandboxId::new_random(),
            owner: Some(owner),
            status,
            last_used_at: Some(OffsetDateTime::from_unix_timestamp(1_700_000_000 + used).unwrap()),
        }
    }

    #[test]
    fn a_refusal_names_what_to_delete_least_recently_used_first() {
        let me = UserId::new_random();
        let other = UserId::new_random();
        let mut list = vec![
            held(me, SandboxStatus::Running, 30),
            held(other, SandboxStatus::Paused, 5),
            held(me, SandboxStatus::Paused, 10),
        ];
        least_recently_used_first(&mut list);
        let refusal = QuotaExceeded {
            scope: QuotaScope::Org,
            limit: 3,
            held: list.clone(),
        };
        let mine = refusal.detail(me, false);
        assert!(mine.starts_with("Sandbox limit reached: this organization has 3 sandboxes"));
        assert!(mine.contains("--max-sandboxes-per-org 3"), "{mine}");
        let first = mine.find(&list[1].id.to_string()).unwrap();
        let second = mine.find(&list[2].id.to_string()).unwrap();
        assert!(first < second, "{mine}");
        assert!(
            !mine.contains(&list[0].id.to_string()),
            "another member's: {mine}"
        );
        assert!(refusal.detail(me, true).contains(&list[0].id.to_string()));
        let none = refusal.detail(UserId::new_random(), false);
        assert!(none.contains("none of them is yours"), "{none}");
    }

    #[test]
    fn a_long_list_is_cut_with_a_count() {
        let me = UserId::new_random();
        let held: Vec<HeldSandbox> = (0..8).map(|i| held(me, SandboxStatus::Paused, i)).collect();
        let text = QuotaExceeded {
            scope: QuotaScope::User,
            limit: 8,
            held,
        }
        .detail(me, false);
        assert!(text.contains("you have 8 sandboxes"), "{text}");
        assert!(text.ends_with(" and 3 more"), "{text}");
    }
}

//! Sandbox grouping: which of a member's own sandboxes a conversation start without
//! `sandbox_id` joins, by their `sandbox_grouping_strategy` preference (OpenHands'
//! `SandboxGroupingStrategy`; reference app-server §5.3 step 4, and
//! `LiveStatusAppConversationService._select_sandbox_by_strategy` of openhands-ai 1.11.0).
//! docs/API.md, "Sandbox grouping", says it for users.
//!
//! The candidates are the member's own managed sandboxes in the start's organization (those
//! they could name in `sandbox_id` themselves), of the requested spec when the request names
//! one (any spec when it names none: OpenHands never looks at the spec), that are `RUNNING`,
//! `STARTING` or `PAUSED`, holding fewer than the per-sandbox conversation cap
//! (`--sandbox-max-conversations`, default [`DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX`], as
//! OpenHands' `max_num_conversations_per_sandbox`). A conversation holds a sandbox from the
//! moment a start is bound to it until the conversation is deleted. [`choose`] picks among
//! the live ones (`RUNNING` or `STARTING`) first, as OpenHands (which only looks at `RUNNING`
//! ones); only when none has room, among the `PAUSED` ones (the start resumes it). Within a
//! group:
//!
//! - `ADD_TO_ANY`: the first the member's sandbox list shows (newest first, the order of
//!   `GET /api/v1/sandboxes/search` and of OpenHands' list), so in practice the pick of
//!   `GROUP_BY_NEWEST`, as in OpenHands;
//! - `GROUP_BY_NEWEST`: the newest (`created_at`; a warm-pool sandbox's is its claim);
//! - `LEAST_RECENTLY_USED`: the least recently used, by the sandbox's `last_used_at` (its
//!   start, claim or resume, each conversation start bound to it, and its agent server's
//!   webhooks, written at most once a minute: the same use the running limit pauses by), its
//!   `created_at` when never used. OpenHands takes the oldest created instead; Switchboard
//!   keeps when a sandbox was used, so it uses that;
//! - `FEWEST_CONVERSATIONS`: the one holding the fewest conversations, the newest on a tie.

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::ids::SandboxId;
use crate::sandboxes::runtime::SandboxStatus;

/// The per-sandbox conversation cap when the operator sets none (OpenHands'
/// `max_num_conversations_per_sandbox` default, 20).
pub const DEFAULT_MAX_CONVERSATIONS_PER_SANDBOX: u32 = 20;

/// The preference key a member's strategy is stored under (a top-level field of
/// `POST /api/v1/settings`).
pub const GROUPING_PREFERENCE: &str = "sandbox_grouping_strategy";

/// A member's sandbox grouping strategy (OpenHands' `SandboxGroupingStrategy`; the wire
/// names are [`crate::user_settings::patch::SANDBOX_GROUPING_STRATEGIES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxGrouping {
    /// `NO_GROUPING` (the default): every start without `sandbox_id` gets a new sandbox.
    #[default]
    NoGrouping,
    /// `GROUP_BY_NEWEST`: the newest sandbox with room.
    GroupByNewest,
    /// `LEAST_RECENTLY_USED`: the least recently used sandbox with room.
    LeastRecentlyUsed,
    /// `FEWEST_CONVERSATIONS`: the sandbox with room holding the fewest conversations.
    FewestConversations,
    /// `ADD_TO_ANY`: the first sandbox with room in the member's list (newest first).
    AddToAny,
}

impl SandboxGrouping {
    /// Every strategy, in OpenHands' declaration order.
    pub const ALL: [SandboxGrouping; 5] = [
        SandboxGrouping::NoGrouping,
        SandboxGrouping::GroupByNewest,
        SandboxGrouping::LeastRecentlyUsed,
        SandboxGrouping::FewestConversations,
        SandboxGrouping::AddToAny,
    ];

    /// The wire name, e.g. `GROUP_BY_NEWEST`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxGrouping::NoGrouping => "NO_GROUPING",
            SandboxGrouping::GroupByNewest => "GROUP_BY_NEWEST",
            SandboxGrouping::LeastRecentlyUsed => "LEAST_RECENTLY_USED",
            SandboxGrouping::FewestConversations => "FEWEST_CONVERSATIONS",
            SandboxGrouping::AddToAny => "ADD_TO_ANY",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<SandboxGrouping> {
        SandboxGrouping::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// A member's strategy from their stored preferences: [`GROUPING_PREFERENCE`], and
    /// `NO_GROUPING` when it is unset, `null` or not a known name.
    pub fn of_preferences(preferences: &Map<String, Value>) -> SandboxGrouping {
        preferences
            .get(GROUPING_PREFERENCE)
            .and_then(Value::as_str)
            .and_then(SandboxGrouping::parse)
            .unwrap_or_default()
    }

    /// Whether a start may join an existing sandbox (every strategy but `NO_GROUPING`); a
    /// start under such a strategy also works in a folder of its own below the sandbox's
    /// project directory, even in a new sandbox, so that conversations joining it later
    /// never work inside its directory (OpenHands' `grouped_workspace_dir`).
    pub fn groups(self) -> bool {
        self != SandboxGrouping::NoGrouping
    }
}

/// One of the member's sandboxes a start may join, as [`choose`] weighs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCandidate {
    /// The sandbox.
    pub id: SandboxId,
    /// `RUNNING`, `STARTING` or `PAUSED` (any other is never chosen).
    pub status: SandboxStatus,
    /// Its creation (for a claimed warm-pool sandbox: the claim).
    pub created_at: OffsetDateTime,
    /// Its last use, `None` when never used.
    pub last_used_at: Option<OffsetDateTime>,
    /// The conversations holding it: those in it and those whose start is bound to it and
    /// unfinished, each once.
    pub conversations: u64,
}

impl GroupCandidate {
    /// `0` for the live statuses (`RUNNING`, `STARTING`), `1` for `PAUSED`, `None` for a
    /// status no start joins.
    fn tier(&self) -> Option<u8> {
        match self.status {
            SandboxStatus::Running | SandboxStatus::Starting => Some(0),
            SandboxStatus::Paused => Some(1),
            SandboxStatus::Error | SandboxStatus::Missing => None,
        }
    }

    /// The list's order: newest first (`created_at`, then id, descending).
    fn newest_first(a: &&GroupCandidate, b: &&GroupCandidate) -> std::cmp::Ordering {
        (b.created_at, b.id.0).cmp(&(a.created_at, a.id.0))
    }
}

/// The sandbox a start under `strategy` joins among `candidates` (any order), each holding
/// fewer than `max_conversations` (at least 1) conversations; `None` when the strategy is
/// `NO_GROUPING` or none qualifies (the start then starts a new sandbox). The live ones
/// (`RUNNING`, `STARTING`) are weighed first and the `PAUSED` ones only when no live one has
/// room; the module's text says what each strategy picks.
pub fn choose(
    strategy: SandboxGrouping,
    candidates: &[GroupCandidate],
    max_conversations: u32,
) -> Option<SandboxId> {
    if !strategy.groups() {
        return None;
    }
    let cap = u64::from(max_conversations.max(1));
    for tier in [0, 1] {
        let mut room: Vec<&GroupCandidate> = candidates
            .iter()
            .filter(|c| c.tier() == Some(tier) && c.conversations < cap)
            .collect();
        room.sort_by(GroupCandidate::newest_first);
        // `room` is newest first: `min_by_key` keeps the first of equals, so every tie goes
        // to the newest.
        let picked = match strategy {
            SandboxGrouping::NoGrouping => None,
            SandboxGrouping::AddToAny | SandboxGrouping::GroupByNewest => room.first().copied(),
            SandboxGrouping::LeastRecentlyUsed => room
                .iter()
                .copied()
                .min_by_key(|c| c.last_used_at.unwrap_or(c.created_at)),
            SandboxGrouping::FewestConversations => {
                room.iter().copied().min_by_key(|c| c.conversations)
            }
        };
        if let Some(c) = picked {
            return Some(c.id);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::Duration;
    use time::macros::datetime;

    const T0: OffsetDateTime = datetime!(2026-11-30 10:00 UTC);

    fn sandbox(
        n: u128,
        status: SandboxStatus,
        created_min: i64,
        used_min: Option<i64>,
        conversations: u64,
    ) -> GroupCandidate {
        GroupCandidate {
            id: SandboxId(uuid::Uuid::from_u128(n)),
            status,
            created_at: T0 + Duration::minutes(created_min),
            last_used_at: used_min.map(|m| T0 + Duration::minutes(m)),
            conversations,
        }
    }

    fn id(n: u128) -> Option<SandboxId> {
        Some(SandboxId(uuid::Uuid::from_u128(n)))
    }

    use SandboxStatus::{Error, Missing, Paused, Running, Starting};

    /// Three running sandboxes: 1 the oldest, most recently used, 3 conversations; 2 in the
    /// middle, least recently used, 1 conversation; 3 the newest, used in between, 2.
    fn three() -> Vec<GroupCandidate> {
        vec![
            sandbox(1, Running, 0, Some(50), 3),
            sandbox(2, Running, 10, Some(20), 1),
            sandbox(3, Running, 20, Some(30), 2),
        ]
    }

    #[test]
    fn each_strategy_picks_its_sandbox() {
        let c = three();
        assert_eq!(choose(SandboxGrouping::NoGrouping, &c, 20), None);
        assert_eq!(choose(SandboxGrouping::GroupByNewest, &c, 20), id(3));
        assert_eq!(choose(SandboxGrouping::AddToAny, &c, 20), id(3));
        assert_eq!(choose(SandboxGrouping::LeastRecentlyUsed, &c, 20), id(2));
        assert_eq!(choose(SandboxGrouping::FewestConversations, &c, 20), id(2));
        // The input's order does not matter.
        let mut reversed = c.clone();
        reversed.reverse();
        for s in SandboxGrouping::ALL {
            assert_eq!(choose(s, &reversed, 20), choose(s, &c, 20), "{s:?}");
        }
    }

    #[test]
    fn a_full_sandbox_is_never_chosen() {
        let c = three();
        // At a cap of 2, only sandbox 2 (one conversation) has room.
        for s in SandboxGrouping::ALL.into_iter().filter(|s| s.groups()) {
            assert_eq!(choose(s, &c, 2), id(2), "{s:?}");
        }
        // At a cap of 1 none has room: a new sandbox.
        for s in SandboxGrouping::ALL {
            assert_eq!(choose(s, &c, 1), None, "{s:?}");
        }
        // A cap of 0 is taken as 1: an empty sandbox still takes one.
        let empty = [sandbox(9, Running, 0, None, 0)];
        assert_eq!(choose(SandboxGrouping::AddToAny, &empty, 0), id(9));
    }

    #[test]
    fn live_sandboxes_come_before_paused_ones() {
        // The paused one is newer, less used and emptier, yet a live one with room wins.
        let c = vec![
            sandbox(1, Running, 0, Some(40), 5),
            sandbox(2, Starting, 5, Some(30), 4),
            sandbox(3, Paused, 30, Some(1), 0),
        ];
        assert_eq!(choose(SandboxGrouping::GroupByNewest, &c, 20), id(2));
        assert_eq!(choose(SandboxGrouping::LeastRecentlyUsed, &c, 20), id(2));
        assert_eq!(choose(SandboxGrouping::FewestConversations, &c, 20), id(2));
        // Once the live ones are full, the paused one.
        for s in SandboxGrouping::ALL.into_iter().filter(|s| s.groups()) {
            assert_eq!(choose(s, &c, 4), id(3), "{s:?}");
        }
    }

    #[test]
    fn failed_sandboxes_are_never_chosen() {
        let c = vec![
            sandbox(1, Error, 50, None, 0),
            sandbox(2, Missing, 40, None, 0),
        ];
        for s in SandboxGrouping::ALL {
            assert_eq!(choose(s, &c, 20), None, "{s:?}");
        }
    }

    #[test]
    fn ties_go_to_the_newest() {
        let c = vec![
            sandbox(1, Running, 0, None, 1),
            sandbox(2, Running, 10, None, 1),
            // Same creation as 2, a larger id: listed first.
            sandbox(3, Running, 10, None, 1),
        ];
        assert_eq!(choose(SandboxGrouping::GroupByNewest, &c, 20), id(3));
        assert_eq!(choose(SandboxGrouping::FewestConversations, &c, 20), id(3));
        // Never used: its creation is its last use, so the oldest is the least recently used.
        assert_eq!(choose(SandboxGrouping::LeastRecentlyUsed, &c, 20), id(1));
        let same_use = vec![
            sandbox(1, Running, 0, Some(30), 1),
            sandbox(2, Running, 10, Some(30), 1),
        ];
        assert_eq!(
            choose(SandboxGrouping::LeastRecentlyUsed, &same_use, 20),
            id(2)
        );
    }

    #[test]
    fn the_preference_names_the_strategy() {
        for s in SandboxGrouping::ALL {
            assert_eq!(SandboxGrouping::parse(s.as_str()), Some(s));
            let prefs = json!({GROUPING_PREFERENCE: s.as_str()});
            assert_eq!(
                SandboxGrouping::of_preferences(prefs.as_object().unwrap()),
                s
            );
        }
        assert_eq!(
            SandboxGrouping::ALL.map(SandboxGrouping::as_str),
            crate::user_settings::patch::SANDBOX_GROUPING_STRATEGIES
        );
        for unset in [
            json!({}),
            json!({GROUPING_PREFERENCE: null}),
            json!({GROUPING_PREFERENCE: "X"}),
        ] {
            assert_eq!(
                SandboxGrouping::of_preferences(unset.as_object().unwrap()),
                SandboxGrouping::NoGrouping
            );
        }
    }
}

//! `serve`'s flags for what the database may hold (issue 33): the event quotas per
//! conversation and per organization, and the free-space reserve of the database's disk.
//! They apply to the store as `serve` opens it ([`StorageLimitArgs::apply`]).

use clap::Args;
use switchboard_domain::event_quota::{
    DEFAULT_MAX_BYTES_PER_CONVERSATION, DEFAULT_MAX_EVENTS_PER_CONVERSATION, EventQuota,
};
use switchboard_storage::{DieselStore, DiskReserve};

use crate::cli_help::heading;

#[derive(Args, Clone)]
#[command(next_help_heading = heading::STORAGE)]
pub struct StorageLimitArgs {
    /// Events one conversation may hold; a webhook batch past it stores nothing (507) and the conversation gets one ConversationErrorEvent saying why; 0: no limit.
    #[arg(long, env = "SWITCHBOARD_MAX_EVENTS_PER_CONVERSATION", default_value_t = DEFAULT_MAX_EVENTS_PER_CONVERSATION as u64)]
    pub max_events_per_conversation: u64,
    /// Bytes of events (their canonical JSON) one conversation may hold, as above; 0: no limit.
    #[arg(long, env = "SWITCHBOARD_MAX_EVENT_BYTES_PER_CONVERSATION", default_value_t = DEFAULT_MAX_BYTES_PER_CONVERSATION as u64)]
    pub max_event_bytes_per_conversation: u64,
    /// Bytes of events all of one organization's conversations may hold together, as above; 0: no limit.
    #[arg(long, env = "SWITCHBOARD_MAX_EVENT_BYTES_PER_ORG", default_value_t = 0)]
    pub max_event_bytes_per_org: u64,
    /// Free space, in MiB, kept on the SQLite database's filesystem: below it event appends are refused (507) while reads and deletes go on, and /ready says `degraded`; 0: no reserve. (PostgreSQL's disk is its server's to keep.)
    #[arg(long, env = "SWITCHBOARD_MIN_FREE_DISK_MIB", default_value_t = 256)]
    pub min_free_disk: u64,
}

impl StorageLimitArgs {
    /// `store` with the quotas and, on SQLite (database `url`), the disk reserve on the
    /// database file's directory ([`DiskReserve::for_url`]).
    pub fn apply(&self, store: DieselStore, url: &str) -> DieselStore {
        let store = store.with_event_quota(EventQuota::from_counts(
            self.max_events_per_conversation,
            self.max_event_bytes_per_conversation,
            self.max_event_bytes_per_org,
        ));
        match DiskReserve::for_url(url, self.min_free_disk) {
            Some(reserve) => store.with_disk_reserve(reserve),
            None => store,
        }
    }
}

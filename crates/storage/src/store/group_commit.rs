//! Group commit of event appends ("flat combining"): concurrent appends share one write
//! transaction, so the commit, its fsync and the PostgreSQL append lock are paid once per
//! group rather than once per batch. The transaction itself is `appends.rs`.

use std::collections::HashMap;

use switchboard_domain::StorageError;
use switchboard_domain::events::AppendOutcome;
use switchboard_domain::ports::Append;

/// At most this many appends per group transaction.
const MAX_GROUP: usize = 64;

/// Commits one group (ticket and append, in queue order) and answers each ticket's result in
/// the same order.
pub(super) type GroupCommit<'a> = dyn Fn(&[(u64, Append)]) -> Vec<(u64, AppendResult)> + 'a;

/// What one append comes to: its outcome (`None` for an unknown conversation), or the
/// storage error of its transaction.
pub(super) type AppendResult = Result<Option<AppendOutcome>, StorageError>;

#[derive(Default)]
struct CombinerQueue {
    next_ticket: u64,
    waiting: Vec<(u64, Append)>,
    done: HashMap<u64, AppendResult>,
}

/// Group commit for appends ("flat combining"): each caller queues its append; whoever holds
/// the leader lock drains the queue and commits every queued append in one transaction, in
/// queue order, then hands each caller its result. A caller returns only after the transaction
/// holding its events committed, so a 2xx still means durable. If a group transaction fails,
/// its appends are retried one by one, so one bad append cannot fail the others.
#[derive(Default)]
pub(crate) struct AppendCombiner {
    queue: std::sync::Mutex<CombinerQueue>,
    finished: std::sync::Condvar,
    leader: std::sync::Mutex<()>,
}

impl AppendCombiner {
    fn lock_queue(&self) -> std::sync::MutexGuard<'_, CombinerQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `pending` and returns once the transaction holding it committed (or failed).
    /// The caller that leads commits each group with `commit`, which answers each ticket's
    /// result in the group's order.
    pub(super) fn append(&self, pending: Append, commit: &GroupCommit<'_>) -> AppendResult {
        let ticket = {
            let mut q = self.lock_queue();
            q.next_ticket += 1;
            let t = q.next_ticket;
            q.waiting.push((t, pending));
            t
        };
        loop {
            if let Some(r) = self.lock_queue().done.remove(&ticket) {
                return r;
            }
            match self.leader.try_lock() {
                Ok(_leader) => {
                    let group: Vec<(u64, Append)> = {
                        let mut q = self.lock_queue();
                        let n = q.waiting.len().min(MAX_GROUP);
                        q.waiting.drain(..n).collect()
                    };
                    if group.is_empty() {
                        continue;
                    }
                    let results = commit(&group);
                    self.lock_queue().done.extend(results);
                    self.finished.notify_all();
                }
                Err(_) => {
                    let q = self.lock_queue();
                    if !q.done.contains_key(&ticket) {
                        // Bounded: a missed wake-up costs at most this long.
                        let _ = self
                            .finished
                            .wait_timeout(q, std::time::Duration::from_millis(5));
                    }
                }
            }
        }
    }
}

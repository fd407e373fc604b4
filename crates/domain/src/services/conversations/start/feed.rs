//! Following a start task's snapshots (`stream-start`): each write of a task this replica
//! runs is published to its followers here, in order; a task another replica runs is followed
//! through reads of the store.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::conversations::start_tasks::{StartTask, StartTaskId};
use crate::error::DomainError;
use crate::ports::StartTaskStore;

/// The snapshots of watched tasks not yet taken by their follower, with the signal that
/// wakes followers. A task nobody watches costs nothing.
#[derive(Default)]
pub(super) struct StartFeed {
    pending: Mutex<HashMap<StartTaskId, Vec<StartTask>>>,
    signal: Condvar,
}

impl StartFeed {
    /// Starts keeping the snapshots of `id`.
    pub(super) fn watch(&self, id: StartTaskId) {
        self.lock().entry(id).or_default();
    }

    /// Stops keeping them.
    pub(super) fn unwatch(&self, id: StartTaskId) {
        self.lock().remove(&id);
    }

    /// Keeps `task` for its follower, if it has one, and wakes it.
    pub(super) fn publish(&self, task: &StartTask) {
        if let Some(queue) = self.lock().get_mut(&task.id) {
            queue.push(task.clone());
            self.signal.notify_all();
        }
    }

    /// The snapshots of `id` kept so far, waiting up to `at_most` for one.
    fn take(&self, id: StartTaskId, at_most: Duration) -> Vec<StartTask> {
        let pending = self.lock();
        let (mut pending, _) = self
            .signal
            .wait_timeout_while(pending, at_most, |p| {
                p.get(&id).is_some_and(|queue| queue.is_empty())
            })
            .expect("start feed poisoned");
        pending.get_mut(&id).map(std::mem::take).unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StartTaskId, Vec<StartTask>>> {
        self.pending.lock().expect("start feed poisoned")
    }
}

/// Follows one start task until it is `READY` or `ERROR`: every snapshot this replica
/// writes, in order, else (another replica runs it) the stored task whenever it changed.
/// Dropping it stops the watch.
pub struct Follower {
    feed: Arc<StartFeed>,
    tasks: Arc<dyn StartTaskStore>,
    last: StartTask,
}

impl Follower {
    pub(super) fn new(
        feed: Arc<StartFeed>,
        tasks: Arc<dyn StartTaskStore>,
        first: StartTask,
    ) -> Self {
        Follower {
            feed,
            tasks,
            last: first,
        }
    }

    /// The snapshots since the last one returned, in order, waiting up to `at_most` for this
    /// replica's next write before reading the store; empty when nothing moved. Blocking.
    ///
    /// # Errors
    /// Storage failures; [`DomainError::ConversationNotFound`] when the task is gone.
    pub fn next(&mut self, at_most: Duration) -> Result<Vec<StartTask>, DomainError> {
        let mut snapshots: Vec<StartTask> = self
            .feed
            .take(self.last.id, at_most)
            .into_iter()
            .filter(|t| *t != self.last)
            .collect();
        if snapshots.is_empty() {
            let stored = self
                .tasks
                .start_tasks_by_ids(&[self.last.id])?
                .pop()
                .ok_or(DomainError::ConversationNotFound)?;
            if stored != self.last && stored.updated_at >= self.last.updated_at {
                snapshots.push(stored);
            }
        }
        if let Some(last) = snapshots.last() {
            self.last = last.clone();
        }
        Ok(snapshots)
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.feed.unwatch(self.last.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversations::start_tasks::StartTaskStatus;
    use crate::ids::{ConversationId, OrgId, UserId};

    fn task(status: StartTaskStatus) -> StartTask {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        StartTask {
            id: StartTaskId(uuid::Uuid::nil()),
            org_id: OrgId(uuid::Uuid::nil()),
            created_by_user_id: UserId(uuid::Uuid::nil()),
            status,
            detail: None,
            conversation_id: ConversationId(uuid::Uuid::nil()),
            sandbox_id: None,
            agent_server_url: None,
            request: serde_json::json!({}),
            secrets_sealed: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn a_watched_task_keeps_every_snapshot_in_order_and_an_unwatched_one_none() {
        let feed = Arc::new(StartFeed::default());
        let id = task(StartTaskStatus::Working).id;
        feed.publish(&task(StartTaskStatus::Working));
        feed.watch(id);
        feed.publish(&task(StartTaskStatus::WaitingForSandbox));
        feed.publish(&task(StartTaskStatus::Ready));
        let got: Vec<_> = feed
            .take(id, Duration::ZERO)
            .into_iter()
            .map(|t| t.status)
            .collect();
        assert_eq!(
            got,
            [StartTaskStatus::WaitingForSandbox, StartTaskStatus::Ready]
        );
        // A publisher on another thread wakes a waiting taker.
        let publisher = feed.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            publisher.publish(&task(StartTaskStatus::Error));
        });
        let started = std::time::Instant::now();
        assert_eq!(feed.take(id, Duration::from_secs(30)).len(), 1);
        assert!(started.elapsed() < Duration::from_secs(10));
        t.join().unwrap();
        feed.unwatch(id);
        feed.publish(&task(StartTaskStatus::Error));
        assert!(feed.lock().is_empty(), "an unwatched task is not kept");
    }
}

//! `LISTEN` connections on PostgreSQL. Live delivery (API.md, Live delivery): one connection per
//! process on the channel every append transaction notifies
//! ([`NOTIFY_CHANNEL`], payload `<conversation id>:<last position>`),
//! turned into calls of an [`AppendObserver`]. The connection is reconnected with backoff, and
//! after every (re)connect the observer is told to [`resync`](AppendObserver::resync): a
//! notification sent while it was down is lost, but subscribers re-read the store from their
//! last position, so no event is. Read caches (issue 23): one connection per process on
//! [`SETTINGS_CHANNEL`] (invalidating its [`SettingsCache`]) and [`IDENTITY_CHANNEL`]
//! (clearing its [`KeyCache`]).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use switchboard_domain::ports::AppendObserver;
use switchboard_domain::{ConversationId, OrgId};
use tokio_postgres::AsyncMessage;

use crate::store::{IDENTITY_CHANNEL, KeyCache, NOTIFY_CHANNEL, SETTINGS_CHANNEL, SettingsCache};

/// The `application_name` of the connection listening for appends, one per server process (so
/// operators, tests and `switchboard secrets rotate-key` count the servers connected in
/// `pg_stat_activity`).
pub const LISTENER_APPLICATION_NAME: &str = "switchboard-listener";

/// The `application_name` of the connection listening for cache invalidations (a second
/// connection of every server on PostgreSQL; not counted as a server).
pub const CACHE_LISTENER_APPLICATION_NAME: &str = "switchboard-cache-listener";

/// First delay before reconnecting; doubled per failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest delay between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Parses a notification payload `<conversation id>:<last position>` into the conversation
/// and its event count (last position + 1); `None` for anything else.
pub fn parse_payload(payload: &str) -> Option<(ConversationId, i64)> {
    let (conv, last) = payload.rsplit_once(':')?;
    let conv = ConversationId(switchboard_domain::parse_uuid(conv)?);
    let last: i64 = last.parse().ok()?;
    (last >= 0).then_some((conv, last + 1))
}

/// What a listening connection is told.
trait Listener {
    /// Connected and listening (again): what was sent while down is lost.
    fn connected(&self);
    /// A notification's payload, on `channel`.
    fn notified(&self, channel: &str, payload: &str);
    /// The connection ended; reconnecting.
    fn disconnected(&self) {}
}

struct Appends(Arc<dyn AppendObserver>);

impl Listener for Appends {
    fn connected(&self) {
        self.0.resync();
    }

    fn notified(&self, _channel: &str, payload: &str) {
        if let Some((conv, count)) = parse_payload(payload) {
            self.0.appended(conv, count);
        }
    }
}

/// The read caches of one process.
struct Caches {
    settings: Arc<SettingsCache>,
    keys: Arc<KeyCache>,
}

impl Listener for Caches {
    fn connected(&self) {
        self.settings.connected();
        self.keys.connected();
    }

    fn notified(&self, channel: &str, payload: &str) {
        if channel == IDENTITY_CHANNEL {
            self.keys.clear();
        } else if let Some(org) = switchboard_domain::parse_uuid(payload) {
            self.settings.invalidate(&OrgId(org));
        } else {
            // Not ours: forget everything rather than risk a stale entry.
            self.settings.connected();
        }
    }

    fn disconnected(&self) {
        self.settings.disconnected();
        self.keys.disconnected();
    }
}

/// Listens on `url` (a `postgres://` URL) until the task is dropped: every notification of an
/// append becomes [`AppendObserver::appended`], every (re)connection
/// [`AppendObserver::resync`]. Runs on a tokio runtime.
pub async fn listen_for_appends(url: String, observer: Arc<dyn AppendObserver>) {
    listen(
        url,
        LISTENER_APPLICATION_NAME,
        &[NOTIFY_CHANNEL],
        Appends(observer),
    )
    .await;
}

/// Listens on `url` for the writes of every replica that invalidate this process's read
/// caches, until the task is dropped: settings writes ([`SETTINGS_CHANNEL`], payload: the
/// organization id) invalidate `settings`' entry; identity writes ([`IDENTITY_CHANNEL`])
/// clear `keys`. The caches are in use only while this connection is (API.md, Organization
/// settings; Identity): turned on after each `LISTEN`, off as soon as the connection fails.
/// Runs on a tokio runtime.
pub async fn listen_for_caches(url: String, settings: Arc<SettingsCache>, keys: Arc<KeyCache>) {
    listen(
        url,
        CACHE_LISTENER_APPLICATION_NAME,
        &[SETTINGS_CHANNEL, IDENTITY_CHANNEL],
        Caches { settings, keys },
    )
    .await;
}

/// Both listeners a server runs on PostgreSQL's `url`, at once, until the task is dropped:
/// [`listen_for_appends`] into `observer` and [`listen_for_caches`] for `settings` and `keys`.
/// Runs on a tokio runtime.
pub async fn listen_for_all(
    url: String,
    observer: Arc<dyn AppendObserver>,
    settings: Arc<SettingsCache>,
    keys: Arc<KeyCache>,
) {
    futures_util::future::join(
        listen_for_appends(url.clone(), observer),
        listen_for_caches(url, settings, keys),
    )
    .await;
}

async fn listen(url: String, name: &str, channels: &[&str], listener: impl Listener) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let result = listen_once(&url, name, channels, &listener).await;
        listener.disconnected();
        match result {
            Ok(()) => backoff = FIRST_BACKOFF,
            Err(e) => {
                tracing::warn!(error = %e, ?channels, ?backoff, "listener disconnected; reconnecting");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection: connect, `LISTEN`, tell the listener, then relay notifications until it
/// ends.
async fn listen_once(
    url: &str,
    name: &str,
    channels: &[&str],
    listener: &impl Listener,
) -> Result<(), tokio_postgres::Error> {
    let mut config: tokio_postgres::Config = url.parse()?;
    config.application_name(name);
    config.connect_timeout(Duration::from_secs(5));
    config.keepalives_idle(Duration::from_secs(30));
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver = tokio::spawn(async move {
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx
                        .send(Ok((n.channel().to_owned(), n.payload().to_owned())))
                        .is_err()
                    {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
    });
    let statements: String = channels.iter().map(|c| format!("LISTEN {c};")).collect();
    let listened = client.batch_execute(&statements).await;
    if let Err(e) = listened {
        driver.abort();
        return Err(e);
    }
    tracing::info!(?channels, "listener connected");
    listener.connected();
    let result = loop {
        match rx.recv().await {
            Some(Ok((channel, payload))) => listener.notified(&channel, &payload),
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        }
    };
    driver.abort();
    drop(client);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_to_counts() {
        let id = "8f0f6f4e-1c1b-4a4b-9d7e-0a1b2c3d4e5f";
        let (conv, count) = parse_payload(&format!("{id}:41")).unwrap();
        assert_eq!(conv.0.to_string(), id);
        assert_eq!(count, 42);
        assert!(parse_payload(id).is_none());
        assert!(parse_payload(&format!("{id}:-1")).is_none());
        assert!(parse_payload("nope:1").is_none());
    }
}

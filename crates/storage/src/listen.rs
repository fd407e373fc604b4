//! The PostgreSQL side of live delivery (API.md, Live delivery): one `LISTEN` connection per
//! process on the channel every append transaction notifies
//! ([`NOTIFY_CHANNEL`], payload `<conversation id>:<last position>`),
//! turned into calls of an [`AppendObserver`]. The connection is reconnected with backoff, and
//! after every (re)connect the observer is told to [`resync`](AppendObserver::resync): a
//! notification sent while it was down is lost, but subscribers re-read the store from their
//! last position, so no event is.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use switchboard_domain::ConversationId;
use switchboard_domain::ports::AppendObserver;
use tokio_postgres::AsyncMessage;

use crate::store::NOTIFY_CHANNEL;

/// The `application_name` of the listening connection (so operators, and tests, can find it
/// in `pg_stat_activity`).
pub const LISTENER_APPLICATION_NAME: &str = "switchboard-listener";

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

/// Listens on `url` (a `postgres://` URL) until the task is dropped: every notification of an
/// append becomes [`AppendObserver::appended`], every (re)connection
/// [`AppendObserver::resync`]. Runs on a tokio runtime.
pub async fn listen_for_appends(url: String, observer: Arc<dyn AppendObserver>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match listen_once(&url, &observer).await {
            Ok(()) => backoff = FIRST_BACKOFF,
            Err(e) => {
                tracing::warn!(error = %e, ?backoff, "append listener disconnected; reconnecting");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection: connect, `LISTEN`, resync, then relay notifications until it ends.
async fn listen_once(
    url: &str,
    observer: &Arc<dyn AppendObserver>,
) -> Result<(), tokio_postgres::Error> {
    let mut config: tokio_postgres::Config = url.parse()?;
    config.application_name(LISTENER_APPLICATION_NAME);
    config.connect_timeout(Duration::from_secs(5));
    config.keepalives_idle(Duration::from_secs(30));
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver = tokio::spawn(async move {
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(Ok(n.payload().to_owned())).is_err() {
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
    let listened = client
        .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
        .await;
    if let Err(e) = listened {
        driver.abort();
        return Err(e);
    }
    tracing::info!("append listener connected");
    observer.resync();
    let result = loop {
        match rx.recv().await {
            Some(Ok(payload)) => {
                if let Some((conv, count)) = parse_payload(&payload) {
                    observer.appended(conv, count);
                }
            }
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

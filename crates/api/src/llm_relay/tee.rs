//! The answer's body on its way back to the agent, read as it passes for what the request
//! used ([`switchboard_domain::llm_relay::usage`]): server-sent events line by line, a whole
//! JSON answer kept up to [`MAX_JSON`] bytes. When the body ends (or the agent goes away) the
//! usage is recorded once, off the worker thread.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use switchboard_domain::llm_relay::LlmRoute;
use switchboard_domain::llm_relay::usage::{SseUsage, Usage, of_json};
use switchboard_domain::services::LlmRelayService;

use crate::metrics::Metrics;

/// The largest whole JSON answer read for its usage (8 MiB); a larger one is forwarded but
/// not counted.
pub const MAX_JSON: usize = 8 << 20;

/// How an answer is read.
pub enum Reader {
    /// Server-sent events.
    Sse(SseUsage),
    /// A whole JSON answer, kept (`None` once past [`MAX_JSON`]).
    Json(Option<Vec<u8>>),
    /// Not read (an error status, another type).
    Skip,
}

/// Where the usage goes once the answer ended.
pub struct Sink {
    /// The service that records it.
    pub relay: LlmRelayService,
    /// The route the request went through.
    pub route: LlmRoute,
    /// The metrics.
    pub metrics: Metrics,
    /// The cost the answer's headers reported (`x-litellm-response-cost`), for an answer
    /// whose usage has none.
    pub header_cost: Option<f64>,
}

/// The answer's body stream, read as it passes.
pub struct Tee<S> {
    inner: Pin<Box<S>>,
    reader: Reader,
    sink: Option<Sink>,
}

impl<S> Tee<S> {
    /// Reads `inner` with `reader`, recording into `sink` at the end.
    pub fn new(inner: S, reader: Reader, sink: Sink) -> Self {
        Tee {
            inner: Box::pin(inner),
            reader,
            sink: Some(sink),
        }
    }

    fn read(&mut self, chunk: &[u8]) {
        match &mut self.reader {
            Reader::Sse(r) => r.feed(chunk),
            Reader::Json(Some(buf)) if buf.len() + chunk.len() <= MAX_JSON => {
                buf.extend_from_slice(chunk);
            }
            Reader::Json(kept) => *kept = None,
            Reader::Skip => {}
        }
    }

    /// Records what was read, once.
    fn finish(&mut self) {
        let Some(sink) = self.sink.take() else {
            return;
        };
        let usage = match std::mem::replace(&mut self.reader, Reader::Skip) {
            Reader::Sse(r) => r.finish(),
            Reader::Json(Some(buf)) => of_json(&buf),
            Reader::Json(None) | Reader::Skip => None,
        }
        .map(|u| Usage {
            cost_usd: u.cost_usd.or(sink.header_cost),
            ..u
        });
        record(sink, usage);
    }
}

/// Counts the request and, when the answer reported a usage, records it on the blocking pool.
fn record(sink: Sink, usage: Option<Usage>) {
    sink.metrics.llm_relay().answered(usage.as_ref());
    let Some(usage) = usage else {
        return;
    };
    let Sink { relay, route, .. } = sink;
    // Dropped bodies end on a worker thread; the write waits for no one.
    drop(tokio::task::spawn_blocking(move || {
        if let Err(e) = relay.record(&route, &usage, switchboard_domain::time_input::now_micros()) {
            tracing::warn!(conversation = %route.conversation_id, error = %e, "the LLM pass-through could not record a request's usage");
        }
    }));
}

impl<S, E> Stream for Tee<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => self.read(chunk),
            Poll::Ready(Some(Err(_)) | None) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for Tee<S> {
    fn drop(&mut self) {
        self.finish();
    }
}

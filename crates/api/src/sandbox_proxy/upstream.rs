//! The proxy's sockets to sandboxes, counted (issue 22; API.md, Sandbox proxy, "Open files"):
//! every upstream socket, HTTP (in use or idle in the pool) or websocket, holds one permit of
//! [`UpstreamSockets`] for as long as it is open, so proxied traffic can never take more
//! descriptors than the open-files budget gives it (`switchboard serve` derives the number
//! from the limit). A socket that would go past it is not opened: the client gets 503 with
//! `Retry-After`, and the API goes on serving.
//!
//! HTTP goes through hyper's pooled client over [`CountedConnector`]: the permit is taken when
//! a connection is made and travels with it ([`Counted`]), so it is given back when the pool
//! drops the connection (closed by the sandbox, broken, or idle past the pool's timeout).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The permits of the proxy's upstream sockets: one per open socket.
#[derive(Debug, Clone)]
pub struct UpstreamSockets {
    permits: Arc<Semaphore>,
    max: usize,
}

impl UpstreamSockets {
    /// At most `max` sockets open at once.
    pub fn new(max: usize) -> Self {
        UpstreamSockets {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A permit for one more socket, if the budget has room; never waits.
    ///
    /// # Errors
    /// [`SocketsExhausted`] when every permit is taken.
    pub fn take(&self) -> Result<OwnedSemaphorePermit, SocketsExhausted> {
        self.permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| SocketsExhausted)
    }

    /// Sockets open now.
    pub fn open(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    /// The most sockets open at once.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// No permit was left for another upstream socket (answered 503).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("every socket the open-files budget gives the sandbox proxy is in use")]
pub struct SocketsExhausted;

/// Whether `e` (or what caused it) is [`SocketsExhausted`].
pub fn is_exhausted(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<SocketsExhausted>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// hyper's HTTP connector, each connection made holding a permit of [`UpstreamSockets`].
#[derive(Clone)]
pub struct CountedConnector {
    inner: HttpConnector,
    sockets: UpstreamSockets,
}

impl CountedConnector {
    /// Connections by `inner`, counted in `sockets`.
    pub fn new(inner: HttpConnector, sockets: UpstreamSockets) -> Self {
        CountedConnector { inner, sockets }
    }
}

/// The future of a counted connection.
type Connecting = Pin<Box<dyn Future<Output = Result<Counted, BoxError>> + Send>>;
/// The connector's error.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<http::Uri> for CountedConnector {
    type Response = Counted;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let permit = match self.sockets.take() {
            Ok(p) => p,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(Counted {
                io,
                _permit: permit,
            })
        })
    }
}

/// A connection to a sandbox holding its permit until it is dropped.
pub struct Counted {
    io: TokioIo<TcpStream>,
    _permit: OwnedSemaphorePermit,
}

impl Connection for Counted {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl Read for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_counted_and_given_back() {
        let sockets = UpstreamSockets::new(2);
        let a = sockets.take().unwrap();
        let _b = sockets.take().unwrap();
        assert_eq!(sockets.open(), 2);
        let e = sockets.take().unwrap_err();
        let boxed: BoxError = e.into();
        assert!(is_exhausted(boxed.as_ref()));
        assert!(!is_exhausted(&io::Error::other("x")));
        drop(a);
        assert_eq!(sockets.open(), 1);
        assert!(sockets.take().is_ok());
    }
}

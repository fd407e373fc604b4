//! How a call to an agent server fails ([`AgentServerError`]): the error of every agent-server
//! port (the runtime's client calls and the event reads of the pull and stream paths), in a
//! module of its own so that each port's module depends on it and not on the others.

use std::time::Duration;

/// Why a call to an agent server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentServerError {
    /// Nothing answered (connection refused, reset, unknown host).
    #[error("{url}: unreachable: {detail}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// The transport's words.
        detail: String,
    },
    /// No complete answer within the timeout.
    #[error("{url}: no answer within {timeout:?}")]
    Timeout {
        /// The URL called.
        url: String,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// An answer with an unexpected status or body.
    #[error("{url}: unexpected answer: {detail}")]
    BadAnswer {
        /// The URL called.
        url: String,
        /// The status and the answer's body as received (up to a bound, never cut to a
        /// display length): a caller redacts it before it shortens it (issue 24 item 1).
        detail: String,
    },
    /// Switchboard itself could not make the call (no file descriptor or memory left for a
    /// socket): nothing is known of the agent server (issue 24 item 3).
    #[error("{url}: could not call: {detail}")]
    Local {
        /// The URL to call.
        url: String,
        /// The operating system's words.
        detail: String,
    },
}

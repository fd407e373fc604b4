//! The Docker runtime's errors, and how the engine's answers are read.

use switchboard_domain::sandboxes::runtime::RuntimeError;

/// Why a Docker operation outside the runtime port failed (connecting, listing, pulling).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DockerError {
    /// The configuration cannot be used (the detail names the field).
    #[error("invalid Docker runtime configuration: {0}")]
    Config(String),
    /// No Docker daemon answered at `host` (`DOCKER_HOST`, or the default socket).
    #[error("no Docker daemon answers at {host}: {detail}")]
    Unavailable {
        /// The daemon's address as configured (`unix:///var/run/docker.sock`, `tcp://…`).
        host: String,
        /// The transport's or the daemon's words.
        detail: String,
    },
    /// The daemon refused or failed a request: its words.
    #[error("Docker: {0}")]
    Api(String),
    /// Pulling an image failed (unknown image, registry unreachable, no credentials).
    #[error("pulling image {image}: {detail}")]
    Pull {
        /// The image reference, as pulled (with `:latest` added when it named no tag).
        image: String,
        /// The registry's or the daemon's words.
        detail: String,
    },
}

impl From<DockerError> for RuntimeError {
    fn from(e: DockerError) -> Self {
        RuntimeError::Io(e.to_string())
    }
}

/// The HTTP status of an answer the engine refused, if that is what `e` is.
pub(crate) fn status_of(e: &bollard::errors::Error) -> Option<u16> {
    match e {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Whether the engine answered 404 (no such container, volume, image or network).
pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    status_of(e) == Some(404)
}

/// The engine's own words for a refused request, or the client's for a transport failure.
pub(crate) fn words(e: &bollard::errors::Error) -> String {
    match e {
        bollard::errors::Error::DockerResponseServerError {
            status_code,
            message,
        } => format!("{} (HTTP {status_code})", message.trim()),
        bollard::errors::Error::RequestTimeoutError => {
            "no answer from the Docker daemon in time".to_owned()
        }
        other => other.to_string(),
    }
}

/// Whether a failed container start was a host port clash (another process or container
/// took the port between its choice and the start), worth retrying with another port.
pub(crate) fn is_port_clash(e: &bollard::errors::Error) -> bool {
    let text = words(e);
    text.contains("port is already allocated") || text.contains("address already in use")
}

/// A [`RuntimeError::Io`] for a failed `action` (`pausing container …`).
pub(crate) fn io(action: &str, e: &bollard::errors::Error) -> RuntimeError {
    RuntimeError::Io(format!("Docker: {action}: {}", words(e)))
}

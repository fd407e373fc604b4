//! The Kubernetes runtime's errors, and how the API server's answers are read.

use switchboard_domain::sandboxes::runtime::RuntimeError;

/// Why a Kubernetes operation outside the runtime port failed (connecting, listing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubernetesError {
    /// The configuration cannot be used (the detail names the field or the kubeconfig).
    #[error("invalid Kubernetes runtime configuration: {0}")]
    Config(String),
    /// The API server did not answer, or refused the runtime's credentials.
    #[error("the Kubernetes API server cannot be used: {0}")]
    Unavailable(String),
    /// The API server refused or failed a request: its words.
    #[error("Kubernetes: {0}")]
    Api(String),
}

impl From<KubernetesError> for RuntimeError {
    fn from(e: KubernetesError) -> Self {
        RuntimeError::Io(e.to_string())
    }
}

/// The HTTP status of an answer the API server refused, if that is what `e` is.
pub(crate) fn status_of(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Whether `e` is the API server's 404.
pub(crate) fn is_not_found(e: &kube::Error) -> bool {
    status_of(e) == Some(404)
}

/// Whether `e` is the API server's 409 (an object of that name exists).
pub(crate) fn is_conflict(e: &kube::Error) -> bool {
    status_of(e) == Some(409)
}

/// The API server's or the transport's words for `e`, on one line.
pub(crate) fn words(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string().replace('\n', " "),
    }
}

/// A [`RuntimeError::Io`] for `doing` (e.g. "deleting the pod") failing with `e`.
pub(crate) fn io(doing: &str, e: &kube::Error) -> RuntimeError {
    RuntimeError::Io(format!("Kubernetes: {doing}: {}", words(e)))
}

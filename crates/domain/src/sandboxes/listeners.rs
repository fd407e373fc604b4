//! Whether what listens where Switchboard reaches a sandbox is that sandbox (issue 33, "never
//! talk to a listener you did not verify"): the answer of
//! [`SandboxRuntime::listener`](crate::sandboxes::runtime::SandboxRuntime::listener), asked
//! before a request or a credential is sent to a sandbox's agent server or exposed service.

/// Who listens at a sandbox's URL, as its runtime can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerCheck {
    /// The sandbox itself (e.g. a loopback listener owned by the sandbox's own user).
    Sandbox,
    /// Nothing listens there now: a connection would fail, or reach whoever binds the port
    /// next.
    Nobody,
    /// Someone else listens there (another sandbox, a host service); the text says who and
    /// where, for the log and the refusal. Nothing may be sent.
    Foreign(String),
    /// The runtime cannot tell and needs not: the address is one no sandbox can take (a
    /// container's own network, a published port or a port-forward held by Switchboard or
    /// the container engine), or the sandbox runs unconfined (`--process-isolation none`:
    /// every sandbox is the same user, the trust that mode documents).
    Unchecked,
}

impl ListenerCheck {
    /// Whether Switchboard may send to the listener: [`ListenerCheck::Sandbox`] or
    /// [`ListenerCheck::Unchecked`].
    pub fn may_send(&self) -> bool {
        matches!(self, ListenerCheck::Sandbox | ListenerCheck::Unchecked)
    }

    /// Why Switchboard does not send (`None` when it may): for
    /// [`DomainError::ListenerNotSandbox`](crate::error::DomainError::ListenerNotSandbox).
    pub fn refusal(&self, url: &str) -> Option<String> {
        match self {
            ListenerCheck::Sandbox | ListenerCheck::Unchecked => None,
            ListenerCheck::Nobody => Some(format!("nothing listens at {url}")),
            ListenerCheck::Foreign(who) => Some(who.clone()),
        }
    }
}

//! Who listens where Switchboard reaches a process sandbox (issue 33): a sandbox with a network
//! of its own is reached through its `pasta` daemon, so the loopback listener of its agent
//! server or exposed service must be one of that daemon's sockets; otherwise a confined
//! sandbox runs as a user of its own, so the listener must be owned by that user. Any other
//! listener on the port is someone else's.

use switchboard_domain::sandboxes::listeners::ListenerCheck;
use switchboard_domain::sandboxes::runtime::{RuntimeError, RuntimeHandle};

use super::identity::ProcessIdentity;
use super::network::holds_socket;
use crate::listeners::{loopback_listener, loopback_port};

/// [`ListenerCheck`] of `url` for the sandbox of `handle`: [`ListenerCheck::Unchecked`] for a
/// sandbox with neither a network nor a user of its own (`--process-isolation none`, or
/// unprivileged on the host's network) or a URL that is not `http://127.0.0.1:<port>`; else
/// from the listener a connection to `127.0.0.1:<port>` would reach: its socket (held by the
/// sandbox's `pasta`) or its owner (the sandbox's user).
///
/// # Errors
/// [`RuntimeError::BadHandle`] for another runtime's handle; [`RuntimeError::Io`] when the
/// kernel's socket table could not be read.
pub(super) fn check(handle: &RuntimeHandle, url: &str) -> Result<ListenerCheck, RuntimeError> {
    let identity = ProcessIdentity::of(handle)?;
    if identity.uid.is_none() && identity.network.is_none() {
        return Ok(ListenerCheck::Unchecked);
    }
    let Some(port) = loopback_port(url) else {
        return Ok(ListenerCheck::Unchecked);
    };
    let listener = loopback_listener(port)
        .map_err(|e| RuntimeError::Io(format!("looking up the listener of port {port}: {e}")))?;
    if let Some(helper) = identity.network {
        return Ok(match listener {
            None => ListenerCheck::Nobody,
            Some(l) if holds_socket(helper, l.inode) => ListenerCheck::Sandbox,
            Some(l) => ListenerCheck::Foreign(format!(
                "{}:{port} is held by user {}, not by the sandbox's network (pasta, pid {})",
                l.address, l.uid, helper.pid
            )),
        });
    }
    let Some(uid) = identity.uid else {
        return Ok(ListenerCheck::Unchecked);
    };
    Ok(match listener {
        None => ListenerCheck::Nobody,
        Some(l) if l.uid != uid => ListenerCheck::Foreign(format!(
            "{}:{port} is held by user {}, not by the sandbox's user {uid}",
            l.address, l.uid
        )),
        Some(_) => ListenerCheck::Sandbox,
    })
}

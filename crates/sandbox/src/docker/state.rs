//! A container's state as the runtime port sees it ([`Observed`]). Unlike OpenHands (reference
//! app-server §3.3: "exited → PAUSED"), an exited container is [`Observed::Exited`] with the
//! reason read from its exit code, which `status_of` makes `ERROR` (ended before it ever
//! answered) or `MISSING` (ended after); only a paused one is [`Observed::Stopped`].

use bollard::models::{ContainerState, ContainerStateStatusEnum};
use switchboard_domain::sandboxes::runtime::Observed;

/// What the port sees of a container in `state`:
///
/// | Docker status | observed |
/// |---|---|
/// | `running`, `restarting`, `stopping` | running (the `/alive` probe decides the rest) |
/// | `paused` | stopped |
/// | `exited` | exited, reason from the exit code ([`exit_reason`]) |
/// | `created` | exited: "created but never started" |
/// | `dead` | exited: "dead" and the engine's error |
/// | `removing` | gone |
pub fn observed_of(state: &ContainerState) -> Observed {
    use ContainerStateStatusEnum as S;
    let error = state.error.as_deref().unwrap_or("");
    match state.status {
        Some(S::RUNNING | S::RESTARTING | S::STOPPING) => Observed::Running,
        Some(S::PAUSED) => Observed::Stopped,
        Some(S::EXITED) => Observed::Exited {
            reason: exit_reason(
                state.exit_code.unwrap_or(-1),
                state.oom_killed.unwrap_or(false),
                error,
            ),
        },
        Some(S::CREATED) => Observed::Exited {
            reason: with_error("created but never started".into(), error),
        },
        Some(S::REMOVING) => Observed::Gone,
        Some(S::DEAD | S::EMPTY) | None => Observed::Exited {
            reason: with_error(
                "dead (the engine could not stop or remove it)".into(),
                error,
            ),
        },
    }
}

/// How a container ended, in words, from its exit code (with `--init`, the code is the agent
/// server's own, or 128 + the signal that ended it), whether the kernel's OOM killer ended it
/// and the engine's error text (e.g. why it could not be started):
/// `exited with code 2`, `killed by signal 9 (SIGKILL), exit code 137`,
/// `killed: out of memory (exit code 137)`.
pub fn exit_reason(code: i64, oom_killed: bool, error: &str) -> String {
    let base = if oom_killed {
        format!("killed: out of memory (exit code {code})")
    } else if (129..=128 + 64).contains(&code) {
        let signal = code - 128;
        match signal_name(signal) {
            Some(name) => format!("killed by signal {signal} ({name}), exit code {code}"),
            None => format!("killed by signal {signal}, exit code {code}"),
        }
    } else if code < 0 {
        "exited (exit code unknown)".to_owned()
    } else {
        format!("exited with code {code}")
    };
    with_error(base, error)
}

fn with_error(base: String, error: &str) -> String {
    if error.trim().is_empty() {
        base
    } else {
        format!("{base}: {}", error.trim())
    }
}

fn signal_name(signal: i64) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(
        status: ContainerStateStatusEnum,
        code: i64,
        oom: bool,
        error: &str,
    ) -> ContainerState {
        ContainerState {
            status: Some(status),
            exit_code: Some(code),
            oom_killed: Some(oom),
            error: Some(error.to_owned()),
            ..Default::default()
        }
    }

    fn exited(reason: &str) -> Observed {
        Observed::Exited {
            reason: reason.into(),
        }
    }

    #[test]
    fn docker_states_map_to_observations() {
        use ContainerStateStatusEnum as S;
        let cases = [
            (state(S::RUNNING, 0, false, ""), Observed::Running),
            (state(S::RESTARTING, 1, false, ""), Observed::Running),
            (state(S::PAUSED, 0, false, ""), Observed::Stopped),
            (state(S::REMOVING, 0, false, ""), Observed::Gone),
            (state(S::EXITED, 0, false, ""), exited("exited with code 0")),
            (state(S::EXITED, 2, false, ""), exited("exited with code 2")),
            (
                state(S::EXITED, 137, false, ""),
                exited("killed by signal 9 (SIGKILL), exit code 137"),
            ),
            (
                state(S::EXITED, 143, false, ""),
                exited("killed by signal 15 (SIGTERM), exit code 143"),
            ),
            (
                state(S::EXITED, 137, true, ""),
                exited("killed: out of memory (exit code 137)"),
            ),
            (
                state(S::EXITED, 127, false, "exec: \"x\": not found "),
                exited("exited with code 127: exec: \"x\": not found"),
            ),
            (
                state(S::CREATED, 0, false, ""),
                exited("created but never started"),
            ),
            (
                state(S::DEAD, 0, false, "device busy"),
                exited("dead (the engine could not stop or remove it): device busy"),
            ),
            (
                ContainerState::default(),
                exited("dead (the engine could not stop or remove it)"),
            ),
        ];
        for (state, expected) in cases {
            assert_eq!(observed_of(&state), expected, "{state:?}");
        }
    }

    #[test]
    fn unnamed_signals_and_unknown_codes_are_still_described() {
        assert_eq!(
            exit_reason(128 + 30, false, ""),
            "killed by signal 30, exit code 158"
        );
        assert_eq!(exit_reason(255, false, ""), "exited with code 255");
        assert_eq!(exit_reason(-1, false, ""), "exited (exit code unknown)");
    }
}

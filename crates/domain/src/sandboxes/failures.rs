//! Why a sandbox is `ERROR` or `MISSING`, in words its user can act on (API.md, "Why a
//! sandbox failed"): the sandbox's `status_message`, short and bounded
//! ([`STATUS_MESSAGE_MAX_BYTES`]), and the bounded kind of a failed start
//! ([`StartFailure`]) that the start metrics count.

use crate::identity::redaction::redact;
use crate::sandboxes::specs::PROCESS_PRESET_ID;

/// The most bytes of a `status_message` (the last lines of a log included): about a kilobyte,
/// cut on a character boundary.
pub const STATUS_MESSAGE_MAX_BYTES: usize = 1024;
/// How many of a sandbox's last log lines a `status_message` quotes, at most.
pub const STATUS_LOG_LINES: usize = 8;

/// The kind of a failed start (the `reason` label of `sandbox_start_failures_total`): a
/// fixed, small set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StartFailure {
    /// The command (or a program it runs) was not found or cannot be executed: a launch
    /// error saying so, or an exit with status 126 or 127 (the shells' "cannot execute" and
    /// "not found").
    CommandNotFound,
    /// The agent server ended before it first answered `/alive`, with any other status.
    ExitedEarly,
    /// It did not answer `/alive` within the start timeout.
    Timeout,
    /// The container image is not on the Docker host (images are never pulled at start).
    ImageMissing,
    /// Anything else the runtime refused (a port, a volume, a pod, a listener on its address).
    RuntimeError,
}

impl StartFailure {
    /// The metric label: `command_not_found`, `exited_early`, `timeout`, `image_missing`,
    /// `runtime_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartFailure::CommandNotFound => "command_not_found",
            StartFailure::ExitedEarly => "exited_early",
            StartFailure::Timeout => "timeout",
            StartFailure::ImageMissing => "image_missing",
            StartFailure::RuntimeError => "runtime_error",
        }
    }

    /// Every kind, for a metric's zero series.
    pub const ALL: [StartFailure; 5] = [
        StartFailure::CommandNotFound,
        StartFailure::ExitedEarly,
        StartFailure::Timeout,
        StartFailure::ImageMissing,
        StartFailure::RuntimeError,
    ];

    /// The kind of a runtime's launch error, read from its words (runtimes say "not found …
    /// PATH" and "is not on the Docker host").
    pub fn of_launch_error(detail: &str) -> StartFailure {
        if detail.contains("is not on the Docker host") {
            StartFailure::ImageMissing
        } else if matches!(exit_code(detail), Some(126 | 127))
            || detail.contains("not found on the sandbox's PATH")
            || detail.contains("not found or not executable")
            || detail.contains("has no PATH to find it")
        {
            StartFailure::CommandNotFound
        } else {
            StartFailure::RuntimeError
        }
    }

    /// The kind of an exit during start, from the runtime's words for it (`exit status:
    /// 127`, `signal: 9 (SIGKILL)`).
    pub fn of_exit(reason: &str) -> StartFailure {
        match exit_code(reason) {
            Some(126 | 127) => StartFailure::CommandNotFound,
            _ => StartFailure::ExitedEarly,
        }
    }
}

/// The exit status in a runtime's words for an ended process (`exit status: 127`, `exit
/// status 3`, `exited with code 1`); `None` when it names none (a signal).
pub fn exit_code(reason: &str) -> Option<i32> {
    let digits_after = |marker: &str| {
        let rest = &reason[reason.find(marker)? + marker.len()..];
        let rest = rest.trim_start_matches([':', ' ']);
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    };
    ["exit status", "exit code", "exited with code"]
        .into_iter()
        .find_map(digits_after)
}

/// What to do about a sandbox of spec `spec_id` whose command did not run: for the built-in
/// spec, the flag that names its command; `None` for a spec of a specs file (its author
/// knows where it came from).
fn command_hint(spec_id: &str) -> Option<&'static str> {
    (spec_id == PROCESS_PRESET_ID).then_some(
        "install the OpenHands agent server where the sandbox finds it, or set \
         --agent-server-command",
    )
}

/// The `status_message` of a sandbox whose runtime refused to start it: `detail` is the
/// runtime's error.
pub fn launch_failed(spec_id: &str, detail: &str) -> String {
    let detail = detail
        .strip_prefix("the sandbox could not be started: ")
        .unwrap_or(detail);
    let kind = StartFailure::of_launch_error(detail);
    let (head, log) = match detail.split_once(LAUNCH_LOG_MARK) {
        Some((head, log)) => (head, Some(log)),
        None => (detail, None),
    };
    let mut text = format!("the sandbox could not be started: {head}");
    if kind == StartFailure::CommandNotFound
        && let Some(hint) = command_hint(spec_id)
    {
        text.push_str("; ");
        text.push_str(hint);
    }
    with_log(text, log)
}

/// How a runtime's launch error introduces the end of the sandbox's log.
const LAUNCH_LOG_MARK: &str = "; the last lines of its log:\n";

/// The `status_message` of a sandbox that ended before its agent server answered: `reason` is
/// the runtime's words for the exit, `command` the spec's command, `log_tail` the last lines
/// of its log (redacted by the caller).
pub fn exited_during_start(
    spec_id: &str,
    command: &[String],
    reason: &str,
    log_tail: Option<&str>,
) -> String {
    let shown = shown_command(command);
    let mut text = match exit_code(reason) {
        Some(code) => {
            format!("the agent server exited with status {code} before it was ready (`{shown}`)")
        }
        None => format!("the agent server ended before it was ready ({reason}; `{shown}`)"),
    };
    match exit_code(reason) {
        Some(127) => text.push_str(": the command, or a program it runs, was not found"),
        Some(126) => text.push_str(": the command, or a program it runs, cannot be executed"),
        _ => {}
    }
    if StartFailure::of_exit(reason) == StartFailure::CommandNotFound
        && let Some(hint) = command_hint(spec_id)
    {
        text.push_str("; ");
        text.push_str(hint);
    }
    with_log(text, log_tail)
}

/// The `status_message` of a sandbox whose agent server did not answer `/alive` within the
/// start timeout of `seconds`.
pub fn start_timed_out(seconds: u64, log_tail: Option<&str>) -> String {
    with_log(
        format!("the agent server did not answer /alive within the start timeout ({seconds} s)"),
        log_tail,
    )
}

/// The `status_message` of a sandbox whose agent server stopped answering for longer than the
/// health grace of `seconds`.
pub fn stopped_answering(seconds: u64, log_tail: Option<&str>) -> String {
    with_log(
        format!("the agent server has not answered /alive for longer than {seconds} s"),
        log_tail,
    )
}

/// The `status_message` of a sandbox whose agent server's address another listener holds.
pub fn address_taken() -> String {
    "another program holds the agent server's address, so the agent server cannot listen there"
        .to_owned()
}

/// The `status_message` of a sandbox found `MISSING`: `reason` the runtime's words for how it
/// ended, when it knows them.
pub fn gone(reason: Option<&str>, log_tail: Option<&str>) -> String {
    let text = match reason {
        Some(r) => format!("the sandbox ended ({r})"),
        None => "the sandbox's process or container is gone".to_owned(),
    };
    with_log(text, log_tail)
}

/// The command as shown in a message: its words joined, cut to 200 characters.
fn shown_command(command: &[String]) -> String {
    let joined = command.join(" ");
    match joined.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

/// `text` and, when there is one, the log's last lines after `; last lines of its log: `,
/// bounded as a whole.
fn with_log(mut text: String, log_tail: Option<&str>) -> String {
    if let Some(tail) = log_tail.map(str::trim).filter(|t| !t.is_empty()) {
        text.push_str("; last lines of its log:\n");
        // Room is kept for the message itself: the log gives way first, from its start.
        let room = STATUS_MESSAGE_MAX_BYTES.saturating_sub(text.len());
        text.push_str(&last_bytes(tail, room));
    }
    bounded(&text)
}

/// The last [`STATUS_LOG_LINES`] lines of `log`, redacted of `secrets` (values a sandbox's
/// log may echo: its session key, the operator's passed variables).
pub fn log_tail_redacted(log: &str, secrets: &[String]) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(STATUS_LOG_LINES)..].join("\n");
    redact(&tail, secrets)
}

/// At most `max` bytes of the end of `s`, on a character boundary (`…` first when cut).
fn last_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut start = s.len() - max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

/// `text` cut to [`STATUS_MESSAGE_MAX_BYTES`] on a character boundary (`…` last when cut).
pub fn bounded(text: &str) -> String {
    if text.len() <= STATUS_MESSAGE_MAX_BYTES {
        return text.to_owned();
    }
    let mut end = STATUS_MESSAGE_MAX_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_from_the_runtimes_words() {
        assert_eq!(exit_code("exit status: 127"), Some(127));
        assert_eq!(exit_code("exit status 3"), Some(3));
        assert_eq!(exit_code("exited with code 1"), Some(1));
        assert_eq!(exit_code("signal: 9 (SIGKILL)"), None);
        assert_eq!(
            StartFailure::of_exit("exit status: 127"),
            StartFailure::CommandNotFound
        );
        assert_eq!(
            StartFailure::of_exit("exit status: 1"),
            StartFailure::ExitedEarly
        );
    }

    #[test]
    fn launch_errors_are_classified() {
        assert_eq!(
            StartFailure::of_launch_error(
                "the sandbox could not be started: command `x` not found on the sandbox's PATH (/bin)"
            ),
            StartFailure::CommandNotFound
        );
        assert_eq!(
            StartFailure::of_launch_error("the image a:b is not on the Docker host; pull it"),
            StartFailure::ImageMissing
        );
        assert_eq!(
            StartFailure::of_launch_error("no free port"),
            StartFailure::RuntimeError
        );
        let m = launch_failed(
            PROCESS_PRESET_ID,
            "command `x` not found on the sandbox's PATH",
        );
        assert!(m.ends_with("set --agent-server-command"), "{m}");
        let m = launch_failed("mine", "command `x` not found on the sandbox's PATH");
        assert!(!m.contains("--agent-server-command"), "{m}");
    }

    #[test]
    fn messages_name_the_exit_the_command_and_the_flag_and_stay_bounded() {
        let command = vec![
            "python3".to_owned(),
            "-m".into(),
            "openhands.agent_server".into(),
        ];
        let log = "x".repeat(5000) + "\npyenv: not found";
        let m = exited_during_start(PROCESS_PRESET_ID, &command, "exit status: 127", Some(&log));
        assert!(
            m.starts_with(
                "the agent server exited with status 127 before it was ready \
                 (`python3 -m openhands.agent_server`): the command, or a program it runs, was \
                 not found; install the OpenHands agent server where the sandbox finds it, or \
                 set --agent-server-command; last lines of its log:\n…"
            ),
            "{m}"
        );
        assert!(m.ends_with("pyenv: not found"), "{m}");
        assert!(m.len() <= STATUS_MESSAGE_MAX_BYTES, "{}", m.len());
        let long = "é".repeat(2000);
        let b = bounded(&long);
        assert!(b.len() <= STATUS_MESSAGE_MAX_BYTES && b.ends_with('…'));
    }

    #[test]
    fn log_tails_keep_the_last_lines_and_hide_secrets() {
        let log = (0..20)
            .map(|i| format!("line {i} sbs_secretsecretsecret"))
            .collect::<Vec<_>>()
            .join("\n");
        let tail = log_tail_redacted(&log, &["sbs_secretsecretsecret".to_owned()]);
        assert_eq!(tail.lines().count(), STATUS_LOG_LINES);
        assert!(
            tail.starts_with("line 12 ") && !tail.contains("secretsecret"),
            "{tail}"
        );
    }
}

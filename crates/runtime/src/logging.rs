//! The server's log: tracing's events on stderr, as human-readable lines or one JSON object
//! per line (`--log-format`), filtered by `SWITCHBOARD_LOG`, else `RUST_LOG`, else `info`;
//! coloured only on a terminal.

/// The variable naming the log filter (tracing's `EnvFilter` syntax, e.g. `info,switchboard_api=debug`).
pub const LOG_FILTER_ENV: &str = "SWITCHBOARD_LOG";

/// Installs the log for the whole process: JSON lines (with the current span, without the
/// span list) when `json`, else text lines. Call once, before anything logs.
///
/// # Panics
/// A global subscriber is installed already.
pub fn init(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env(LOG_FILTER_ENV)
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if json {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init();
    } else {
        builder.init();
    }
}

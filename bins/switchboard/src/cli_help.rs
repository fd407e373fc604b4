//! How the command line's help reads: the headings `serve --help` groups its flags under, and
//! the one-line summaries `-h` shows where a flag's help is long (`--help` keeps it whole).

use clap::Command;

/// The headings of `serve --help` (clap's `help_heading` on each flag). Every flag of `serve`
/// has one; the unit tests of this file check that none is missing and that each is one of
/// `heading::ALL`.
pub mod heading {
    /// Where Switchboard listens and how clients reach it.
    pub const SERVER: &str = "Server";
    /// The database, the data directory and what the database may hold.
    pub const STORAGE: &str = "Storage";
    /// Signing people in through an OpenID provider, and service keys.
    pub const SIGN_IN: &str = "Sign-in";
    /// What every sandbox runtime shares: specs, quotas, repositories, resources, egress.
    pub const SANDBOXES: &str = "Sandboxes (all runtimes)";
    /// The sandbox URLs the API shows and the sandbox proxy.
    pub const SANDBOX_URLS: &str = "Sandbox URLs and proxy";
    /// Sandboxes run as local processes (`--sandbox-runtime process`).
    pub const PROCESS: &str = "Process runtime";
    /// Sandboxes run as Docker containers (`--sandbox-runtime docker`).
    pub const DOCKER: &str = "Docker runtime";
    /// Sandboxes run as Kubernetes pods (`--sandbox-runtime kubernetes`).
    pub const KUBERNETES: &str = "Kubernetes runtime";
    /// Sandboxes started ahead of demand.
    pub const WARM_POOL: &str = "Warm pool";
    /// The LLM of started conversations, the models offered, skills.
    pub const LLM: &str = "LLM";
    /// How conversation starts run.
    pub const STARTS: &str = "Conversation starts";
    /// Request, socket, key and rate limits.
    pub const LIMITS: &str = "Limits";
    /// Logs and metrics.
    pub const OBSERVABILITY: &str = "Observability";

    /// Every heading.
    #[cfg(test)]
    pub const ALL: &[&str] = &[
        SERVER,
        STORAGE,
        SIGN_IN,
        SANDBOXES,
        SANDBOX_URLS,
        PROCESS,
        DOCKER,
        KUBERNETES,
        WARM_POOL,
        LLM,
        STARTS,
        LIMITS,
        OBSERVABILITY,
    ];
}

/// `cmd` and all its subcommands with `-h` made short: a flag whose help text is longer than
/// its summary ([`summary`]) shows the summary under `-h` and the whole text under `--help`.
/// A flag with a long help of its own is left as it is.
pub fn short_help(cmd: Command) -> Command {
    cmd.mut_args(|arg| {
        if arg.get_long_help().is_some() {
            return arg;
        }
        let Some(full) = arg.get_help().map(ToString::to_string) else {
            return arg;
        };
        let short = summary(&full);
        if short.trim_end_matches('.') == full.trim_end_matches('.') {
            return arg;
        }
        arg.help(short).long_help(full)
    })
    .mut_subcommands(short_help)
}

/// The first clause of a help text: up to its first `. `, `: ` or `; ` outside parentheses,
/// brackets and backticks, without the parenthesized and bracketed asides and without a
/// final full stop (as clap shows one-sentence help). "e.g." and "i.e." do not end a clause.
pub fn summary(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut code = false;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '`' if depth == 0 => {
                code = !code;
                out.push(c);
            }
            _ if code => out.push(c),
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            '.' | ':' | ';' if next.is_none_or(char::is_whitespace) => {
                let abbreviation = c == '.' && (out.ends_with("e.g") || out.ends_with("i.e"));
                if !abbreviation {
                    break;
                }
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    // Asides leave doubled or dangling spaces: "a (b) c" -> "a c", "a (b), c" -> "a, c".
    let words: Vec<&str> = out.split_whitespace().collect();
    let mut short = String::new();
    for word in words {
        if !short.is_empty() && !matches!(word, "," | ";" | ".") {
            short.push(' ');
        }
        short.push_str(word);
    }
    short.trim_end_matches([',', ' ']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::{heading, summary};

    #[test]
    fn every_flag_of_serve_is_under_a_known_heading() {
        let mut cmd = crate::config_file::command();
        cmd.build();
        let serve = cmd.find_subcommand("serve").unwrap();
        let flags: Vec<_> = serve
            .get_arguments()
            .filter(|a| {
                a.get_long()
                    .is_some_and(|l| !matches!(l, "help" | "version" | "config"))
            })
            .collect();
        let outside: Vec<_> = flags
            .iter()
            .filter(|a| {
                a.get_help_heading()
                    .is_none_or(|h| !heading::ALL.contains(&h))
            })
            .map(|a| (a.get_long(), a.get_help_heading()))
            .collect();
        assert!(
            outside.is_empty(),
            "flags under no known heading: {outside:?}"
        );
        for h in heading::ALL {
            assert!(
                flags.iter().any(|a| a.get_help_heading() == Some(h)),
                "no flag under {h}"
            );
        }
    }

    #[test]
    fn dash_h_is_short_and_dash_dash_help_is_whole() {
        let mut cmd = crate::config_file::command();
        let mut serve = cmd.find_subcommand_mut("serve").unwrap().clone();
        let short = serve.render_help().to_string();
        let long = serve.render_long_help().to_string();
        assert!(
            short.lines().count() * 2 < long.lines().count(),
            "-h is at most half of --help"
        );
        assert!(
            short.contains("Kubernetes runtime:") && short.contains("Sign-in:"),
            "{short}"
        );
        let flag_lines = short.lines().filter(|l| l.trim_start().starts_with("--"));
        let widest = flag_lines.map(str::len).max().unwrap();
        assert!(widest < 400, "a -h line of {widest} characters");
        assert!(
            long.contains("port 0 picks a free port"),
            "--help keeps the whole text"
        );
    }

    #[test]
    fn a_summary_is_the_first_clause_without_its_asides() {
        assert_eq!(
            summary("Address to listen on (port 0 picks a free port; the address is printed)."),
            "Address to listen on"
        );
        assert_eq!(
            summary("Database URL: postgres://… or sqlite://PATH (default: SQLite)."),
            "Database URL"
        );
        assert_eq!(
            summary(
                "Requests per second per credential (API key, or a key), burst the same; over it 429. 0 turns it off."
            ),
            "Requests per second per credential, burst the same"
        );
        assert_eq!(
            summary(
                "CPU each pod requests (what the scheduler reserves), e.g. 250m [default: none]."
            ),
            "CPU each pod requests, e.g. 250m"
        );
        assert_eq!(
            summary("Seconds .openhands/setup.sh may run during a start."),
            "Seconds .openhands/setup.sh may run during a start"
        );
        // Backticks protect what they quote, colons and parentheses included.
        assert_eq!(
            summary("Served at `http://x:1/(a)`: then more."),
            "Served at `http://x:1/(a)`"
        );
        assert_eq!(summary("Log format."), "Log format");
    }
}

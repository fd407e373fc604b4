//! How a clap command line's help reads: `-h` shows a one-line summary of each flag whose
//! help text is long, and `--help` the whole text.

use clap::Command;

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
    use super::summary;

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

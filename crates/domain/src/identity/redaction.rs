//! Masking secrets in text that leaves Switchboard: a start task's `detail` and the log line
//! of a failed start (issue 24 items 1 and 2).
//!
//! Text is redacted whole, before anything shortens it ([`shorten`] comes after): a cut can
//! then never leave the start of a secret that an exact match would miss. Within the text,
//! for each secret of at least [`MIN_SECRET_CHARS`] characters, every occurrence is masked, in
//! its plain and its JSON-escaped form; for a secret of at least [`MIN_FRAGMENT_CHARS`], so is
//! every run of that many characters or more that is part of it (the secret cut by someone
//! else, e.g. an agent server that shortened its own answer); and a part of at least
//! [`MIN_SECRET_CHARS`] characters at a cut edge of the text (a secret's start ending the
//! text, its end beginning it). The credentials of any URL (`scheme://user:password@host`,
//! `scheme://token@host`, and the values of its query and fragment parameters whose name looks
//! secret: [`mask_url_secrets`]) are masked too.

use std::collections::HashSet;
use std::sync::OnceLock;

/// What replaces a secret.
pub const MASK: &str = "**********";
/// Secrets shorter than this are not looked for (masking two or three characters everywhere
/// would garble text and protect nothing).
pub const MIN_SECRET_CHARS: usize = 4;
/// Runs of this many characters of a secret, or more, are masked wherever they appear.
pub const MIN_FRAGMENT_CHARS: usize = 8;

/// `text` with every secret of `secrets`, every run of [`MIN_FRAGMENT_CHARS`] or more of
/// their characters, their parts at the text's cut edges, and the credentials of any URL
/// ([`mask_url_secrets`]) replaced by [`MASK`]. Each maximal masked stretch becomes one mask.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut masked = vec![false; chars.len()];
    for secret in secrets {
        let plain: Vec<char> = secret.chars().collect();
        if plain.len() < MIN_SECRET_CHARS {
            continue;
        }
        let escaped: Vec<char> = json_escaped(secret).chars().collect();
        for form in [&plain, &escaped] {
            mark_occurrences(&chars, form, &mut masked);
            mark_fragments(&chars, form, &mut masked);
            mark_edges(&chars, form, &mut masked);
        }
    }
    let joined = join_masked(&chars, &masked);
    mask_url_secrets(&joined)
}

/// `text` with the user part of every URL (`scheme://user:password@`, `scheme://token@`)
/// replaced by [`MASK`]: `https://**********@host/path`.
pub fn mask_url_credentials(text: &str) -> String {
    static USERINFO: OnceLock<regex::Regex> = OnceLock::new();
    let re = USERINFO.get_or_init(|| {
        regex::Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@").expect("a valid pattern")
    });
    re.replace_all(text, format!("${{1}}{MASK}@")).into_owned()
}

/// The words that make a name look secret (issue 38): a query parameter, a command-line flag
/// or a setting whose name contains one of them, in any case, holds a credential.
pub const SECRET_NAME_WORDS: [&str; 10] = [
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "auth",
    "credential",
    "signature",
    "sig",
    "session",
];

/// Whether `name` looks like the name of a credential: it contains, in any case, one of
/// [`SECRET_NAME_WORDS`] (`apikey`, `access_token`, `X-Api-Key`, `--auth-header`, `sig`).
pub fn looks_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAME_WORDS.iter().any(|w| lower.contains(w))
}

/// `text` with the credentials of every URL in it masked: the user part of its authority
/// ([`mask_url_credentials`]) and the value of each query or fragment parameter whose name
/// [`looks_secret`] (`https://**********@host/sse?apikey=**********&region=eu`). Scheme,
/// host, path and the other parameters are kept, so a reader still sees which server it is.
pub fn mask_url_secrets(text: &str) -> String {
    static URL: OnceLock<regex::Regex> = OnceLock::new();
    let re = URL.get_or_init(|| {
        regex::Regex::new(r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\\`]+"#).expect("a valid pattern")
    });
    let text = mask_url_credentials(text);
    re.replace_all(&text, |c: &regex::Captures<'_>| mask_url_parameters(&c[0]))
        .into_owned()
}

/// One URL with the values of its secret-looking query and fragment parameters masked.
fn mask_url_parameters(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let mut out = match before_fragment.split_once('?') {
        Some((base, query)) => format!("{base}?{}", mask_parameters(query)),
        None => before_fragment.to_owned(),
    };
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&mask_parameters(f));
    }
    out
}

/// `a=1&apikey=2` with the value of each parameter whose name [`looks_secret`] masked.
fn mask_parameters(params: &str) -> String {
    params
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((name, value)) if !value.is_empty() && looks_secret(name) => {
                format!("{name}={MASK}")
            }
            _ => p.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The user part of a URL's authority (`user:password` of `https://user:password@host/…`),
/// when it has one: a credential, to be masked wherever it appears.
pub fn url_credentials(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    (!userinfo.is_empty()).then_some(userinfo)
}

/// At most `max_chars` characters of `text`, with `…` in place of the rest. Redact first.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A secret as it appears inside a JSON string (quotes, backslashes and control characters
/// escaped), which is how an agent server's error echoes it.
fn json_escaped(secret: &str) -> String {
    let quoted = serde_json::to_string(secret).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(secret)
        .to_owned()
}

fn mark(masked: &mut [bool], from: usize, len: usize) {
    for m in &mut masked[from..from + len] {
        *m = true;
    }
}

/// Every occurrence of `secret`.
fn mark_occurrences(text: &[char], secret: &[char], masked: &mut [bool]) {
    if secret.len() > text.len() {
        return;
    }
    for at in 0..=text.len() - secret.len() {
        if text[at..at + secret.len()] == *secret {
            mark(masked, at, secret.len());
        }
    }
}

/// Every run of [`MIN_FRAGMENT_CHARS`] characters that is part of `secret` (overlapping runs
/// join, so a longer part is masked whole).
fn mark_fragments(text: &[char], secret: &[char], masked: &mut [bool]) {
    let n = MIN_FRAGMENT_CHARS;
    if secret.len() < n || text.len() < n {
        return;
    }
    let windows: HashSet<&[char]> = secret.windows(n).collect();
    for at in 0..=text.len() - n {
        if windows.contains(&text[at..at + n]) {
            mark(masked, at, n);
        }
    }
}

/// A start of `secret` ending the text, or an end of it beginning the text, of at least
/// [`MIN_SECRET_CHARS`] characters: a secret cut where the text was cut.
fn mark_edges(text: &[char], secret: &[char], masked: &mut [bool]) {
    let longest = secret.len().min(text.len());
    for len in (MIN_SECRET_CHARS..=longest).rev() {
        if text[text.len() - len..] == secret[..len] {
            mark(masked, text.len() - len, len);
            break;
        }
    }
    for len in (MIN_SECRET_CHARS..=longest).rev() {
        if text[..len] == secret[secret.len() - len..] {
            mark(masked, 0, len);
            break;
        }
    }
}

/// The text with each maximal masked stretch replaced by one [`MASK`].
fn join_masked(text: &[char], masked: &[bool]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_mask = false;
    for (c, m) in text.iter().zip(masked) {
        match (m, in_mask) {
            (true, false) => out.push_str(MASK),
            (true, true) => {}
            (false, _) => out.push(*c),
        }
        in_mask = *m;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "ghp_R8vQ2mXk7LpZ4nWc9tYb3HdJ6sFa1GeUo0Ii";

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn secrets_and_url_credentials_are_masked() {
        let out = redact(
            "clone https://bob:tok123@git.example/x failed; key sk-live-9 seen",
            &s(&["sk-live-9", "ab"]),
        );
        assert_eq!(
            out,
            "clone https://**********@git.example/x failed; key ********** seen"
        );
    }

    #[test]
    fn any_run_of_eight_characters_of_a_secret_is_masked() {
        for (from, to) in [(0, 8), (0, 39), (5, 13), (10, 30), (32, 40), (1, 40)] {
            let part = &SECRET[from..to];
            let out = redact(&format!("input: \"{part}\" end"), &s(&[SECRET]));
            assert_eq!(out, "input: \"**********\" end", "{from}..{to}");
        }
        // Seven characters in the middle of the text are left alone.
        let out = redact("x ghp_R8v y", &s(&[SECRET]));
        assert_eq!(out, "x ghp_R8v y");
    }

    #[test]
    fn a_secret_cut_at_either_edge_is_masked() {
        assert_eq!(redact("detail: ghp_R", &s(&[SECRET])), "detail: **********");
        assert_eq!(
            redact("o0Ii and more", &s(&[SECRET])),
            "********** and more"
        );
        assert_eq!(redact("detail: ghp", &s(&[SECRET])), "detail: ghp");
    }

    #[test]
    fn a_json_escaped_secret_is_masked() {
        let secret = r#"pa"ss\word-123"#;
        let text = serde_json::json!({ "input": secret }).to_string();
        let out = redact(&text, &s(&[secret]));
        assert_eq!(out, r#"{"input":"**********"}"#);
    }

    #[test]
    fn redacting_then_shortening_never_shows_a_secret() {
        for end in 190..215 {
            let pad = "x".repeat(end - SECRET.len());
            let text = format!("{pad}{SECRET} tail");
            let out = shorten(&redact(&text, &s(&[SECRET])), 200);
            for w in SECRET.as_bytes().windows(8) {
                assert!(
                    !out.contains(std::str::from_utf8(w).unwrap()),
                    "{end}: {out}"
                );
            }
        }
    }

    #[test]
    fn secret_url_parameters_are_masked() {
        assert_eq!(
            mask_url_secrets(
                "see https://u:p@mcp.example/sse?apikey=abc&region=eu#access_token=t&x=1"
            ),
            "see https://**********@mcp.example/sse?apikey=**********&region=eu#access_token=**********&x=1"
        );
        assert_eq!(
            mask_url_secrets("https://h/p?Token=1&SIG=2&keep=3&api_key=&plain"),
            "https://h/p?Token=**********&SIG=**********&keep=3&api_key=&plain"
        );
        assert_eq!(mask_url_secrets("no url ?token=1"), "no url ?token=1");
        // A URL inside JSON text stops at its quote and an escaping backslash.
        assert_eq!(
            mask_url_secrets(r#"{"url":"https://h/x?key=v\"q\""}"#),
            r#"{"url":"https://h/x?key=**********\"q\""}"#
        );
        assert_eq!(
            redact("GET https://h/x?session=abcdef failed", &[]),
            "GET https://h/x?session=********** failed"
        );
        assert!(looks_secret("X-Api-Key") && looks_secret("PASSWD") && !looks_secret("region"));
    }

    #[test]
    fn url_credentials_are_found() {
        assert_eq!(url_credentials("https://u:p@h/r"), Some("u:p"));
        assert_eq!(url_credentials("https://tok@h:1/r?x=a@b"), Some("tok"));
        assert_eq!(url_credentials("https://h/r@x"), None);
        assert_eq!(url_credentials("git@github.com:a/b"), None);
        assert_eq!(url_credentials("/local/path"), None);
        assert_eq!(shorten("abcdef", 3), "abc…");
        assert_eq!(shorten("abc", 3), "abc");
    }
}

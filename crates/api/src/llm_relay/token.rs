//! Where a pass-through request carries its token ([`KeyPlacement`]): the header or query
//! parameter the agent's LLM client put its key in for its provider.

use actix_web::HttpRequest;
use switchboard_domain::llm_relay::{KeyPlacement, TOKEN_PREFIX};

/// The headers a key travels in, and their placement, in the order they are looked at.
const HEADERS: [(&str, KeyPlacement); 4] = [
    ("authorization", KeyPlacement::Bearer),
    ("x-api-key", KeyPlacement::XApiKey),
    ("api-key", KeyPlacement::ApiKey),
    ("x-goog-api-key", KeyPlacement::XGoogApiKey),
];

/// The query parameter Gemini's REST API takes its key in.
pub const QUERY_KEY: &str = "key";

/// The token a request presents, and where.
#[derive(Clone)]
pub struct Presented {
    /// The token (its value, `Bearer ` stripped).
    pub token: String,
    /// Where it was, so the real key goes there.
    pub placement: KeyPlacement,
}

impl Presented {
    /// The request's token: the first place holding a pass-through token
    /// ([`TOKEN_PREFIX`]), else the first holding anything (refused later as unknown); `None`
    /// when the request carries no key at all.
    pub fn of(req: &HttpRequest) -> Option<Presented> {
        let mut found: Vec<Presented> = Vec::new();
        for (name, placement) in HEADERS {
            if let Some(v) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
                let v = match placement {
                    KeyPlacement::Bearer => match strip_bearer(v) {
                        Some(t) => t,
                        None => continue,
                    },
                    _ => v.trim(),
                };
                found.push(Presented {
                    token: v.to_owned(),
                    placement,
                });
            }
        }
        if let Some(v) = query_value(req.query_string(), QUERY_KEY) {
            found.push(Presented {
                token: v,
                placement: KeyPlacement::QueryKey,
            });
        }
        let first = found.first().cloned();
        found
            .into_iter()
            .find(|p| p.token.starts_with(TOKEN_PREFIX))
            .or(first)
    }
}

/// `Bearer <token>` (any case of the scheme), the token trimmed.
fn strip_bearer(v: &str) -> Option<&str> {
    let (scheme, rest) = v.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
}

/// The first value of query parameter `name` (not percent-decoded: a token is base62).
fn query_value(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// `query` with parameter `name` set to `value` (every former value of it dropped).
pub fn with_query_value(query: &str, name: &str, value: &str) -> String {
    let mut kept: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| p.split('=').next() != Some(name))
        .map(str::to_owned)
        .collect();
    kept.push(format!("{name}={value}"));
    kept.join("&")
}

/// `query` without parameter `name`.
pub fn without_query_value(query: &str, name: &str) -> String {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| p.split('=').next() != Some(name))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn the_token_is_found_where_the_client_put_it() {
        let req = TestRequest::default()
            .insert_header(("Authorization", "Bearer sbl_abc"))
            .to_http_request();
        let p = Presented::of(&req).unwrap();
        assert_eq!(
            (p.token.as_str(), p.placement),
            ("sbl_abc", KeyPlacement::Bearer)
        );
        // Anthropic's client sends the key as x-api-key (and may send an unrelated bearer).
        let req = TestRequest::default()
            .insert_header(("Authorization", "Bearer other"))
            .insert_header(("x-api-key", "sbl_xyz"))
            .to_http_request();
        let p = Presented::of(&req).unwrap();
        assert_eq!(
            (p.token.as_str(), p.placement),
            ("sbl_xyz", KeyPlacement::XApiKey)
        );
        let req = TestRequest::with_uri("/x?alt=sse&key=sbl_q").to_http_request();
        let p = Presented::of(&req).unwrap();
        assert_eq!(
            (p.token.as_str(), p.placement),
            ("sbl_q", KeyPlacement::QueryKey)
        );
        assert!(Presented::of(&TestRequest::default().to_http_request()).is_none());
        let req = TestRequest::default()
            .insert_header(("Authorization", "Basic abc"))
            .to_http_request();
        assert!(Presented::of(&req).is_none());
        // Another scheme in Authorization does not hide a token elsewhere.
        let req = TestRequest::default()
            .insert_header(("Authorization", "Basic abc"))
            .insert_header(("x-api-key", "sbl_k"))
            .to_http_request();
        assert_eq!(Presented::of(&req).unwrap().token, "sbl_k");
    }

    #[test]
    fn the_query_key_is_replaced_not_added() {
        assert_eq!(
            with_query_value("alt=sse&key=sbl_q", "key", "real"),
            "alt=sse&key=real"
        );
        assert_eq!(without_query_value("key=sbl_q&alt=sse", "key"), "alt=sse");
        assert_eq!(without_query_value("", "key"), "");
    }
}

//! Every identity case (a key in each form, bound or not, `X-Org-Id`, another organization's
//! member) with what it must answer, and the request and answer checks the tests share.

use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use switchboard_domain::OrgId;
use switchboard_testkit::Backend;

use crate::common::{SETTINGS, TestApp, detail, status_json};

pub const NOT_MEMBER: &str = "User is not a member of this organization";
pub const KEY_ELSEWHERE: &str = "API key is not authorized for this organization";
pub const MISSING_EDIT: &str = "Missing required permission: edit_org_settings";

/// How a request presents its key.
#[derive(Clone, Copy)]
pub enum Cred<'a> {
    /// No credentials at all.
    Nothing,
    /// `X-Access-Token: <key>`.
    Token(&'a str),
    /// `Authorization: Bearer <key>`.
    Bearer(&'a str),
    /// Both headers.
    Both { token: &'a str, bearer: &'a str },
}

/// What a case must answer.
#[derive(Clone)]
pub enum Expect {
    /// 200, acting on this organization.
    Ok(OrgId),
    /// This status and body.
    Err(u16, Value),
}

pub struct Case<'a> {
    pub name: &'static str,
    pub cred: Cred<'a>,
    pub org_header: Option<String>,
    pub expect: Expect,
}

pub fn request(
    app: &TestApp,
    method: Method,
    cred: Cred<'_>,
    org_header: Option<&str>,
) -> RequestBuilder {
    let mut r = app.req(method, SETTINGS, None);
    match cred {
        Cred::Nothing => {}
        Cred::Token(k) => r = r.header("X-Access-Token", k),
        Cred::Bearer(k) => r = r.header("Authorization", format!("Bearer {k}")),
        Cred::Both { token, bearer } => {
            r = r
                .header("X-Access-Token", token)
                .header("Authorization", format!("Bearer {bearer}"));
        }
    }
    if let Some(o) = org_header {
        r = r.header("X-Org-Id", o);
    }
    r
}

/// Asserts status and body of an error answer; a 401 must carry `WWW-Authenticate`.
pub async fn expect_error(backend: Backend, what: &str, resp: Response, status: u16, body: &Value) {
    let www = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let (got, got_body) = status_json(resp).await;
    assert_eq!((got, &got_body), (status, body), "{backend}: {what}");
    if status == 401 {
        assert_eq!(www.as_deref(), Some("Bearer"), "{backend}: {what}");
    } else {
        assert_eq!(www, None, "{backend}: {what}");
    }
}

/// Every identity case, for an app whose organization A has budget 7 and B has none.
pub fn cases(app: &TestApp) -> Vec<Case<'_>> {
    let a = app.org.to_string();
    let b = app.other_org.to_string();
    let nowhere = uuid::Uuid::new_v4().to_string();
    let err = |status: u16, msg: &str| Expect::Err(status, detail(msg));
    let case = |name, cred, org_header: Option<&str>, expect| Case {
        name,
        cred,
        org_header: org_header.map(str::to_owned),
        expect,
    };
    vec![
        case(
            "owner",
            Cred::Token(&app.owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "admin",
            Cred::Token(&app.admin.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "member",
            Cred::Token(&app.member.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "member naming its org",
            Cred::Token(&app.member.key),
            Some(&a),
            Expect::Ok(app.org),
        ),
        case(
            "owner naming its org as 32 hex digits",
            Cred::Token(&app.owner.key),
            Some(&app.org.0.simple().to_string()),
            Expect::Ok(app.org),
        ),
        case(
            "owner naming its org in upper case",
            Cred::Token(&app.owner.key),
            Some(&a.to_uppercase()),
            Expect::Ok(app.org),
        ),
        case(
            "non-member, own current org",
            Cred::Token(&app.non_member.key),
            None,
            Expect::Ok(app.other_org),
        ),
        case(
            "non-member naming its own org",
            Cred::Token(&app.non_member.key),
            Some(&b),
            Expect::Ok(app.other_org),
        ),
        case(
            "non-member naming org A",
            Cred::Token(&app.non_member.key),
            Some(&a),
            err(403, NOT_MEMBER),
        ),
        case(
            "non-member naming an org that does not exist",
            Cred::Token(&app.non_member.key),
            Some(&nowhere),
            err(403, NOT_MEMBER),
        ),
        case(
            "unbound key naming an org of which the user is no member",
            Cred::Token(&app.owner.key),
            Some(&b),
            err(403, NOT_MEMBER),
        ),
        case(
            "bound key, no header",
            Cred::Token(&app.bound_owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "bound key, matching header",
            Cred::Token(&app.bound_owner.key),
            Some(&a),
            Expect::Ok(app.org),
        ),
        case(
            "bound key, other org",
            Cred::Token(&app.bound_owner.key),
            Some(&b),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "bound key, unknown org",
            Cred::Token(&app.bound_owner.key),
            Some(&nowhere),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "expired key",
            Cred::Token(&app.expired.key),
            None,
            err(401, "API key expired"),
        ),
        case(
            "revoked key",
            Cred::Token(&app.revoked.key),
            None,
            err(401, "API key revoked"),
        ),
        case("no key", Cred::Nothing, None, err(401, "Not authenticated")),
        case(
            "no key, with a header",
            Cred::Nothing,
            Some(&a),
            err(401, "Not authenticated"),
        ),
        case(
            "garbage key",
            Cred::Token("sb_garbage000000000000000000000000000000000000"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "not even a prefix",
            Cred::Token("hello"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "bearer owner",
            Cred::Bearer(&app.owner.key),
            None,
            Expect::Ok(app.org),
        ),
        case(
            "bearer non-member naming org A",
            Cred::Bearer(&app.non_member.key),
            Some(&a),
            err(403, NOT_MEMBER),
        ),
        case(
            "bearer bound key, other org",
            Cred::Bearer(&app.bound_owner.key),
            Some(&b),
            err(403, KEY_ELSEWHERE),
        ),
        case(
            "bearer expired",
            Cred::Bearer(&app.expired.key),
            None,
            err(401, "API key expired"),
        ),
        case(
            "bearer revoked",
            Cred::Bearer(&app.revoked.key),
            None,
            err(401, "API key revoked"),
        ),
        case(
            "bearer garbage",
            Cred::Bearer("nope"),
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "invalid X-Access-Token wins over a valid bearer",
            Cred::Both {
                token: "sb_invalid",
                bearer: &app.owner.key,
            },
            None,
            err(401, "Invalid API key"),
        ),
        case(
            "revoked X-Access-Token wins over a valid bearer",
            Cred::Both {
                token: &app.revoked.key,
                bearer: &app.owner.key,
            },
            None,
            err(401, "API key revoked"),
        ),
        case(
            "valid X-Access-Token wins over an invalid bearer",
            Cred::Both {
                token: &app.member.key,
                bearer: "sb_invalid",
            },
            None,
            Expect::Ok(app.org),
        ),
        case(
            "X-Access-Token of B's user wins over A's owner as bearer",
            Cred::Both {
                token: &app.non_member.key,
                bearer: &app.owner.key,
            },
            None,
            Expect::Ok(app.other_org),
        ),
    ]
}

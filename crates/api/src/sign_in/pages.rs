//! The sign-in pages (issue 34), as HTML: the account page (organizations, API keys), the
//! device verification page and the page for a refusal. Every value shown is escaped; every
//! form carries the session's CSRF token.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
use switchboard_domain::DomainError;
use switchboard_domain::identity::sign_in::{DeviceGrant, DeviceStatus};
use switchboard_domain::services::Account;
use switchboard_domain::time_input::format_rfc3339_micros;

use crate::error::ApiError;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}\
.key{font-family:monospace;background:#f3f3f3;padding:.6rem;word-break:break-all}.note{background:#fff7d6;padding:.6rem}\
form.inline{display:inline}button{cursor:pointer}";

/// A whole page.
fn page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header((
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ))
        .body(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{} · Switchboard</title>\
             <style>{STYLE}</style></head><body>{body}</body></html>",
            text(title)
        ))
}

/// A refusal or failure, with the way back.
pub fn message(status: StatusCode, title: &str, detail: &str) -> HttpResponse {
    page(
        status,
        title,
        &format!(
            "<h1>{}</h1><p>{}</p><p><a href=\"/login\">Sign in again</a></p>",
            text(title),
            text(detail)
        ),
    )
}

/// A hidden CSRF field.
fn csrf_field(csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        attr(csrf)
    )
}

/// The account page; `new_key` is a key just created, shown this once.
pub fn account(account: &Account, csrf: &str, new_key: Option<(&str, &str)>) -> HttpResponse {
    let user = &account.user;
    let mut body = format!(
        "<h1>Switchboard</h1><p>Signed in as <strong>{}</strong>.</p>\
         <form class=\"inline\" method=\"post\" action=\"/logout\">{}<button>Sign out</button></form>",
        text(&user.email),
        csrf_field(csrf)
    );
    body.push_str("<h2>Organizations</h2>");
    let orgs: Vec<_> = account
        .memberships
        .iter()
        .filter_map(|m| m.role.map(|r| (m, r)))
        .collect();
    if orgs.is_empty() {
        body.push_str(
            "<p class=\"note\">You are not a member of any organization yet. An owner or admin of an organization adds you \
             (or the operator, with <code>switchboard members add</code>); no sign-in rule of this server \
             made you one. Keys you create act once you are a member.</p>",
        );
    } else {
        body.push_str("<table><tr><th>Organization</th><th>Role</th><th>Id</th></tr>");
        for (m, role) in orgs {
            let current = if user.current_org_id == Some(m.org.id) {
                " (current)"
            } else {
                ""
            };
            body.push_str(&format!(
                "<tr><td>{}{current}</td><td>{}</td><td><code>{}</code></td></tr>",
                text(&m.org.name),
                role.as_str(),
                m.org.id
            ));
        }
        body.push_str("</table>");
    }
    body.push_str("<h2>API keys</h2>");
    if let Some((name, secret)) = new_key {
        body.push_str(&format!(
            "<p class=\"note\">Key <strong>{}</strong> created. Copy it now: it is not shown again.</p>\
             <p class=\"key\" id=\"new-key\">{}</p>",
            text(name),
            text(secret)
        ));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/account/keys\">{}<label>Name <input name=\"name\" required maxlength=\"255\"></label> \
         <button>Create a key</button></form>",
        csrf_field(csrf)
    ));
    body.push_str(
        "<table><tr><th>Name</th><th>Key</th><th>Created</th><th>Last used</th><th>State</th><th></th></tr>",
    );
    for k in &account.keys {
        let state = if k.revoked_at.is_some() {
            "revoked"
        } else {
            "active"
        };
        let revoke = if k.revoked_at.is_none() {
            format!(
                "<form class=\"inline\" method=\"post\" action=\"/account/keys/{}/revoke\">{}<button>Revoke</button></form>",
                k.id,
                csrf_field(csrf)
            )
        } else {
            String::new()
        };
        body.push_str(&format!(
            "<tr data-key-id=\"{}\"><td>{}</td><td><code>{}…</code></td><td>{}</td><td>{}</td><td>{state}</td><td>{revoke}</td></tr>",
            k.id,
            text(&k.name),
            text(&k.display_prefix),
            format_rfc3339_micros(k.created_at),
            k.last_used_at.map(format_rfc3339_micros).unwrap_or_default(),
        ));
    }
    body.push_str("</table><p>Use a key as <code>X-Access-Token</code> (or <code>Authorization: Bearer</code>), \
         in Agent Canvas, the OpenHands SDK and scripts. <code>openhands login --server-url</code> this \
         server makes one through the <a href=\"/device\">device page</a>.</p>");
    page(StatusCode::OK, "Account", &body)
}

/// The device page: the code to confirm, or a form to type one.
pub fn device(grant: Option<&DeviceGrant>, csrf: &str, typed: &str) -> HttpResponse {
    let body = match grant {
        None => format!(
            "<h1>Connect a device</h1><p>Type the code your terminal shows.</p>\
             <form method=\"get\" action=\"/device\"><input name=\"user_code\" value=\"{}\" required> <button>Continue</button></form>",
            attr(typed)
        ),
        Some(g) if g.status == DeviceStatus::Pending => format!(
            "<h1>Connect a device</h1><p>A device asked to sign in as you with the code</p>\
             <p class=\"key\">{}</p><p>Asked {} from {}. Approve it only if you started it: the device gets an API key of yours.</p>\
             <form class=\"inline\" method=\"post\" action=\"/device\">{}<input type=\"hidden\" name=\"user_code\" value=\"{}\">\
             <button name=\"decision\" value=\"approve\">Approve</button> <button name=\"decision\" value=\"deny\">Deny</button></form>",
            text(&g.user_code),
            format_rfc3339_micros(g.created_at),
            text(g.remote_addr.as_deref().unwrap_or("an unknown address")),
            csrf_field(csrf),
            attr(&g.user_code)
        ),
        Some(g) => format!(
            "<h1>Connect a device</h1><p>The code {} was decided already.</p>",
            text(&g.user_code)
        ),
    };
    page(StatusCode::OK, "Connect a device", &body)
}

/// After a decision on the device page.
pub fn device_decided(approved: bool) -> HttpResponse {
    let body = if approved {
        "<h1>Device connected</h1><p>Return to your terminal: it is signed in. The key it got is on your <a href=\"/account\">account page</a>.</p>"
    } else {
        "<h1>Device refused</h1><p>The code was denied; the device gets nothing.</p>"
    };
    page(StatusCode::OK, "Connect a device", body)
}

/// A form without the session or its token.
pub(super) fn forbidden_form() -> HttpResponse {
    message(
        StatusCode::FORBIDDEN,
        "Not signed in, or a stale form",
        "Sign in again and use the page's own forms.",
    )
}

/// A domain refusal as a page.
pub(super) fn refusal(e: ApiError) -> HttpResponse {
    match e {
        ApiError::Domain(DomainError::UserDisabled) => message(
            StatusCode::FORBIDDEN,
            "Your account is disabled",
            "An administrator disabled it; ask them.",
        ),
        ApiError::Domain(DomainError::Forbidden(t)) => {
            message(StatusCode::FORBIDDEN, "Sign-in refused", &t)
        }
        ApiError::Domain(DomainError::BadRequest(t)) => {
            message(StatusCode::BAD_REQUEST, "Sign-in failed", &t)
        }
        ApiError::Domain(DomainError::Conflict(t)) => message(StatusCode::CONFLICT, "Not done", &t),
        ApiError::Domain(DomainError::ApiKeyNotFound) => message(
            StatusCode::NOT_FOUND,
            "No such key",
            "It is not one of yours.",
        ),
        other => {
            tracing::error!(error = %other, "a sign-in page failed");
            message(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "Try again in a moment.",
            )
        }
    }
}

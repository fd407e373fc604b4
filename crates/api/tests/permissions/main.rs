//! Who may read and change organization app settings (`GET`/`POST /api/organizations/app`):
//! authentication (API.md, Identity), the effective organization (key binding, `X-Org-Id`,
//! current organization), the role table (reference §2.2) and the order of the checks
//! (reference §1.6: 401, then 403/404/422 of the organization, then the body, then the
//! marketplace gate).
//!
//! One file per topic: `cases.rs` (every identity case and how a request presents its key),
//! `matrix.rs` (the cases read and written, the fields by role), `order.rs` (the order of the
//! checks, an organization deleted).

mod cases;
mod matrix;
mod order;

use matrix::{fields_by_role, get_matrix, post_matrix};
use order::{order_of_checks, organization_deleted};

on_both_backends!(
    get_matrix,
    post_matrix,
    fields_by_role,
    order_of_checks,
    organization_deleted
);

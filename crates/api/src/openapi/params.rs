//! Schemas of query parameters shared by several operations, each stating every rule JSON
//! Schema can (issue 7: a request the document calls valid is never refused). Used inline in
//! the handlers' `#[utoipa::path(params(...))]`.

use switchboard_domain::conversations::app::{MAX_APP_CONVERSATION_PAGE, SortOrder as OrderedSort};
use switchboard_domain::events::MAX_PAGE_LIMIT;
use switchboard_domain::sandboxes::records::MAX_SANDBOX_PAGE;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};

use super::requests::{DATE_TIME_PATTERN, NO_NUL_PATTERN};

// Every search pages by the same bounds (spec §4.1, reference app-server §3.2 and §5.2), so
// one schema serves them all.
const _: () = assert!(MAX_PAGE_LIMIT == MAX_SANDBOX_PAGE);
const _: () = assert!(MAX_PAGE_LIMIT == MAX_APP_CONVERSATION_PAGE);

/// `limit` of every search: an integer from 1 to 100 ([`MAX_PAGE_LIMIT`]), by default 100.
pub(crate) struct PageLimit;

impl utoipa::PartialSchema for PageLimit {
    fn schema() -> RefOr<Schema> {
        limit_schema(MAX_PAGE_LIMIT)
    }
}

impl utoipa::ToSchema for PageLimit {}

/// A git ref to compare with: any text without NUL that does not start with `-` (the server
/// refuses one that does with 400: git would read it as an option).
pub(crate) struct GitRefParam;

impl utoipa::PartialSchema for GitRefParam {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(r"^([^-\x00][^\x00]*)?$"))
            .into()
    }
}

impl utoipa::ToSchema for GitRefParam {}

/// `limit` of an organization's members list (issue 34; OpenHands' default): 1 to 100, by
/// default 10.
pub(crate) struct MemberPageLimit;

impl utoipa::PartialSchema for MemberPageLimit {
    fn schema() -> RefOr<Schema> {
        limit_schema(10)
    }
}

/// A page's `limit`: an integer from 1 to [`MAX_PAGE_LIMIT`], by default `default`.
fn limit_schema(default: u32) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(MAX_PAGE_LIMIT))
        .default(Some(default.into()))
        .into()
}

impl utoipa::ToSchema for MemberPageLimit {}

/// The members list's `email` filter (issue 34): 1 to 255 characters without NUL.
pub(crate) struct EmailFilterParam;

impl utoipa::PartialSchema for EmailFilterParam {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(255))
            .pattern(Some(NO_NUL_PATTERN))
            .into()
    }
}

impl utoipa::ToSchema for EmailFilterParam {}

/// An instant filter (`timestamp__gte`, `created_at__lt`, …): the documented date-time
/// pattern ([`DATE_TIME_PATTERN`]; the server also takes dates and Unix seconds, as the
/// descriptions say). An empty value is a 422, so the pattern excludes it.
pub(crate) struct InstantParam;

impl utoipa::PartialSchema for InstantParam {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(DATE_TIME_PATTERN))
            .into()
    }
}

impl utoipa::ToSchema for InstantParam {}

/// A text filter compared with a column (`title__contains`): any text without NUL (a NUL is
/// a 422 `string_pattern_mismatch`, issue 7).
pub(crate) struct TextParam;

impl utoipa::PartialSchema for TextParam {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(NO_NUL_PATTERN))
            .into()
    }
}

impl utoipa::ToSchema for TextParam {}

/// `sort_order` of the app-conversation and start-task searches: `CREATED_AT`,
/// `CREATED_AT_DESC` (the default), `UPDATED_AT` or `UPDATED_AT_DESC` (reference app-server
/// §5.2).
pub(crate) struct OrderedSortName;

impl utoipa::PartialSchema for OrderedSortName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(OrderedSort::ALL.map(OrderedSort::as_str)))
            .default(Some(OrderedSort::default().as_str().into()))
            .into()
    }
}

impl utoipa::ToSchema for OrderedSortName {}

//! The search / count / batch-get trio, written once (issue 20 item 4). A resource read that
//! way (app conversations, start tasks, sandboxes, sandbox specs, a conversation's events)
//! implements [`Reads`] (and [`Counts`] when it answers a count) on a marker type in its
//! handler module; its handlers, each declared with its route and OpenAPI path, call
//! [`search`], [`count`] and [`get`], which hold the order every read follows: authentication
//! and the effective organization first (`Caller::run`), then the path, then the query (every
//! malformed value a 422, a batch over its [`Batch`](switchboard_domain::batch::Batch) a 400,
//! through `QueryPairs`), then the service, all in one blocking call.

use actix_web::web;
use switchboard_domain::OrgContext;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Caller, QueryPairs};

/// A resource read by search and batch get.
pub trait Reads: 'static {
    /// What the route's path names, judged after authentication: `()`, or the conversation
    /// of an event read.
    type Scope: Send + 'static;
    /// A search's parameters (a count's: its filters), read from the query.
    type Params: Send + 'static;
    /// A search's page, as the service answers it.
    type Page: Send + 'static;
    /// A batch get's answer, one entry per id asked, as the service answers it.
    type Found: Send + 'static;

    /// The scope from the route's path parameter (`""` for a route without one).
    ///
    /// # Errors
    /// A malformed path value (422).
    fn scope(path: &str) -> Result<Self::Scope, ApiError>;

    /// The parameters; with `paging` (a search) its order, cursor and limit too, else (a
    /// count) the filters alone.
    ///
    /// # Errors
    /// [`ApiError::Validation`] with every malformed value.
    fn params(query: &QueryPairs, paging: bool) -> Result<Self::Params, ApiError>;

    /// One page of the search.
    ///
    /// # Errors
    /// The service's.
    fn search(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        params: Self::Params,
    ) -> Result<Self::Page, ApiError>;

    /// The batch get of the ids the query names (the resource's parameter and `Batch`).
    ///
    /// # Errors
    /// Too many ids (400), a malformed one (422), the service's.
    fn get(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        query: &QueryPairs,
    ) -> Result<Self::Found, ApiError>;
}

/// A resource that also answers a count of what its search's filters match.
pub trait Counts: Reads {
    /// The count.
    ///
    /// # Errors
    /// The service's.
    fn count(
        s: &AppState,
        ctx: &OrgContext,
        scope: Self::Scope,
        params: Self::Params,
    ) -> Result<u64, ApiError>;
}

/// Authenticates, reads the scope from `path`, then runs `f` with it, in one blocking call.
async fn scoped<R: Reads, T: Send + 'static>(
    state: web::Data<AppState>,
    caller: Caller,
    path: String,
    f: impl FnOnce(&AppState, &OrgContext, R::Scope) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    caller
        .run(state, move |s, ctx| f(s, &ctx, R::scope(&path)?))
        .await
}

/// A search of `R`: the caller, the path (`""` without one), the query, the service.
///
/// # Errors
/// Authentication's, the path's, the query's and the service's.
pub async fn search<R: Reads>(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: String,
) -> Result<R::Page, ApiError> {
    scoped::<R, _>(state, caller, path, move |s, ctx, scope| {
        R::search(s, ctx, scope, R::params(&query, true)?)
    })
    .await
}

/// A count of `R`, read as [`search`] reads (paging parameters ignored).
///
/// # Errors
/// As [`search`].
pub async fn count<R: Counts>(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: String,
) -> Result<u64, ApiError> {
    scoped::<R, _>(state, caller, path, move |s, ctx, scope| {
        R::count(s, ctx, scope, R::params(&query, false)?)
    })
    .await
}

/// A batch get of `R`.
///
/// # Errors
/// As [`search`]; too many ids is a 400.
pub async fn get<R: Reads>(
    state: web::Data<AppState>,
    caller: Caller,
    query: QueryPairs,
    path: String,
) -> Result<R::Found, ApiError> {
    scoped::<R, _>(state, caller, path, move |s, ctx, scope| {
        R::get(s, ctx, scope, &query)
    })
    .await
}

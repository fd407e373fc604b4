//! The LLM pass-through's decisions (issue 38; [`crate::llm_relay`]; docs/API.md, "LLM
//! pass-through"): the route a start opens for a shared key, what a presented token opens
//! (and the budgets that refuse it), and what each forwarded request used.

use std::sync::Arc;

use time::{Date, OffsetDateTime};

use crate::error::DomainError;
use crate::identity::OrgContext;
use crate::identity::sealing::Sealer;
use crate::identity::secrets::random_secret;
use crate::ids::{ConversationId, OrgId, SandboxId, UserId};
use crate::llm_relay::usage::Usage;
use crate::llm_relay::{
    LlmRoute, TOKEN_PREFIX, TOKEN_RANDOM_CHARS, UsageGroup, UsageQuery, UsageRecord, UsageRow,
    providers, token_hash,
};
use crate::permissions::{Permission, Role};
use crate::ports::{LlmRelayStore, OrgSettingsStore};
use crate::services::BudgetWatch;
use crate::services::conversations::start::LlmConfig;
use crate::services::llm_relay_cache::RouteCache;

/// The path of the pass-through under Switchboard's address (`<base>/api/v1/llm-proxy`): the
/// agent's LiteLLM appends its provider's path (`/chat/completions`, `/v1/messages`, …).
pub const RELAY_PATH: &str = "/api/v1/llm-proxy";

/// The first day any usage can be of (a conversation's whole cost is its cost since then; a
/// day every database stores).
const EVER: Date = time::macros::date!(2000 - 01 - 01);

/// The sealing binding of a route's key: its conversation's.
pub(crate) fn binding(conversation: ConversationId) -> String {
    format!("llm-route:{conversation}")
}

/// The pass-through's URL for a sandbox whose webhook base URL is `webhook_base_url`
/// (`<Switchboard as the sandbox reaches it>/api/v1/webhooks`): the same address, under
/// [`RELAY_PATH`].
pub fn relay_url(webhook_base_url: &str) -> String {
    let base = webhook_base_url.trim_end_matches('/');
    let base = base.strip_suffix("/api/v1/webhooks").unwrap_or(base);
    format!("{base}{RELAY_PATH}")
}

/// The conversation a route is opened for.
#[derive(Debug, Clone, Copy)]
pub struct RouteFor<'a> {
    /// The sandbox it runs in.
    pub sandbox: SandboxId,
    /// The conversation.
    pub conversation: ConversationId,
    /// Its organization.
    pub org: OrgId,
    /// The member who started it.
    pub user: UserId,
    /// Its model (LiteLLM's name).
    pub model: &'a str,
}

/// What a presented token opens: the route and the real key. `Debug` never shows the key.
#[derive(Clone)]
pub struct RelayTarget {
    /// The route.
    pub route: LlmRoute,
    /// The key, opened.
    pub api_key: String,
}

impl std::fmt::Debug for RelayTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayTarget")
            .field("route", &self.route.conversation_id)
            .field("upstream", &self.route.upstream)
            .finish_non_exhaustive()
    }
}

/// Why a presented token is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// No live route: an unknown token, or its sandbox deleted, or its conversation gone (401).
    UnknownToken,
    /// The conversation's budget is spent: `limit` USD, `cost` so far.
    TaskBudget {
        /// The budget, USD.
        limit: f64,
        /// What was spent, USD.
        cost: f64,
    },
    /// The organization's monthly budget is spent: `limit` USD, `cost` this month (UTC).
    MonthlyBudget {
        /// The budget, USD.
        limit: f64,
        /// What was spent this month, USD.
        cost: f64,
    },
    /// The key does not open here (a server without the installation key, or another one).
    KeyUnavailable,
}

impl Refusal {
    /// The message the agent's LLM client shows (and the conversation's error event carries).
    pub fn message(&self) -> String {
        match self {
            Refusal::UnknownToken => "Switchboard LLM pass-through: this token is not valid (its sandbox was deleted, or its conversation is gone)".into(),
            // The pass-through's own count, or the agent's reported cost that stopped it.
            Refusal::TaskBudget { limit, cost } if *cost >= *limit => format!(
                "Switchboard LLM pass-through: the conversation's budget is spent (max_budget_per_task ${limit:.4}, spent ${cost:.4})"
            ),
            Refusal::TaskBudget { limit, .. } => format!(
                "Switchboard LLM pass-through: the conversation's budget is spent (max_budget_per_task ${limit:.4}): it was stopped by its budget"
            ),
            Refusal::MonthlyBudget { limit, cost } => format!(
                "Switchboard LLM pass-through: the organization's monthly LLM budget is spent (llm_monthly_budget ${limit:.4}, spent ${cost:.4} this month, UTC)"
            ),
            Refusal::KeyUnavailable => "Switchboard LLM pass-through: the key of this conversation cannot be opened on this server".into(),
        }
    }
}

/// The pass-through's service.
#[derive(Clone)]
pub struct LlmRelayService {
    store: Arc<dyn LlmRelayStore>,
    orgs: Arc<dyn OrgSettingsStore>,
    budgets: BudgetWatch,
    sealer: Option<Sealer>,
    cache: Arc<RouteCache<RelayTarget>>,
}

impl LlmRelayService {
    /// Over the routes and usage, the organizations' settings (their monthly budgets) and the
    /// budget watch (which stops a conversation whose budget is spent).
    pub fn new(
        store: Arc<dyn LlmRelayStore>,
        orgs: Arc<dyn OrgSettingsStore>,
        budgets: BudgetWatch,
    ) -> Self {
        LlmRelayService {
            store,
            orgs,
            budgets,
            sealer: None,
            cache: Arc::default(),
        }
    }

    /// The same, sealing and opening keys with `sealer` (the installation key).
    #[must_use]
    pub fn with_sealer(mut self, sealer: Sealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Whether a start must send `llm` through the pass-through: it has a key that is not the
    /// starting member's own.
    pub fn needed(llm: &LlmConfig) -> bool {
        llm.api_key.is_some() && llm.key_owner.is_some()
    }

    /// Opens the route of a start whose LLM `llm` carries a shared key ([`Self::needed`]):
    /// stores the key sealed under a new token's hash, and answers the LLM the sandbox gets
    /// instead (base URL `relay_url`, key the token; model and streaming unchanged). The
    /// upstream is the key owner's base URL, else the provider's public endpoint
    /// ([`providers::public_endpoint`]).
    ///
    /// # Errors
    /// [`DomainError::BadRequest`] when the key has no base URL and the model's provider no
    /// public endpoint (the key would otherwise go wherever the model's prefix points);
    /// [`DomainError::SandboxesDisabled`]-like unavailability when no installation key seals
    /// it; storage.
    pub fn open_route(
        &self,
        at: RouteFor<'_>,
        llm: &LlmConfig,
        relay_url: &str,
        now: OffsetDateTime,
    ) -> Result<LlmConfig, DomainError> {
        let (Some(key), Some(owner)) = (&llm.api_key, llm.key_owner) else {
            return Ok(llm.clone());
        };
        let upstream = match &llm.base_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => providers::public_endpoint(at.model)
                .ok_or_else(|| {
                    DomainError::BadRequest(format!(
                        "the {owner}'s LLM key has no base URL, and model '{}' has no public endpoint Switchboard may send it to: the key's owner must set the base URL that goes with it",
                        at.model
                    ))
                })?
                .to_owned(),
        };
        let sealer = self.sealer.as_ref().ok_or_else(|| {
            DomainError::BadRequest(
                "a shared LLM key cannot be used on a server without the installation key".into(),
            )
        })?;
        let token = random_secret(TOKEN_PREFIX, TOKEN_RANDOM_CHARS);
        let route = LlmRoute {
            token_hash: token_hash(&token),
            sandbox_id: at.sandbox,
            conversation_id: at.conversation,
            org_id: at.org,
            user_id: at.user,
            upstream,
            api_key_sealed: sealer.seal(key, &binding(at.conversation)),
            key_owner: owner.to_owned(),
            model: at.model.to_owned(),
            created_at: now,
        };
        self.store.insert_llm_route(&route)?;
        Ok(LlmConfig {
            base_url: Some(relay_url.to_owned()),
            api_key: Some(token),
            key_owner: None,
            ..llm.clone()
        })
    }

    /// What `token` opens on day `today` (UTC), or why it is refused: an unknown or revoked
    /// token; the conversation stopped by its budget, or its recorded cost at its budget; the
    /// organization's recorded cost this month at its `llm_monthly_budget`.
    ///
    /// # Errors
    /// Storage (the caller answers 503).
    pub fn authorize(
        &self,
        token: &str,
        today: Date,
    ) -> Result<Result<RelayTarget, Refusal>, DomainError> {
        if !token.starts_with(TOKEN_PREFIX) {
            return Ok(Err(Refusal::UnknownToken));
        }
        let hash = token_hash(token);
        let outcome = self.check(&hash, today)?;
        if let Ok(target) = &outcome {
            self.cache.put(hash, target.clone());
        }
        Ok(outcome)
    }

    /// What `token` opened when it was authorized less than
    /// [`ROUTE_CACHE_TTL`](super::llm_relay_cache::ROUTE_CACHE_TTL) ago on this replica
    /// (no database read); `None` otherwise ([`Self::authorize`] then decides).
    pub fn cached(&self, token: &str) -> Option<RelayTarget> {
        if !token.starts_with(TOKEN_PREFIX) {
            return None;
        }
        self.cache.get(&token_hash(token))
    }

    /// [`Self::authorize`]'s database reads for the token of hash `hash`.
    fn check(&self, hash: &str, today: Date) -> Result<Result<RelayTarget, Refusal>, DomainError> {
        let Some(live) = self.store.llm_route(hash)? else {
            return Ok(Err(Refusal::UnknownToken));
        };
        let route = live.route;
        if let Some(limit) = live.max_budget_per_task {
            let cost = self
                .store
                .llm_cost(route.org_id, Some(route.conversation_id), EVER)?;
            if live.budget_reached || crate::conversations::budget::is_reached(limit, cost) {
                return Ok(Err(Refusal::TaskBudget { limit, cost }));
            }
        }
        if let Some(limit) = self
            .orgs
            .org_settings(route.org_id)?
            .and_then(|s| s.llm_monthly_budget)
        {
            let month = today.replace_day(1).unwrap_or(today);
            let cost = self.store.llm_cost(route.org_id, None, month)?;
            if crate::conversations::budget::is_reached(limit, cost) {
                return Ok(Err(Refusal::MonthlyBudget { limit, cost }));
            }
        }
        let Some(api_key) = self.sealer.as_ref().and_then(|s| {
            s.open(&route.api_key_sealed, &binding(route.conversation_id))
                .ok()
        }) else {
            return Ok(Err(Refusal::KeyUnavailable));
        };
        Ok(Ok(RelayTarget { route, api_key }))
    }

    /// Records what one forwarded request of `route` used at `now`, then stops the
    /// conversation when its recorded cost reached its budget (the budget watch: marked once,
    /// its `MaxBudgetReached` event stored, its run paused).
    ///
    /// # Errors
    /// Storage.
    pub fn record(
        &self,
        route: &LlmRoute,
        usage: &Usage,
        now: OffsetDateTime,
    ) -> Result<(), DomainError> {
        let cost = usage.cost_usd.unwrap_or(0.0);
        self.store.add_llm_usage(&UsageRecord {
            org_id: route.org_id,
            user_id: route.user_id,
            conversation_id: route.conversation_id,
            day: now.date(),
            model: route.model.clone(),
            requests: 1,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: if cost.is_finite() && cost > 0.0 {
                cost
            } else {
                0.0
            },
        })?;
        if cost > 0.0 {
            let total = self
                .store
                .llm_cost(route.org_id, Some(route.conversation_id), EVER)?;
            self.budgets.watch(route.conversation_id, total)?;
        }
        Ok(())
    }

    /// `GET /api/organizations/{org_id}/llm-usage`: organization `org`'s usage, read by a
    /// caller whose role there is `role` (owners and admins: `view_billing`), by member or by
    /// day, days `from..=to`.
    ///
    /// # Errors
    /// [`DomainError::PermissionDenied`]; storage. A `to` before `from` answers no rows.
    pub fn org_usage(
        &self,
        org: OrgId,
        role: Role,
        group: UsageGroup,
        (from, to): (Date, Date),
    ) -> Result<Vec<UsageRow>, DomainError> {
        if !role.grants(Permission::ViewBilling) {
            return Err(DomainError::PermissionDenied(Permission::ViewBilling));
        }
        self.usage(org, None, group, from, to)
    }

    /// `GET /api/v1/users/me/llm-usage`: the caller's own usage in the organization, by day.
    ///
    /// # Errors
    /// As [`Self::org_usage`] without the permission.
    pub fn my_usage(
        &self,
        ctx: &OrgContext,
        from: Date,
        to: Date,
    ) -> Result<Vec<UsageRow>, DomainError> {
        self.usage(
            ctx.org.id,
            Some(ctx.principal.user_id),
            UsageGroup::Day,
            from,
            to,
        )
    }

    fn usage(
        &self,
        org: OrgId,
        user: Option<UserId>,
        group: UsageGroup,
        from: Date,
        to: Date,
    ) -> Result<Vec<UsageRow>, DomainError> {
        if to < from {
            return Ok(Vec::new());
        }
        Ok(self.store.llm_usage(&UsageQuery {
            org_id: org,
            user_id: user,
            from,
            to,
            group,
        })?)
    }
}

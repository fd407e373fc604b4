//! App conversations (spec §4.3, reference app-server §5): the conversation as OpenHands' app
//! server shows it ([`AppConversationInfo`], [`AppConversation`]), the sort orders and filters
//! of its searches, and the start tasks of the start pipeline ([`super::start_tasks`]).
//!
//! The record is the same `conversations` row the event store keeps (webhooks create or update
//! it; the start pipeline creates it with the id it hands the agent server), so the ids of
//! events, webhooks and app conversations always agree.

use serde_json::{Map, Value};
use time::OffsetDateTime;

use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, OneOfBuilder, Type};

use crate::conversations::ExecutionStatus;
use crate::cursor::{Keyset, instant_field, parse_instant_field};
use crate::identity::session_keys::SessionKey;
use crate::ids::{ConversationId, OrgId, SandboxId, UserId};
use crate::sandboxes::runtime::SandboxStatus;
use crate::typed_body::fields;

/// The most ids of one batch get of app conversations or start tasks (issue 10: more → 400).
pub const MAX_APP_CONVERSATION_BATCH: usize = 100;
/// The largest page of an app-conversation or start-task search, also the default
/// (reference app-server §5.2: `limit` 1..100, default 100).
pub const MAX_APP_CONVERSATION_PAGE: u32 = 100;
/// The `agent_kind` of every conversation Switchboard starts (reference app-server §5.1).
pub const DEFAULT_AGENT_KIND: &str = "openhands";

/// What started a conversation (reference app-server §5.1 `trigger`; wire names lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConversationTrigger {
    /// An issue resolver.
    Resolver,
    /// The web UI.
    Gui,
    /// A suggested task.
    SuggestedTask,
    /// The public API.
    OpenhandsApi,
    /// Slack.
    Slack,
    /// Microagent management.
    MicroagentManagement,
    /// Jira.
    Jira,
    /// Jira Data Center.
    JiraDc,
    /// Linear.
    Linear,
    /// Bitbucket.
    Bitbucket,
    /// An automation.
    Automation,
}

impl ConversationTrigger {
    /// Every value, in OpenHands' declaration order.
    pub const ALL: [ConversationTrigger; 11] = [
        ConversationTrigger::Resolver,
        ConversationTrigger::Gui,
        ConversationTrigger::SuggestedTask,
        ConversationTrigger::OpenhandsApi,
        ConversationTrigger::Slack,
        ConversationTrigger::MicroagentManagement,
        ConversationTrigger::Jira,
        ConversationTrigger::JiraDc,
        ConversationTrigger::Linear,
        ConversationTrigger::Bitbucket,
        ConversationTrigger::Automation,
    ];

    /// The wire name, e.g. `suggested_task`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationTrigger::Resolver => "resolver",
            ConversationTrigger::Gui => "gui",
            ConversationTrigger::SuggestedTask => "suggested_task",
            ConversationTrigger::OpenhandsApi => "openhands_api",
            ConversationTrigger::Slack => "slack",
            ConversationTrigger::MicroagentManagement => "microagent_management",
            ConversationTrigger::Jira => "jira",
            ConversationTrigger::JiraDc => "jira_dc",
            ConversationTrigger::Linear => "linear",
            ConversationTrigger::Bitbucket => "bitbucket",
            ConversationTrigger::Automation => "automation",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<ConversationTrigger> {
        ConversationTrigger::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// The git providers OpenHands names (`ProviderType`; wire names lowercase).
pub const GIT_PROVIDERS: [&str; 6] = [
    "github",
    "gitlab",
    "bitbucket",
    "bitbucket_data_center",
    "forgejo",
    "azure_devops",
];

/// A conversation's app-level record: OpenHands' `AppConversationInfo` (reference
/// app-server §5.1), one row of `conversations` with the columns of migration
/// `2026-11-23-000004`.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConversationInfo {
    /// Id (the agent server's conversation id).
    pub id: ConversationId,
    /// Organization (not on the wire: visibility, spec §4.3).
    pub org_id: OrgId,
    /// Its creator (`created_by_user_id`).
    pub created_by_user_id: UserId,
    /// The sandbox it runs in; `None` only for rows a webhook created before the sandbox was
    /// known (never for a conversation the start pipeline created).
    pub sandbox_id: Option<SandboxId>,
    /// The repository cloned into the working directory.
    pub selected_repository: Option<String>,
    /// Its branch.
    pub selected_branch: Option<String>,
    /// The git provider (one of [`GIT_PROVIDERS`]).
    pub git_provider: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// What started it.
    pub trigger: Option<ConversationTrigger>,
    /// Pull requests it worked on.
    pub pr_number: Vec<i64>,
    /// The LLM model: the one it was started with, then the one its agent server last
    /// reported ([`RunDetails`](crate::conversations::RunDetails)).
    pub llm_model: Option<String>,
    /// `openhands` (OpenHands also knows `acp`).
    pub agent_kind: String,
    /// OpenHands' `MetricsSnapshot` its agent server last reported (combined over its LLM
    /// usages; [`RunDetails`](crate::conversations::RunDetails)).
    pub metrics: Option<Value>,
    /// Its parent conversation.
    pub parent_conversation_id: Option<ConversationId>,
    /// Its sub-conversations (those naming it as parent), oldest first.
    pub sub_conversation_ids: Vec<ConversationId>,
    /// Shared publicly.
    pub public: Option<bool>,
    /// Tags (string to string).
    pub tags: Map<String, Value>,
    /// The run state the webhooks last reported (not an OpenHands field of the info; the
    /// source of [`AppConversation::execution_status`], reference §9).
    pub execution_status: Option<ExecutionStatus>,
    /// Its budget in USD, fixed at its start (API.md, "Budgets"); `None`: none.
    pub max_budget_per_task: Option<f64>,
    /// Whether its cost reached the budget and Switchboard stopped it.
    pub budget_reached: bool,
    /// Creation time.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
}

/// An app conversation as the API shows it to one caller: OpenHands' `AppConversation`
/// (reference app-server §5.1), [`AppConversationInfo`] plus its sandbox's state.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConversation {
    /// The record.
    pub info: AppConversationInfo,
    /// Its sandbox's status (`MISSING` when there is none).
    pub sandbox_status: SandboxStatus,
    /// The run state Switchboard stores (no call to the agent server; issue 10), the last
    /// one reported also while the sandbox is paused, deleted or lost (issue 31); `error`
    /// once its budget stopped it ([`crate::conversations::budget::answered_status`]).
    pub execution_status: Option<ExecutionStatus>,
    /// `{agent server url}/api/conversations/{id.hex}` while the sandbox runs.
    pub conversation_url: Option<String>,
    /// The sandbox's session key: to its owner and the organization's admins and owners only.
    pub session_api_key: Option<SessionKey>,
}

/// The order of an app-conversation or start-task search (reference app-server §5.2;
/// default `CREATED_AT_DESC`). Ties are broken by id in the same direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SortOrder {
    /// Oldest first.
    CreatedAt,
    /// Newest first (the default).
    #[default]
    CreatedAtDesc,
    /// Least recently changed first.
    UpdatedAt,
    /// Most recently changed first.
    UpdatedAtDesc,
}

impl SortOrder {
    /// Every value.
    pub const ALL: [SortOrder; 4] = [
        SortOrder::CreatedAt,
        SortOrder::CreatedAtDesc,
        SortOrder::UpdatedAt,
        SortOrder::UpdatedAtDesc,
    ];

    /// The wire name, e.g. `CREATED_AT_DESC`.
    pub fn as_str(self) -> &'static str {
        match self {
            SortOrder::CreatedAt => "CREATED_AT",
            SortOrder::CreatedAtDesc => "CREATED_AT_DESC",
            SortOrder::UpdatedAt => "UPDATED_AT",
            SortOrder::UpdatedAtDesc => "UPDATED_AT_DESC",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<SortOrder> {
        SortOrder::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether the order is by `updated_at` (else `created_at`).
    pub fn by_updated(self) -> bool {
        matches!(self, SortOrder::UpdatedAt | SortOrder::UpdatedAtDesc)
    }

    /// Whether the order is descending.
    pub fn descending(self) -> bool {
        matches!(self, SortOrder::CreatedAtDesc | SortOrder::UpdatedAtDesc)
    }
}

/// The filters of the app-conversation search and count (reference app-server §5.2).
/// Instants are compared as stored (UTC); `None` means "no bound".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppConversationFilter {
    /// `title__contains`: a case-insensitive substring of the title.
    pub title_contains: Option<String>,
    /// `created_at__gte`.
    pub created_at_gte: Option<OffsetDateTime>,
    /// `created_at__lt`.
    pub created_at_lt: Option<OffsetDateTime>,
    /// `updated_at__gte`.
    pub updated_at_gte: Option<OffsetDateTime>,
    /// `updated_at__lt`.
    pub updated_at_lt: Option<OffsetDateTime>,
    /// `sandbox_id__eq`.
    pub sandbox_id_eq: Option<SandboxId>,
    /// `include_sub_conversations` (default false: only conversations without a parent).
    pub include_sub_conversations: bool,
}

/// A keyset position in a search ordered by a [`SortOrder`]: the last item's sort instant and
/// id, written as an opaque `page_id` by [`Keyset`]. The order is part of the cursor, so a
/// page id of one order is refused under another.
///
/// In the `UPDATED_AT` orders the cursor also carries the instant its walk began (`as_of`):
/// every page of the walk places a conversation at its `updated_at` as of that instant, so one
/// that changes while the walk goes on is neither skipped nor repeated (API.md, "Paging while
/// conversations change").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderedCursor {
    /// The order it was issued for.
    pub order: SortOrder,
    /// The last item's `created_at` or `updated_at` (per `order`; in an `UPDATED_AT` walk,
    /// its `updated_at` as of `as_of`).
    pub at: OffsetDateTime,
    /// The last item's id.
    pub id: uuid::Uuid,
    /// When the walk began (`UPDATED_AT` orders; `None` in the others and in cursors written
    /// before walks had one).
    pub as_of: Option<OffsetDateTime>,
}

impl Keyset for OrderedCursor {
    const VERSION: &'static str = "ac1";

    fn to_fields(&self) -> Vec<String> {
        let mut fields = vec![
            self.order.as_str().to_owned(),
            instant_field(self.at),
            self.id.simple().to_string(),
        ];
        if let Some(t) = self.as_of {
            fields.push(instant_field(t));
        }
        fields
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let (order, at, id, as_of) = match fields {
            [order, at, id] => (order, at, id, None),
            [order, at, id, as_of] => (order, at, id, Some(parse_instant_field(as_of)?)),
            _ => return None,
        };
        Some(OrderedCursor {
            order: SortOrder::parse(order)?,
            at: parse_instant_field(at)?,
            id: crate::ids::parse_uuid(id)?,
            as_of,
        })
    }
}

impl OrderedCursor {
    /// The position of `info` in a search ordered by `order`, listed at `at` (its
    /// `created_at`/`updated_at`, or in an `UPDATED_AT` walk begun at `as_of` its
    /// `updated_at` then).
    pub fn after(
        order: SortOrder,
        info: &AppConversationInfo,
        at: OffsetDateTime,
        as_of: Option<OffsetDateTime>,
    ) -> Self {
        OrderedCursor {
            order,
            at,
            id: info.id.0,
            as_of: as_of.filter(|_| order.by_updated()),
        }
    }
}

/// Which app conversations a search or count reads: one organization's, or one member's
/// there, filtered.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConversationQuery {
    /// The organization.
    pub org: OrgId,
    /// Only this creator's (callers without `view_org_conversations`).
    pub owner: Option<UserId>,
    /// The filters.
    pub filter: AppConversationFilter,
    /// The order.
    pub order: SortOrder,
    /// Continue after this position (its order is `order`).
    pub after: Option<OrderedCursor>,
    /// In the `UPDATED_AT` orders, the instant the walk began: conversations are placed at
    /// their `updated_at` as of then, those created later are left out (`None`: as they are
    /// now).
    pub as_of: Option<OffsetDateTime>,
    /// How many rows to read (callers ask one more than a page to know whether more follow).
    pub limit: u32,
}

/// The fields of an app conversation a client may change (OpenHands'
/// `AppConversationUpdateRequest`): a field left out is unchanged, `null` clears it. No other
/// field is accepted.
// A typed request body (docs/ARCHITECTURE.md, "Where a body's rules live"): `None` is a field
// left out, `Some(None)` a `null`.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AppConversationUpdateRequest)]
pub struct AppConversationPatch {
    /// The title.
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_text)]
    pub title: Option<Option<String>>,
    /// Whether the conversation is public.
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_bool)]
    pub public: Option<Option<bool>>,
    /// The repository.
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_text)]
    pub selected_repository: Option<Option<String>>,
    /// Its branch.
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = fields::nullable_text)]
    pub selected_branch: Option<Option<String>>,
    /// The git provider (one of [`GIT_PROVIDERS`]).
    #[serde(default, deserialize_with = "fields::present")]
    #[schema(schema_with = git_provider_schema)]
    pub git_provider: Option<Option<String>>,
}

impl crate::typed_body::RequestBody for AppConversationPatch {}

/// A user message for the conversation's agent server (OpenHands' `SendMessageRequest`,
/// reference app-server §5.2 and agent-server-webhooks §2).
// A typed request body; also the websocket's `send` frame.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = SendMessageRequest)]
pub struct SendMessage {
    /// The role: `user` (may be left out).
    #[serde(default)]
    #[schema(schema_with = user_role_schema)]
    pub role: Option<String>,
    /// The content items, forwarded as sent: at least one `{"type": "text", "text": …}` or
    /// `{"type": "image", "image_urls": […]}`.
    #[schema(schema_with = message_content_schema)]
    pub content: Vec<Value>,
    /// Start the agent when it is not running.
    #[serde(default = "fields::yes")]
    #[schema(default = true)]
    pub run: bool,
}

impl crate::typed_body::RequestBody for SendMessage {}

fn git_provider_schema() -> Object {
    fields::one_of_or_null(&GIT_PROVIDERS)
}

fn user_role_schema() -> Object {
    fields::only("user").build()
}

/// How an item of a message's content that is of neither kind is worded.
pub(crate) const MESSAGE_ITEM_WORDS: &str =
    "expected {\"type\":\"text\",\"text\":str} or {\"type\":\"image\",\"image_urls\":[str]}";

/// One item of a message's content: `{type:"text", text}` (`text` judged by `text`) or
/// `{type:"image", image_urls}` (judged by `image_urls`), any failure worded by `words`.
pub(crate) fn message_item_schema(
    text: ObjectBuilder,
    image_urls: ArrayBuilder,
    words: utoipa::openapi::extensions::Extensions,
) -> utoipa::openapi::schema::OneOfBuilder {
    let text = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("type", fields::only("text"))
        .property("text", text)
        .required("type")
        .required("text");
    let image = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("type", fields::only("image"))
        .property("image_urls", image_urls)
        .required("type")
        .required("image_urls");
    OneOfBuilder::new()
        .item(text)
        .item(image)
        .extensions(Some(words))
}

/// A message's content: at least one text or image item. Worded as before typed bodies
/// (pinned by the API's tests): an empty list, or an item of neither kind, is a
/// `value_error` (at the list, at the item).
fn message_content_schema() -> Array {
    let item = message_item_schema(
        fields::string(),
        ArrayBuilder::new().items(fields::string()),
        fields::value_error_words(MESSAGE_ITEM_WORDS),
    );
    ArrayBuilder::new()
        .items(item)
        .min_items(Some(1))
        .extensions(Some(fields::value_error_words(
            "List should have at least 1 item after validation",
        )))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed_body::parse;
    use serde_json::json;
    use switchboard_model::ValidationError;

    fn types(e: Vec<ValidationError>) -> Vec<&'static str> {
        e.iter().map(|x| x.error_type.as_str()).collect()
    }

    #[test]
    fn patch_bodies() {
        let p = parse::<AppConversationPatch>(
            &json!({"title": "t", "public": null, "git_provider": "gitlab"}),
        )
        .unwrap();
        assert_eq!(p.title, Some(Some("t".into())));
        assert_eq!(p.public, Some(None));
        assert_eq!(p.git_provider, Some(Some("gitlab".into())));
        assert_eq!(p.selected_branch, None);
        // pydantic's order: the declared fields in their order, then the extra ones.
        let e = parse::<AppConversationPatch>(
            &json!({"nope": 1, "public": "yes", "git_provider": "svn", "title": 3}),
        )
        .unwrap_err();
        assert_eq!(
            types(e.clone()),
            ["string_type", "bool_type", "enum", "extra_forbidden"]
        );
        assert_eq!(
            e[2].msg,
            "Input should be 'github', 'gitlab', 'bitbucket', 'bitbucket_data_center', 'forgejo' or 'azure_devops'"
        );
        let e = parse::<AppConversationPatch>(&json!({"title": "a\u{0}b"})).unwrap_err();
        assert_eq!(types(e), ["string_pattern_mismatch"]);
        assert_eq!(
            types(parse::<AppConversationPatch>(&json!([])).unwrap_err()),
            ["model_type"]
        );
    }

    #[test]
    fn message_bodies() {
        let m = parse::<SendMessage>(
            &json!({"role": "user", "content": [{"type": "text", "text": "hi", "cache_prompt": false}]}),
        )
        .unwrap();
        assert!(m.run);
        assert_eq!(
            m.content[0]["cache_prompt"], false,
            "items are kept as sent"
        );
        let e = parse::<SendMessage>(&json!({"role": "agent", "content": [], "run": 1, "x": 0}))
            .unwrap_err();
        assert_eq!(
            types(e.clone()),
            [
                "literal_error",
                "value_error",
                "bool_type",
                "extra_forbidden"
            ]
        );
        assert_eq!(e[0].msg, "Input should be 'user'");
        assert_eq!(
            e[1].msg,
            "Value error, List should have at least 1 item after validation"
        );
        assert_eq!(
            types(parse::<SendMessage>(&json!({})).unwrap_err()),
            ["missing"]
        );
        // An item of neither kind is one value error at the item; a list of the wrong type
        // keeps its own entry.
        for item in [json!({"type": "image"}), json!({"type": "video"}), json!(3)] {
            let e =
                parse::<SendMessage>(&json!({"content": [{"type": "text", "text": "a"}, item]}))
                    .unwrap_err();
            assert_eq!(types(e.clone()), ["value_error"]);
            assert_eq!(
                serde_json::to_value(&e[0].loc).unwrap(),
                json!(["body", "content", 1])
            );
            assert_eq!(e[0].input.as_deref(), Some(&item));
        }
        let e = parse::<SendMessage>(&json!({"content": "hi"})).unwrap_err();
        assert_eq!(types(e), ["list_type"]);
    }

    #[test]
    fn sort_orders_and_triggers_round_trip_their_wire_names() {
        for o in SortOrder::ALL {
            assert_eq!(SortOrder::parse(o.as_str()), Some(o));
        }
        assert_eq!(SortOrder::default(), SortOrder::CreatedAtDesc);
        assert_eq!(SortOrder::parse("created_at"), None);
        for t in ConversationTrigger::ALL {
            assert_eq!(ConversationTrigger::parse(t.as_str()), Some(t));
        }
    }

    #[test]
    fn ordered_cursor_round_trips_and_keeps_its_order() {
        let c = OrderedCursor {
            order: SortOrder::UpdatedAt,
            at: OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap(),
            id: uuid::Uuid::new_v4(),
            as_of: None,
        };
        let back = OrderedCursor::decode(&c.encode()).unwrap();
        assert_eq!(back, c);
        let walk = OrderedCursor {
            as_of: Some(OffsetDateTime::from_unix_timestamp(1_800_000_100).unwrap()),
            ..c
        };
        assert_eq!(OrderedCursor::decode(&walk.encode()), Some(walk));
    }
}

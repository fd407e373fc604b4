//! The services, one per resource, each holding only the ports it uses; [`Switchboard`] builds
//! them over one store and hands each out (`switchboard.events()`, …), so a handler or a
//! command calls the service of its resource. Every method blocks on storage.

mod agent_launch;
mod agent_profiles;
mod api_keys;
mod auth;
mod budgets;
mod conversations;
mod device_auth;
mod event_catch_up;
mod event_streaming;
mod event_streams;
mod events;
mod key_rotation;
mod llm_choice;
pub mod llm_relay;
pub mod llm_relay_cache;
mod member_requests;
mod members;
mod membership;
mod operator;
mod org_defaults;
mod org_settings;
mod provider_links;
mod sandbox_access;
mod sandbox_catch_up;
mod sandbox_proxy;
mod sandbox_specs;
mod sandbox_upkeep;
mod sandboxes;
mod service_keys;
mod sign_in;
mod start_settings;
mod user_admin;
mod user_secrets;
mod user_settings;
mod users;

use std::sync::Arc;

pub use crate::identity::redaction::redact;
pub use agent_launch::{LaunchProfile, SUB_AGENT_TOOL};
pub use agent_profiles::AgentProfileService;
pub use api_keys::{ApiKeyService, DEFAULT_MAX_API_KEYS_PER_MEMBER};
pub use auth::AuthService;
pub use budgets::BudgetWatch;
pub use conversations::ConversationService;
pub use conversations::app::{AppConversationService, MessageSent};
pub use conversations::pending::{PendingMessageService, Queued};
pub use conversations::start::{
    ConversationStartService, Follower, LlmConfig, StartClaims, StartTimeouts,
};
pub use conversations::start_tasks::StartTaskService;
pub use conversations::workspace::{FileRead, GitRead, WorkspaceService};
pub use device_auth::{
    DEVICE_CODE_TTL, DEVICE_POLL_INTERVAL_SECS, DeviceAuthService, DeviceRefusal, DeviceStart,
    MAX_PENDING_DEVICE_GRANTS,
};
pub use event_catch_up::CatchUpOutcome;
pub use event_streaming::{LIST_EVERY, RECEIVE_WAIT, STREAMS_PER_SANDBOX};
pub use events::EventService;
pub use key_rotation::{binding_of, rotate_sealed};
pub use llm_choice::EffectiveLlm;
pub use llm_relay::LlmRelayService;
pub use member_requests::{MAX_EMAIL_CHARS, OrgMemberCreate, OrgMemberUpdate};
pub use members::{
    AuditPosition, MAX_MEMBERS_PER_PAGE, MemberPage, MemberService, may_change_role, may_remove,
};
pub use operator::{Bootstrapped, OperatorService};
pub use org_defaults::{OrgDefaultsService, OrgStartDefaults};
pub use org_settings::OrgSettingsService;
pub use sandbox_proxy::{ProxyCredential, ProxyTarget};
pub use sandboxes::SandboxService;
pub use service_keys::{
    CreateUserApiKeyRequest, SERVICE_KEY_LIFETIME, ServiceKey, ServiceKeyService,
};
pub use sign_in::{Account, DEFAULT_SESSION_TTL, OpenedSession, SIGN_IN_STATE_TTL, SignInService};
pub use start_settings::{PersonalSettings, StartSettings};
pub use user_admin::{MAX_USERS_PER_PAGE, UserAdminService};
pub use user_secrets::{MAX_SECRETS_PER_USER, SecretPage, UserSecretService};
pub use user_settings::{ExposedSettings, OwnLlm, UserSettingsService};
pub use users::{MeView, MyOrg, OrgMe, OrgMember, UserService};

use crate::ports::{
    AgentProfileStore, AppConversationStore, ConversationStore, EventStore, IdentityStore,
    MemberStore, OrgDefaultsStore, OrgSettingsStore, PendingMessageStore, SandboxStore,
    SignInStore, StartTaskStore, Store, UserSecretStore, UserSettingsStore,
};

/// The domain services over one store.
#[derive(Clone)]
pub struct Switchboard {
    store: Arc<dyn Store>,
    auth: AuthService,
    api_keys: ApiKeyService,
    service_keys: ServiceKeyService,
    org_settings: OrgSettingsService,
    users: UserService,
    members: MemberService,
    sign_in: SignInService,
    device_auth: DeviceAuthService,
    user_admin: UserAdminService,
    operator: OperatorService,
    sandboxes: SandboxService,
    conversations: ConversationService,
    events: EventService,
    start_tasks: StartTaskService,
    conversation_start: ConversationStartService,
    app_conversations: AppConversationService,
    user_settings: UserSettingsService,
    user_secrets: UserSecretService,
    org_defaults: OrgDefaultsService,
    workspaces: WorkspaceService,
    pending_messages: PendingMessageService,
    agent_profiles: AgentProfileService,
    budgets: BudgetWatch,
    llm_relay: LlmRelayService,
}

impl Switchboard {
    /// Services over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        let identity: Arc<dyn IdentityStore> = store.clone();
        let members: Arc<dyn MemberStore> = store.clone();
        let user_admin = UserAdminService::new(identity.clone(), members.clone());
        let sign_in_store: Arc<dyn SignInStore> = store.clone();
        let settings: Arc<dyn OrgSettingsStore> = store.clone();
        let sandboxes: Arc<dyn SandboxStore> = store.clone();
        let user_settings_store: Arc<dyn UserSettingsStore> = store.clone();
        let user_secret_store: Arc<dyn UserSecretStore> = store.clone();
        let org_defaults_store: Arc<dyn OrgDefaultsStore> = store.clone();
        let user_settings = UserSettingsService::new(
            user_settings_store,
            user_secret_store.clone(),
            identity.clone(),
            settings.clone(),
            org_defaults_store.clone(),
        );
        let user_secrets = UserSecretService::new(user_secret_store, sandboxes.clone());
        let org_defaults = OrgDefaultsService::new(org_defaults_store, identity.clone());
        let agent_profile_store: Arc<dyn AgentProfileStore> = store.clone();
        let agent_profiles = AgentProfileService::new(agent_profile_store);
        let conversations: Arc<dyn ConversationStore> = store.clone();
        // Every path that stores events goes through the budget watch (API.md, "Budgets").
        let budgets = BudgetWatch::new(store.clone(), store.clone());
        let events: Arc<dyn EventStore> = Arc::new(budgets.clone());
        let api_keys = ApiKeyService::new(identity.clone());
        let start_store: Arc<dyn StartTaskStore> = store.clone();
        let app_store: Arc<dyn AppConversationStore> = store.clone();
        let sandbox_service = SandboxService::new(identity.clone(), sandboxes)
            .with_catch_up(event_catch_up::EventCatchUp::new(
                events.clone(),
                conversations.clone(),
            ))
            .with_streaming(event_streaming::EventStreaming::new(
                events.clone(),
                app_store.clone(),
            ));
        let conversation_start = ConversationStartService::new(
            start_store.clone(),
            conversations.clone(),
            identity.clone(),
            sandbox_service.clone(),
        )
        .with_personal(PersonalSettings::new(
            user_settings.clone(),
            user_secrets.clone(),
            org_defaults.clone(),
            agent_profiles.clone(),
        ));
        let conversations = ConversationService::new(conversations);
        let app_conversations =
            AppConversationService::new(app_store.clone(), sandbox_service.clone());
        let pending_store: Arc<dyn PendingMessageStore> = store.clone();
        let pending_messages = PendingMessageService::new(
            pending_store,
            start_store.clone(),
            app_store.clone(),
            app_conversations.clone(),
            sandbox_service.clone(),
        );
        let llm_relay = LlmRelayService::new(store.clone(), store.clone(), budgets.clone());
        Switchboard {
            workspaces: WorkspaceService::new(app_store, sandbox_service.clone()),
            conversation_start: conversation_start.with_pending(pending_messages.clone()),
            pending_messages,
            app_conversations,
            start_tasks: StartTaskService::new(start_store),
            auth: AuthService::new(identity.clone()),
            org_settings: OrgSettingsService::new(settings),
            users: UserService::new(identity.clone()),
            members: MemberService::new(identity.clone(), members.clone()),
            sign_in: SignInService::new(identity.clone(), sign_in_store.clone(), api_keys.clone()),
            device_auth: DeviceAuthService::new(sign_in_store, api_keys.clone()),
            user_admin: user_admin.clone(),
            operator: OperatorService::new(identity.clone(), api_keys.clone(), user_admin),
            service_keys: ServiceKeyService::new(identity.clone(), api_keys.clone()),
            sandboxes: sandbox_service,
            events: EventService::new(conversations.clone(), events),
            api_keys,
            conversations,
            store,
            user_settings,
            user_secrets,
            org_defaults,
            agent_profiles,
            llm_relay,
            budgets,
        }
    }

    /// The same services, with sandboxes run as `managed` says (the server; without it a
    /// start answers 503 and no sandbox spec is listed).
    #[must_use]
    pub fn with_managed_sandboxes(
        mut self,
        managed: crate::sandboxes::settings::ManagedSandboxes,
    ) -> Self {
        self.user_settings = self.user_settings.with_sealer(managed.sealer.clone());
        self.user_secrets = self.user_secrets.with_sealer(managed.sealer.clone());
        self.org_defaults = self
            .org_defaults
            .clone()
            .with_sealer(managed.sealer.clone());
        self.llm_relay = self.llm_relay.clone().with_sealer(managed.sealer.clone());
        self.sandboxes = self.sandboxes.with_managed(managed);
        self.conversation_start = self
            .conversation_start
            .with_sandboxes(self.sandboxes.clone())
            .with_relay(self.llm_relay.clone())
            .with_personal(PersonalSettings::new(
                self.user_settings.clone(),
                self.user_secrets.clone(),
                self.org_defaults.clone(),
                self.agent_profiles.clone(),
            ));
        self.app_conversations =
            AppConversationService::new(self.store.clone(), self.sandboxes.clone());
        self.workspaces = WorkspaceService::new(self.store.clone(), self.sandboxes.clone());
        self.pending_messages = PendingMessageService::new(
            self.store.clone(),
            self.store.clone(),
            self.store.clone(),
            self.app_conversations.clone(),
            self.sandboxes.clone(),
        );
        self.conversation_start = self
            .conversation_start
            .with_pending(self.pending_messages.clone());
        self
    }

    /// The same services, starting conversations with this default LLM.
    #[must_use]
    pub fn with_llm(mut self, llm: LlmConfig) -> Self {
        self.conversation_start = self.conversation_start.with_llm(llm);
        self
    }

    /// The same services refusing starts whose LLM model `allow` does not allow
    /// (`--llm-model-allow`; issue 36).
    #[must_use]
    pub fn with_model_allow(mut self, allow: crate::llm_allow::ModelAllowList) -> Self {
        self.conversation_start = self.conversation_start.with_model_allow(allow);
        self
    }

    /// The same services, letting a member hold at most `max` live API keys they create
    /// (`--max-api-keys-per-member`, issue 33).
    #[must_use]
    pub fn with_max_api_keys_per_member(mut self, max: usize) -> Self {
        self.api_keys = self.api_keys.with_max_per_member(max);
        self.sign_in = self.sign_in.with_api_keys(self.api_keys.clone());
        self.device_auth = self.device_auth.with_api_keys(self.api_keys.clone());
        self
    }

    /// The same services, answering the service routes for callers presenting `key`
    /// (`serve --service-api-key-file`; without it they answer 503, as OpenHands does).
    #[must_use]
    pub fn with_service_key(mut self, key: ServiceKey) -> Self {
        self.service_keys = self.service_keys.with_key(key);
        self
    }

    /// The same services, with these limits on the start pipeline's steps.
    #[must_use]
    pub fn with_start_timeouts(mut self, timeouts: StartTimeouts) -> Self {
        self.conversation_start = self.conversation_start.with_timeouts(timeouts);
        self
    }

    /// The same services, claiming start tasks as `claims` says (issue 20: the replica's id,
    /// the lease, the workers).
    #[must_use]
    pub fn with_start_claims(mut self, claims: StartClaims) -> Self {
        self.conversation_start = self.conversation_start.with_claims(claims);
        self
    }

    /// The store (for readiness).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// `GET /api/v1/settings` (and the settings in `GET /api/v1/users/me`): the caller's
    /// settings in the effective organization, their LLM being the one a start would use
    /// (their own, else the organization's default, else the operator's; issue 31), never a
    /// key.
    ///
    /// # Errors
    /// [`DomainError::UserNotFound`](crate::DomainError::UserNotFound), a value that does not open, storage.
    pub fn member_settings(
        &self,
        ctx: &crate::identity::OrgContext,
    ) -> Result<crate::user_settings::view::SettingsResponse, crate::error::DomainError> {
        let mut view = self.user_settings.settings(ctx)?;
        self.conversation_start
            .effective_llm(ctx.org.id, ctx.principal.user_id)?
            .show_in(&mut view);
        Ok(view)
    }

    /// Keys minted for a trusted service (the automation service).
    pub fn service_keys(&self) -> &ServiceKeyService {
        &self.service_keys
    }

    /// Authentication and the effective organization.
    pub fn auth(&self) -> &AuthService {
        &self.auth
    }

    /// The caller's API keys.
    pub fn api_keys(&self) -> &ApiKeyService {
        &self.api_keys
    }

    /// Organization app settings.
    pub fn org_settings(&self) -> &OrgSettingsService {
        &self.org_settings
    }

    /// Users as they see themselves.
    pub fn users(&self) -> &UserService {
        &self.users
    }

    /// Members managed through the API, and the audit log (issue 34).
    pub fn members(&self) -> &MemberService {
        &self.members
    }

    /// Sign-in through the OpenID provider, sessions, the account page (issue 34).
    pub fn sign_in(&self) -> &SignInService {
        &self.sign_in
    }

    /// Replaces the sign-in service's configuration (the operator's membership rules and the
    /// session lifetime).
    pub fn with_sign_in(mut self, f: impl FnOnce(SignInService) -> SignInService) -> Self {
        self.sign_in = f(self.sign_in);
        self
    }

    /// Device authorization for `openhands login` (issue 34).
    pub fn device_auth(&self) -> &DeviceAuthService {
        &self.device_auth
    }

    /// The operator's commands on users and members (issue 34).
    pub fn user_admin(&self) -> &UserAdminService {
        &self.user_admin
    }

    /// The operator commands.
    pub fn operator(&self) -> &OperatorService {
        &self.operator
    }

    /// Sandboxes.
    pub fn sandboxes(&self) -> &SandboxService {
        &self.sandboxes
    }

    /// Conversations.
    pub fn conversations(&self) -> &ConversationService {
        &self.conversations
    }

    /// Events.
    pub fn events(&self) -> &EventService {
        &self.events
    }

    /// App conversations: read, change, delete, send a message.
    pub fn app_conversations(&self) -> &AppConversationService {
        &self.app_conversations
    }

    /// Start tasks (reads).
    pub fn start_tasks(&self) -> &StartTaskService {
        &self.start_tasks
    }

    /// The start pipeline.
    pub fn conversation_start(&self) -> &ConversationStartService {
        &self.conversation_start
    }

    /// Each user's own settings and LLM profiles (issue 21).
    pub fn user_settings(&self) -> &UserSettingsService {
        &self.user_settings
    }

    /// Users' agent profiles.
    pub fn agent_profiles(&self) -> &AgentProfileService {
        &self.agent_profiles
    }

    /// Each user's custom secrets and git provider tokens (issue 21).
    pub fn user_secrets(&self) -> &UserSecretService {
        &self.user_secrets
    }

    /// Organizations' defaults for their members (issue 21).
    pub fn org_defaults(&self) -> &OrgDefaultsService {
        &self.org_defaults
    }

    /// Replaces the installation key `old` by `new` in every sealed value of the database, in
    /// one transaction (`switchboard secrets rotate-key`); see [`rotate_sealed`].
    ///
    /// # Errors
    /// As [`rotate_sealed`].
    pub fn rotate_installation_key(
        &self,
        old: &crate::identity::sealing::Sealer,
        new: &crate::identity::sealing::Sealer,
    ) -> Result<u64, crate::DomainError> {
        rotate_sealed(self.store.as_ref(), old, new)
    }

    /// What the database says of the installation key `sealer` (a server's or a command's,
    /// before it seals anything): the record is made when missing, with the id of
    /// [`installation::legacy_id`](crate::identity::installation::legacy_id).
    ///
    /// # Errors
    /// A storage failure.
    pub fn check_installation_key(
        &self,
        sealer: &crate::identity::sealing::Sealer,
    ) -> Result<crate::identity::installation::KeyVerdict, crate::DomainError> {
        use crate::identity::installation::{Installation, KeyVerdict, legacy_id};
        let fingerprint = sealer.fingerprint();
        if let Some(found) = self.store.installation()? {
            return Ok(if found.key_fingerprint == fingerprint {
                KeyVerdict::Same(found)
            } else {
                KeyVerdict::Other(found)
            });
        }
        let candidate = Installation {
            id: legacy_id(sealer),
            key_fingerprint: fingerprint.to_owned(),
            created_at: time::OffsetDateTime::now_utc(),
            restored_from: None,
            restored_at: None,
        };
        let held = self.store.claim_installation(&candidate)?;
        Ok(if held.key_fingerprint == fingerprint {
            KeyVerdict::First(held)
        } else {
            KeyVerdict::Other(held)
        })
    }

    /// The installation's record, if any server or command made it.
    ///
    /// # Errors
    /// A storage failure.
    pub fn installation(
        &self,
    ) -> Result<Option<crate::identity::installation::Installation>, crate::DomainError> {
        self.store.installation()
    }

    /// Makes a restored copy an installation of its own (`switchboard restore` without
    /// `--replaces-original`): see [`crate::ports::SealedStore::detach_restored`]. Returns the
    /// record and how many sandbox records were detached.
    ///
    /// # Errors
    /// As [`crate::ports::SealedStore::detach_restored`].
    pub fn detach_restored_installation(
        &self,
    ) -> Result<(crate::identity::installation::Installation, u64), crate::DomainError> {
        let id = crate::identity::installation::restored_id();
        self.store
            .detach_restored(&id, time::OffsetDateTime::now_utc())
    }

    /// Conversations' workspaces: files, directories, git, skills, hooks (issue 22).
    pub fn workspaces(&self) -> &WorkspaceService {
        &self.workspaces
    }

    /// Messages queued while a conversation starts (issue 22).
    pub fn pending_messages(&self) -> &PendingMessageService {
        &self.pending_messages
    }

    /// The same services, the LLM pass-through opening its keys with `sealer` (what
    /// [`Self::with_managed_sandboxes`] does; for a server or a benchmark that runs no
    /// sandboxes of its own).
    #[must_use]
    pub fn with_llm_relay_sealer(mut self, sealer: crate::identity::sealing::Sealer) -> Self {
        self.llm_relay = self.llm_relay.clone().with_sealer(sealer);
        self
    }

    /// The LLM pass-through (issue 38).
    pub fn llm_relay(&self) -> &LlmRelayService {
        &self.llm_relay
    }

    /// The jobs of budgets (API.md, "Budgets"): `budget-stops`, which pauses the runs of
    /// conversations stopped by their budget through the sandbox service's agent servers.
    pub fn budget_jobs(&self) -> Vec<crate::jobs::Job> {
        vec![self.budgets.job(self.sandboxes.clone())]
    }
}

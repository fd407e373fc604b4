//! Roles and permissions: one table, after the OpenHands permission model
//! (`reference/openhands-org-settings.md` §2.2).

use std::fmt;

/// A member's role in an organization; on the wire its name ([`Role::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Full control, including deleting the organization.
    Owner,
    /// Manages the organization's settings and members, but not its existence.
    Admin,
    /// Uses the organization.
    Member,
}

impl Role {
    /// All roles, most privileged first.
    pub const ALL: [Role; 3] = [Role::Owner, Role::Admin, Role::Member];
    /// The wire names of [`Role::ALL`], in its order.
    pub const NAMES: [&'static str; 3] = ["owner", "admin", "member"];

    /// The wire name: `owner`, `admin` or `member`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether this role grants `permission` (the table of reference §2.2).
    pub fn grants(self, permission: Permission) -> bool {
        use Permission::*;
        match permission {
            ManageSecrets
            | ManageMcp
            | ManageIntegrations
            | ManageApplicationSettings
            | ManageApiKeys
            | ViewLlmSettings
            | ViewOrgSettings
            | ViewAutomations => true,
            ManageIntegrationProviders
            | EditLlmSettings
            | ViewBilling
            | AddCredits
            | InviteUserToOrganization
            | ChangeUserRoleMember
            | ChangeUserRoleAdmin
            | EditOrgSettings
            | ManageOrgClaims
            | ProvisionUser
            | ViewOrgConversations
            | ManageAutomations => matches!(self, Role::Owner | Role::Admin),
            ChangeUserRoleOwner | ChangeOrganizationName | DeleteOrganization => {
                self == Role::Owner
            }
            CreateOrganization | ManageSuperAdmins => false,
        }
    }

    /// Every permission this role grants, sorted by name.
    pub fn permissions(self) -> Vec<Permission> {
        let mut out: Vec<Permission> = Permission::ALL
            .into_iter()
            .filter(|p| self.grants(*p))
            .collect();
        out.sort_by_key(|p| p.as_str());
        out
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! permissions {
    ($( $(#[$m:meta])* $variant:ident = $name:literal ),* $(,)?) => {
        /// A permission checked by an operation (reference §2.2; wire names as OpenHands').
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Permission {
            $( $(#[$m])* $variant, )*
        }

        impl Permission {
            /// Every permission, in the reference's order.
            pub const ALL: [Permission; [$($name),*].len()] = [$(Permission::$variant),*];

            /// The wire name, e.g. `manage_application_settings`.
            pub fn as_str(self) -> &'static str {
                match self { $( Permission::$variant => $name, )* }
            }
        }
    };
}

permissions! {
    /// Manage secrets.
    ManageSecrets = "manage_secrets",
    /// Manage MCP servers.
    ManageMcp = "manage_mcp",
    /// Manage integrations.
    ManageIntegrations = "manage_integrations",
    /// Manage integration providers.
    ManageIntegrationProviders = "manage_integration_providers",
    /// Read and change the organization's app settings (`/api/organizations/app`).
    ManageApplicationSettings = "manage_application_settings",
    /// Create, list and revoke one's own API keys.
    ManageApiKeys = "manage_api_keys",
    /// View LLM settings.
    ViewLlmSettings = "view_llm_settings",
    /// Edit LLM settings.
    EditLlmSettings = "edit_llm_settings",
    /// View billing.
    ViewBilling = "view_billing",
    /// Add credits.
    AddCredits = "add_credits",
    /// Invite users.
    InviteUserToOrganization = "invite_user_to_organization",
    /// Make someone a member.
    ChangeUserRoleMember = "change_user_role:member",
    /// Make someone an admin.
    ChangeUserRoleAdmin = "change_user_role:admin",
    /// Make someone an owner.
    ChangeUserRoleOwner = "change_user_role:owner",
    /// View organization settings.
    ViewOrgSettings = "view_org_settings",
    /// Edit organization settings, including `registered_marketplaces`.
    EditOrgSettings = "edit_org_settings",
    /// Rename the organization.
    ChangeOrganizationName = "change_organization_name",
    /// Delete the organization.
    DeleteOrganization = "delete_organization",
    /// Create organizations (no organization role grants it).
    CreateOrganization = "create_organization",
    /// Manage organization claims.
    ManageOrgClaims = "manage_org_claims",
    /// See the organization's automations and create, change and run one's own (the
    /// automation service's `view_automations`; OpenHands gives it to every role).
    ViewAutomations = "view_automations",
    /// Change any automation of the organization, not only one's own (the automation
    /// service's `manage_automations`; OpenHands gives it to owners and admins).
    ManageAutomations = "manage_automations",
    /// Provision users.
    ProvisionUser = "provision_user",
    /// See every conversation of the organization, not only one's own.
    ViewOrgConversations = "view_org_conversations",
    /// Manage super admins (no organization role grants it).
    ManageSuperAdmins = "manage_super_admins",
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_table() {
        let count = |r: Role| r.permissions().len();
        assert_eq!(
            (count(Role::Owner), count(Role::Admin), count(Role::Member)),
            (23, 20, 8)
        );
        // The automation service's two (OpenHands' current table): everyone sees automations
        // and changes their own; owners and admins change anyone's.
        for r in Role::ALL {
            assert!(r.grants(Permission::ViewAutomations));
        }
        assert!(Role::Admin.grants(Permission::ManageAutomations));
        assert!(!Role::Member.grants(Permission::ManageAutomations));
        for r in Role::ALL {
            assert!(r.grants(Permission::ManageApplicationSettings));
            assert!(!r.grants(Permission::CreateOrganization));
        }
        assert!(!Role::Member.grants(Permission::EditOrgSettings));
        assert!(Role::Admin.grants(Permission::EditOrgSettings));
        assert!(!Role::Admin.grants(Permission::DeleteOrganization));
        assert_eq!(Role::parse("admin"), Some(Role::Admin));
        assert_eq!(Role::parse("Admin"), None);
        // The wire names, as written and as read.
        assert_eq!(Role::ALL.map(Role::as_str), Role::NAMES);
        for r in Role::ALL {
            assert_eq!(
                serde_json::from_value::<Role>(r.as_str().into()).unwrap(),
                r
            );
        }
    }
}

//! Members managed through the API (issue 34; OpenHands' `/api/organizations/{org_id}/members…`
//! routes and their rules, reference/openhands-org-settings.md §3.2): list and count an
//! organization's members, change a member's role, remove a member, and read the audit log.
//!
//! The rules (OpenHands' `OrgMemberService`): only owners and admins change or remove
//! members; nobody changes or removes themselves; an owner changes and removes admins and
//! members, to any role, but not other owners; an admin changes only members, to admin or
//! member, and removes only members; the last owner is never demoted or removed. Every change
//! is written to the audit log in its own transaction.

use std::sync::Arc;

use serde_json::json;

use crate::cursor::{Keyset, instant_field, parse_instant_field};
use crate::error::DomainError;
use crate::identity::audit::{Actor, AuditAction, AuditEntry, AuditRecord};
use crate::identity::{OrgContext, User};
use crate::ids::{OrgId, UserId};
use crate::permissions::Role;
use crate::ports::{
    IdentityStore, MemberChange, MemberPosition, MemberQuery, MemberRow, MemberStore,
};
use crate::services::users::OrgMember;
use crate::time_input::now_micros;

/// The most members a page holds (OpenHands: `limit` 1–100, default 10).
pub const MAX_MEMBERS_PER_PAGE: u32 = 100;

/// One page of an organization's members.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberPage {
    /// The members, in the order they joined.
    pub items: Vec<MemberRow>,
    /// The page's number, from 1 (OpenHands' `current_page`).
    pub current_page: u32,
    /// Where the next page starts, when more members match.
    pub next: Option<MemberPosition>,
}

/// Whether a member of role `actor` may change a member of role `target` to `to`.
pub fn may_change_role(actor: Role, target: Role, to: Role) -> bool {
    match actor {
        Role::Owner => target != Role::Owner,
        Role::Admin => target == Role::Member && to != Role::Owner,
        Role::Member => false,
    }
}

/// Whether a member of role `actor` may remove a member of role `target`.
pub fn may_remove(actor: Role, target: Role) -> bool {
    match actor {
        Role::Owner => target != Role::Owner,
        Role::Admin => target == Role::Member,
        Role::Member => false,
    }
}

impl From<MemberRow> for OrgMember {
    fn from(m: MemberRow) -> Self {
        OrgMember {
            user_id: m.user_id,
            email: m.email,
            role: m.role,
            disabled: m.disabled,
        }
    }
}

impl Keyset for MemberPosition {
    const VERSION: &'static str = "m1";

    fn to_fields(&self) -> Vec<String> {
        vec![
            instant_field(self.joined_at),
            self.user_id.0.simple().to_string(),
        ]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let [at, user] = fields else { return None };
        Some(MemberPosition {
            joined_at: parse_instant_field(at)?,
            user_id: UserId(uuid::Uuid::parse_str(user).ok()?),
        })
    }
}

/// A position in the audit log: the last entry's id (pages go newest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditPosition(pub i64);

impl Keyset for AuditPosition {
    const VERSION: &'static str = "a1";

    fn to_fields(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn from_fields(fields: &[&str]) -> Option<Self> {
        let [id] = fields else { return None };
        id.parse().ok().map(AuditPosition)
    }
}

const MEMBER_NOT_FOUND: &str = "Member not found in this organization";
const CHANGED_MEANWHILE: &str =
    "The member was changed by another request meanwhile; read it again and retry";

/// Lists, changes and removes members; reads the audit log.
#[derive(Clone)]
pub struct MemberService {
    identity: Arc<dyn IdentityStore>,
    members: Arc<dyn MemberStore>,
}

impl MemberService {
    /// The service over the identity and member stores.
    pub fn new(identity: Arc<dyn IdentityStore>, members: Arc<dyn MemberStore>) -> Self {
        MemberService { identity, members }
    }

    /// The caller's role in `org` (the path's organization): 403 for a key bound to another
    /// organization; 404 when the caller is not a member (OpenHands answers 403 "You are not a
    /// member of this organization"; here, as on every organization route, another
    /// organization's id does not leak: API.md, Identity).
    ///
    /// # Errors
    /// [`DomainError::KeyNotAuthorizedForOrg`], [`DomainError::OrgNotFound`]; storage.
    pub fn caller_role(&self, ctx: &OrgContext, org: OrgId) -> Result<Role, DomainError> {
        if ctx.principal.bound_org.is_some_and(|b| b != org) {
            return Err(DomainError::KeyNotAuthorizedForOrg);
        }
        if ctx.org.id == org {
            return Ok(ctx.role);
        }
        self.identity
            .org_membership(org, ctx.principal.user_id)?
            .and_then(|m| m.role)
            .ok_or(DomainError::OrgNotFound)
    }

    /// `GET /api/organizations/{org_id}/members`: up to `limit` members (1..=100) whose
    /// e-mail contains `email` (any case), after `after`, in the order they joined; any
    /// member reads them.
    ///
    /// # Errors
    /// 403 or 404 as [`MemberService::caller_role`]; storage.
    pub fn list(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        email: Option<&str>,
        after: Option<MemberPosition>,
        limit: u32,
    ) -> Result<MemberPage, DomainError> {
        self.caller_role(ctx, org)?;
        let limit = limit.clamp(1, MAX_MEMBERS_PER_PAGE);
        let query = MemberQuery {
            email,
            position: after,
        };
        let mut items = self.members.members_page(org, query, limit + 1)?;
        let next = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|m| MemberPosition {
                joined_at: m.joined_at,
                user_id: m.user_id,
            })
        } else {
            None
        };
        let before = match after {
            Some(_) => self.members.count_members(org, query)?,
            None => 0,
        };
        let current_page = u32::try_from(before / i64::from(limit)).unwrap_or(u32::MAX - 1) + 1;
        Ok(MemberPage {
            items,
            current_page,
            next,
        })
    }

    /// `GET /api/organizations/{org_id}/members/count`: how many members' e-mails contain
    /// `email` (all without it).
    ///
    /// # Errors
    /// As [`MemberService::list`].
    pub fn count(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        email: Option<&str>,
    ) -> Result<i64, DomainError> {
        self.caller_role(ctx, org)?;
        Ok(self.members.count_members(
            org,
            MemberQuery {
                email,
                position: None,
            },
        )?)
    }

    /// The target member's role and user, judged for a change by the caller: 403 for
    /// themselves (`self_refusal`), 404 when not a member.
    fn target(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        user: UserId,
        self_refusal: &str,
    ) -> Result<(Role, Role, User), DomainError> {
        let actor = self.caller_role(ctx, org)?;
        if user == ctx.principal.user_id {
            return Err(DomainError::Forbidden(self_refusal.into()));
        }
        let gone = || DomainError::NotFound(MEMBER_NOT_FOUND.into());
        let role = self
            .identity
            .org_membership(org, user)?
            .and_then(|m| m.role)
            .ok_or_else(gone)?;
        let who = self.identity.user(user)?.ok_or_else(gone)?;
        Ok((actor, role, who))
    }

    /// An audit entry for a change the caller makes in `org` to `target`.
    fn entry(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        action: AuditAction,
        target: &User,
        detail: serde_json::Value,
        remote_addr: Option<String>,
    ) -> Result<AuditEntry, DomainError> {
        let me = self
            .identity
            .user(ctx.principal.user_id)?
            .ok_or(DomainError::UserNotFound)?;
        Ok(AuditEntry {
            org: Some(org),
            actor: Actor::User {
                id: me.id,
                email: me.email,
            },
            action,
            target: Some((target.id, target.email.clone())),
            detail,
            remote_addr,
            at: now_micros(),
        })
    }

    /// `POST /api/organizations/{org_id}/members`: makes the user of `email` (one who has
    /// signed in, or the operator made) a member with `role`. Owners add any role, admins
    /// admins and members (`invite_user_to_organization`).
    ///
    /// # Errors
    /// 403 (not an owner or admin, an admin adding an owner), 404 (no user of that e-mail,
    /// or the caller not a member), 409 (a member already); storage.
    pub fn add(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        email: &str,
        role: Role,
        remote_addr: Option<String>,
    ) -> Result<OrgMember, DomainError> {
        let actor = self.caller_role(ctx, org)?;
        if !actor.grants(crate::Permission::InviteUserToOrganization)
            || (role == Role::Owner && actor != Role::Owner)
        {
            return Err(DomainError::Forbidden(
                "You do not have permission to add this member".into(),
            ));
        }
        let who = self.identity.user_by_email(email.trim())?.ok_or_else(|| {
            DomainError::NotFound(
                "No user has this e-mail: they sign in once (or the operator creates them) first"
                    .into(),
            )
        })?;
        let detail = json!({ "role": role.as_str() });
        let audit = self.entry(
            ctx,
            org,
            AuditAction::MemberAdded,
            &who,
            detail,
            remote_addr,
        )?;
        match self.members.add_member(org, who.id, role, &audit)? {
            MemberChange::Done => Ok(OrgMember {
                user_id: who.id,
                email: who.email,
                role,
                disabled: who.disabled_at.is_some(),
            }),
            _ => Err(DomainError::Conflict(
                "This user is a member of the organization already".into(),
            )),
        }
    }

    /// `PATCH /api/organizations/{org_id}/members/{user_id}`: sets a member's role (the rules
    /// of the module); returns the member as changed. The same role again changes nothing
    /// and writes nothing.
    ///
    /// # Errors
    /// 403 (self, not allowed, key bound elsewhere), 404 (caller or target not a member),
    /// 400 (the last owner),
    /// 409 (changed meanwhile); storage.
    pub fn change_role(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        user: UserId,
        to: Role,
        remote_addr: Option<String>,
    ) -> Result<OrgMember, DomainError> {
        let (actor, from, who) = self.target(ctx, org, user, "Cannot modify your own role")?;
        if !may_change_role(actor, from, to) {
            return Err(DomainError::Forbidden(
                "You do not have permission to modify this member".into(),
            ));
        }
        let row = |role| OrgMember {
            user_id: who.id,
            email: who.email.clone(),
            role,
            disabled: who.disabled_at.is_some(),
        };
        if from == to {
            return Ok(row(to));
        }
        let detail = json!({ "from": from.as_str(), "to": to.as_str() });
        let audit = self.entry(
            ctx,
            org,
            AuditAction::MemberRoleChanged,
            &who,
            detail,
            remote_addr,
        )?;
        match self
            .members
            .change_member_role(org, user, from, to, &audit)?
        {
            MemberChange::Done => Ok(row(to)),
            MemberChange::LastOwner => Err(DomainError::BadRequest(
                "Cannot demote the last owner of an organization".into(),
            )),
            MemberChange::Stale => Err(DomainError::Conflict(CHANGED_MEANWHILE.into())),
        }
    }

    /// `DELETE /api/organizations/{org_id}/members/{user_id}`: removes a member (the rules of
    /// the module). Their keys bound to `org` are revoked; their other keys stop acting in
    /// `org` at once on every replica.
    ///
    /// # Errors
    /// As [`MemberService::change_role`].
    pub fn remove(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        user: UserId,
        remote_addr: Option<String>,
    ) -> Result<(), DomainError> {
        let (actor, role, who) = self.target(
            ctx,
            org,
            user,
            "Cannot remove yourself from an organization",
        )?;
        if !may_remove(actor, role) {
            return Err(DomainError::Forbidden(
                "You do not have permission to remove this member".into(),
            ));
        }
        let detail = json!({ "role": role.as_str() });
        let audit = self.entry(
            ctx,
            org,
            AuditAction::MemberRemoved,
            &who,
            detail,
            remote_addr,
        )?;
        match self.members.remove_member(org, user, role, &audit)? {
            MemberChange::Done => Ok(()),
            MemberChange::LastOwner => Err(DomainError::BadRequest(
                "Cannot remove the last owner of an organization".into(),
            )),
            MemberChange::Stale => Err(DomainError::Conflict(CHANGED_MEANWHILE.into())),
        }
    }

    /// `GET /api/organizations/{org_id}/audit-log`: up to `limit` entries (1..=100), newest
    /// first, before position `before`; owners only.
    ///
    /// # Errors
    /// 403 for anyone but an owner of `org` (404 for a non-member); storage.
    pub fn audit_log(
        &self,
        ctx: &OrgContext,
        org: OrgId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>, DomainError> {
        if self.caller_role(ctx, org)? != Role::Owner {
            return Err(DomainError::Forbidden(
                "Only the organization's owners can read its audit log".into(),
            ));
        }
        Ok(self
            .members
            .audit_page(Some(org), before, limit.clamp(1, MAX_MEMBERS_PER_PAGE))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_change_anyone_but_owners_admins_only_members_below_owner() {
        use Role::*;
        for to in Role::ALL {
            assert!(may_change_role(Owner, Admin, to));
            assert!(may_change_role(Owner, Member, to));
            assert!(!may_change_role(Owner, Owner, to));
            assert!(!may_change_role(Admin, Admin, to));
            assert!(!may_change_role(Admin, Owner, to));
            assert!(!may_change_role(Member, Member, to));
        }
        assert!(may_change_role(Admin, Member, Admin));
        assert!(may_change_role(Admin, Member, Member));
        assert!(
            !may_change_role(Admin, Member, Owner),
            "an admin cannot raise above admin"
        );
    }

    #[test]
    fn removals_follow_rank() {
        use Role::*;
        assert!(may_remove(Owner, Admin) && may_remove(Owner, Member));
        assert!(!may_remove(Owner, Owner));
        assert!(may_remove(Admin, Member));
        assert!(!may_remove(Admin, Admin) && !may_remove(Admin, Owner));
        assert!(Role::ALL.into_iter().all(|t| !may_remove(Member, t)));
    }
}

//! Sign-in for a team (issue 34) against a real OpenID provider (npm `oidc-provider`,
//! `scripts/oidc-provider`), on both backends: a browser-free authorization-code sign-in
//! through the provider's forms creates the user, the operator's rules make them a member, the
//! member makes a key on the account page and uses it on the API; tampered, foreign, replayed,
//! expired and mismatched sign-ins are refused; device logins (RFC 8628) as `openhands login`
//! makes them. Without Node or the provider's packages the tests say so and pass
//! (`scripts/oidc-provider/setup.sh` installs them; CI does).
//!
//! `rig.rs` (the app with sign-in, a signed-in browser), `web.rs` (sign-in, account page,
//! refusals), `device.rs` (device logins).

mod device;
mod rig;
mod web;

use device::device_logins;
use web::{
    a_member_signs_in_and_makes_a_key, refusals, without_a_rule_no_membership, wrong_issuer,
};

on_both_backends!(
    a_member_signs_in_and_makes_a_key,
    without_a_rule_no_membership,
    refusals,
    wrong_issuer,
    device_logins,
);

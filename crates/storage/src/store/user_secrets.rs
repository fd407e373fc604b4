//! Each user's custom secrets and git provider tokens ([`UserSecretStore`], issue 21): the
//! `user_secrets` and `git_provider_tokens` tables; values stay sealed here.

use diesel::prelude::*;
use switchboard_domain::ports::{SecretUpdate, UserSecretStore};
use switchboard_domain::user_secrets::{SecretMeta, StoredProviderToken, StoredSecret};
use switchboard_domain::{OrgId, StorageError, UserId};
use time::{OffsetDateTime, PrimitiveDateTime};

use super::DieselStore;
use super::rows::{db_err, optional_row, to_db};
use crate::connection::DbConnection;
use crate::schema::{git_provider_tokens, user_secrets};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = user_secrets)]
struct SecretRow {
    org_id: String,
    user_id: String,
    name: String,
    description: Option<String>,
    value_sealed: String,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

impl SecretRow {
    fn secret(self) -> StoredSecret {
        StoredSecret {
            name: self.name,
            description: self.description,
            value_sealed: self.value_sealed,
        }
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = git_provider_tokens)]
struct TokenRow {
    org_id: String,
    user_id: String,
    provider: String,
    host: Option<String>,
    token_sealed: Option<String>,
    updated_at: PrimitiveDateTime,
}

impl TokenRow {
    fn token(self) -> StoredProviderToken {
        StoredProviderToken {
            provider: self.provider,
            host: self.host,
            token_sealed: self.token_sealed,
        }
    }
}

impl UserSecretStore for DieselStore {
    fn secret_metas(&self, org: OrgId, user: UserId) -> Result<Vec<SecretMeta>, StorageError> {
        Ok(self
            .user_secrets(org, user)?
            .into_iter()
            .map(|s| SecretMeta {
                name: s.name,
                description: s.description,
            })
            .collect())
    }

    fn user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
    ) -> Result<Option<StoredSecret>, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        let mut conn = self.conn()?;
        optional_row(
            native!(&mut *conn, |c| user_secrets::table
                .filter(user_secrets::org_id.eq(&o))
                .filter(user_secrets::user_id.eq(&u))
                .filter(user_secrets::name.eq(name))
                .select(SecretRow::as_select())
                .first(c)),
            |r| Ok(r.secret()),
        )
    }

    fn user_secrets(&self, org: OrgId, user: UserId) -> Result<Vec<StoredSecret>, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        let mut conn = self.conn()?;
        let mut rows: Vec<StoredSecret> = native!(&mut *conn, |c| user_secrets::table
            .filter(user_secrets::org_id.eq(&o))
            .filter(user_secrets::user_id.eq(&u))
            .select(SecretRow::as_select())
            .load(c))
        .map_err(db_err)?
        .into_iter()
        .map(SecretRow::secret)
        .collect();
        // Bytewise, whatever the database's collation.
        rows.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(rows)
    }

    /// One write transaction: the count of the user's other secrets, then a delete and an
    /// insert of the name (the creation time kept).
    fn put_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        secret: &StoredSecret,
        max: usize,
        now: OffsetDateTime,
    ) -> Result<bool, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.write(|conn| {
            let mine = user_secrets::table
                .filter(user_secrets::org_id.eq(&o))
                .filter(user_secrets::user_id.eq(&u));
            let names: Vec<(String, PrimitiveDateTime)> = mine
                .select((user_secrets::name, user_secrets::created_at))
                .load(conn)
                .map_err(db_err)?;
            let existing = names.iter().find(|(n, _)| *n == secret.name);
            if existing.is_none() && names.len() >= max {
                return Ok(false);
            }
            let created_at = existing.map_or(to_db(now), |(_, at)| *at);
            diesel::delete(mine.filter(user_secrets::name.eq(&secret.name)))
                .execute(conn)
                .map_err(db_err)?;
            diesel::insert_into(user_secrets::table)
                .values(&SecretRow {
                    org_id: o.clone(),
                    user_id: u.clone(),
                    name: secret.name.clone(),
                    description: secret.description.clone(),
                    value_sealed: secret.value_sealed.clone(),
                    created_at,
                    updated_at: to_db(now),
                })
                .execute(conn)
                .map_err(db_err)?;
            Ok(true)
        })
    }

    fn update_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
        change: &SecretMeta,
        now: OffsetDateTime,
    ) -> Result<SecretUpdate, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.write(|conn| {
            let mine = user_secrets::table
                .filter(user_secrets::org_id.eq(&o))
                .filter(user_secrets::user_id.eq(&u));
            let names: Vec<String> = mine.select(user_secrets::name).load(conn).map_err(db_err)?;
            if !names.iter().any(|n| n == name) {
                return Ok(SecretUpdate::NotFound);
            }
            if change.name != name && names.contains(&change.name) {
                return Ok(SecretUpdate::NameTaken);
            }
            diesel::update(mine.filter(user_secrets::name.eq(name)))
                .set((
                    user_secrets::name.eq(&change.name),
                    user_secrets::description.eq(&change.description),
                    user_secrets::updated_at.eq(to_db(now)),
                ))
                .execute(conn)
                .map_err(db_err)?;
            Ok(SecretUpdate::Updated)
        })
    }

    fn delete_user_secret(
        &self,
        org: OrgId,
        user: UserId,
        name: &str,
    ) -> Result<bool, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.write(|conn| {
            let n = diesel::delete(
                user_secrets::table
                    .filter(user_secrets::org_id.eq(&o))
                    .filter(user_secrets::user_id.eq(&u))
                    .filter(user_secrets::name.eq(name)),
            )
            .execute(conn)
            .map_err(db_err)?;
            Ok(n > 0)
        })
    }

    fn provider_tokens(
        &self,
        org: OrgId,
        user: UserId,
    ) -> Result<Vec<StoredProviderToken>, StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        let mut conn = self.conn()?;
        let rows: Vec<TokenRow> = native!(&mut *conn, |c| git_provider_tokens::table
            .filter(git_provider_tokens::org_id.eq(&o))
            .filter(git_provider_tokens::user_id.eq(&u))
            .order(git_provider_tokens::provider.asc())
            .select(TokenRow::as_select())
            .load(c))
        .map_err(db_err)?;
        Ok(rows.into_iter().map(TokenRow::token).collect())
    }

    /// One write transaction: the stored tokens read, all deleted, the new set inserted (an
    /// entry without a token takes the stored one of its provider).
    fn replace_provider_tokens(
        &self,
        org: OrgId,
        user: UserId,
        tokens: &[StoredProviderToken],
        now: OffsetDateTime,
    ) -> Result<(), StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.write(|conn| {
            let mine = git_provider_tokens::table
                .filter(git_provider_tokens::org_id.eq(&o))
                .filter(git_provider_tokens::user_id.eq(&u));
            let stored: Vec<TokenRow> = mine
                .select(TokenRow::as_select())
                .load(conn)
                .map_err(db_err)?;
            diesel::delete(mine).execute(conn).map_err(db_err)?;
            for t in tokens {
                let token_sealed = t.token_sealed.clone().or_else(|| {
                    stored
                        .iter()
                        .find(|s| s.provider == t.provider)
                        .and_then(|s| s.token_sealed.clone())
                });
                diesel::insert_into(git_provider_tokens::table)
                    .values(&TokenRow {
                        org_id: o.clone(),
                        user_id: u.clone(),
                        provider: t.provider.clone(),
                        host: t.host.clone(),
                        token_sealed,
                        updated_at: to_db(now),
                    })
                    .execute(conn)
                    .map_err(db_err)?;
            }
            Ok(())
        })
    }

    fn delete_provider_tokens(&self, org: OrgId, user: UserId) -> Result<(), StorageError> {
        let (o, u) = (org.to_string(), user.to_string());
        self.write(|conn| {
            diesel::delete(
                git_provider_tokens::table
                    .filter(git_provider_tokens::org_id.eq(&o))
                    .filter(git_provider_tokens::user_id.eq(&u)),
            )
            .execute(conn)
            .map_err(db_err)?;
            Ok(())
        })
    }
}

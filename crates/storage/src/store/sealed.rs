//! Every sealed column ([`SealedStore`], `switchboard secrets rotate-key`): walked in one
//! write transaction, each value replaced by what the domain answers for it; one refusal rolls
//! back every replacement. Versions (`updated_at`) are left as they are: nothing a reader sees
//! changes, only how it is sealed.

use diesel::prelude::*;
use switchboard_domain::identity::installation::Installation;
use switchboard_domain::org_defaults::OrgBinding;
use switchboard_domain::org_profiles::StoredConnection;
use switchboard_domain::ports::{Reseal, SealedRef, SealedStore};
use switchboard_domain::user_settings::Binding;
use switchboard_domain::{DomainError, OrgId, StorageError, UserId};

use super::DieselStore;
use super::rows::{db_err, parse_id};
use crate::connection::DbConnection;
use crate::schema::{
    git_provider_tokens, named_profiles, org_defaults, sandboxes, start_tasks, user_secrets,
    user_settings,
};

/// The walk: `reseal` over every value; its first error is kept in `refused`.
struct Walk<'a, 'b> {
    reseal: Reseal<'b>,
    refused: &'a mut Option<DomainError>,
    count: u64,
}

impl Walk<'_, '_> {
    fn one(&mut self, what: SealedRef, sealed: &str) -> Result<String, StorageError> {
        match (self.reseal)(what, sealed) {
            Ok(v) => {
                self.count += 1;
                Ok(v)
            }
            Err(e) => {
                *self.refused = Some(e);
                Err(StorageError::Other("a sealed value was refused".into()))
            }
        }
    }

    fn opt(
        &mut self,
        what: SealedRef,
        sealed: Option<&str>,
    ) -> Result<Option<String>, StorageError> {
        sealed.map(|s| self.one(what, s)).transpose()
    }

    fn sandboxes(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        let rows: Vec<(String, String)> = sandboxes::table
            .filter(sandboxes::session_key_sealed.is_not_null())
            .select((
                sandboxes::id,
                sandboxes::session_key_sealed.assume_not_null(),
            ))
            .load(conn)
            .map_err(db_err)?;
        for (id, sealed) in rows {
            let v = self.one(
                SealedRef::SandboxSessionKey(parse_id(&id, "sandbox")?),
                &sealed,
            )?;
            diesel::update(sandboxes::table.filter(sandboxes::id.eq(&id)))
                .set(sandboxes::session_key_sealed.eq(v))
                .execute(conn)
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn llm_routes(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        use crate::schema::llm_relay::llm_routes;
        let rows: Vec<(String, String, String)> = llm_routes::table
            .select((
                llm_routes::token_hash,
                llm_routes::conversation_id,
                llm_routes::api_key_sealed,
            ))
            .load(conn)
            .map_err(db_err)?;
        for (hash, conversation, sealed) in rows {
            let what = SealedRef::LlmRoute(parse_id(&conversation, "conversation")?);
            let v = self.one(what, &sealed)?;
            diesel::update(llm_routes::table.filter(llm_routes::token_hash.eq(&hash)))
                .set(llm_routes::api_key_sealed.eq(v))
                .execute(conn)
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn start_tasks(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        let rows: Vec<(String, String)> = start_tasks::table
            .filter(start_tasks::secrets_sealed.is_not_null())
            .select((
                start_tasks::id,
                start_tasks::secrets_sealed.assume_not_null(),
            ))
            .load(conn)
            .map_err(db_err)?;
        for (id, sealed) in rows {
            let v = self.one(SealedRef::StartTask(parse_id(&id, "start task")?), &sealed)?;
            diesel::update(start_tasks::table.filter(start_tasks::id.eq(&id)))
                .set(start_tasks::secrets_sealed.eq(v))
                .execute(conn)
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn user_settings(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = user_settings::table
            .select((
                user_settings::org_id,
                user_settings::user_id,
                user_settings::llm_api_key_sealed,
                user_settings::search_api_key_sealed,
                user_settings::mcp_config_sealed,
            ))
            .load(conn)
            .map_err(db_err)?;
        for (o, u, llm, search, mcp) in rows {
            let (org, user): (OrgId, UserId) = (parse_id(&o, "org")?, parse_id(&u, "user")?);
            let user_ref = |b| SealedRef::User(b, org, user);
            let llm = self.opt(user_ref(Binding::LlmApiKey), llm.as_deref())?;
            let search = self.opt(user_ref(Binding::SearchApiKey), search.as_deref())?;
            let mcp = self.opt(user_ref(Binding::McpConfig), mcp.as_deref())?;
            diesel::update(
                user_settings::table
                    .filter(user_settings::org_id.eq(&o))
                    .filter(user_settings::user_id.eq(&u)),
            )
            .set((
                user_settings::llm_api_key_sealed.eq(llm),
                user_settings::search_api_key_sealed.eq(search),
                user_settings::mcp_config_sealed.eq(mcp),
            ))
            .execute(conn)
            .map_err(db_err)?;
        }
        Ok(())
    }

    /// The keys of LLM profiles, a member's (`owner` their id) and an organization's
    /// (`owner` `''`), each bound as the domain seals it.
    fn profile_keys(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        type Row = (String, String, String, String, String);
        let rows: Vec<Row> = named_profiles::table
            .filter(named_profiles::secret_sealed.is_not_null())
            .select((
                named_profiles::org_id,
                named_profiles::owner,
                named_profiles::collection,
                named_profiles::name,
                named_profiles::secret_sealed.assume_not_null(),
            ))
            .load(conn)
            .map_err(db_err)?;
        for (o, owner, collection, name, sealed) in rows {
            let org: OrgId = parse_id(&o, "org")?;
            let what = if owner.is_empty() {
                SealedRef::Org(OrgBinding::ProfileApiKey, org)
            } else {
                SealedRef::User(Binding::ProfileApiKey, org, parse_id(&owner, "user")?)
            };
            let v = self.one(what, &sealed)?;
            diesel::update(
                named_profiles::table
                    .filter(named_profiles::org_id.eq(&o))
                    .filter(named_profiles::owner.eq(&owner))
                    .filter(named_profiles::collection.eq(&collection))
                    .filter(named_profiles::name.eq(&name)),
            )
            .set(named_profiles::secret_sealed.eq(v))
            .execute(conn)
            .map_err(db_err)?;
        }
        Ok(())
    }

    fn user_secrets(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        let rows: Vec<(String, String, String, String)> = user_secrets::table
            .select((
                user_secrets::org_id,
                user_secrets::user_id,
                user_secrets::name,
                user_secrets::value_sealed,
            ))
            .load(conn)
            .map_err(db_err)?;
        for (o, u, name, sealed) in rows {
            let what = SealedRef::User(
                Binding::CustomSecret,
                parse_id(&o, "org")?,
                parse_id(&u, "user")?,
            );
            let v = self.one(what, &sealed)?;
            diesel::update(
                user_secrets::table
                    .filter(user_secrets::org_id.eq(&o))
                    .filter(user_secrets::user_id.eq(&u))
                    .filter(user_secrets::name.eq(&name)),
            )
            .set(user_secrets::value_sealed.eq(v))
            .execute(conn)
            .map_err(db_err)?;
        }
        Ok(())
    }

    fn provider_tokens(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        let rows: Vec<(String, String, String, String)> = git_provider_tokens::table
            .filter(git_provider_tokens::token_sealed.is_not_null())
            .select((
                git_provider_tokens::org_id,
                git_provider_tokens::user_id,
                git_provider_tokens::provider,
                git_provider_tokens::token_sealed.assume_not_null(),
            ))
            .load(conn)
            .map_err(db_err)?;
        for (o, u, provider, sealed) in rows {
            let what = SealedRef::User(
                Binding::ProviderToken,
                parse_id(&o, "org")?,
                parse_id(&u, "user")?,
            );
            let v = self.one(what, &sealed)?;
            diesel::update(
                git_provider_tokens::table
                    .filter(git_provider_tokens::org_id.eq(&o))
                    .filter(git_provider_tokens::user_id.eq(&u))
                    .filter(git_provider_tokens::provider.eq(&provider)),
            )
            .set(git_provider_tokens::token_sealed.eq(v))
            .execute(conn)
            .map_err(db_err)?;
        }
        Ok(())
    }

    fn org_defaults(&mut self, conn: &mut DbConnection) -> Result<(), StorageError> {
        type Row = (
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
        );
        let rows: Vec<Row> = org_defaults::table
            .select((
                org_defaults::org_id,
                org_defaults::llm_api_key_sealed,
                org_defaults::search_api_key_sealed,
                org_defaults::mcp_config_sealed,
                org_defaults::provider_connections,
            ))
            .load(conn)
            .map_err(db_err)?;
        for (o, llm, search, mcp, connections) in rows {
            let org: OrgId = parse_id(&o, "org")?;
            let llm = self.opt(SealedRef::Org(OrgBinding::LlmApiKey, org), llm.as_deref())?;
            let search = self.opt(
                SealedRef::Org(OrgBinding::SearchApiKey, org),
                search.as_deref(),
            )?;
            let mcp = self.opt(SealedRef::Org(OrgBinding::McpConfig, org), mcp.as_deref())?;
            let bad = |e: serde_json::Error| StorageError::Other(Box::new(e));
            let mut connections: Vec<StoredConnection> =
                serde_json::from_str(&connections).map_err(bad)?;
            for c in &mut connections {
                c.api_key_sealed = self.opt(
                    SealedRef::Org(OrgBinding::ConnectionApiKey, org),
                    c.api_key_sealed.as_deref(),
                )?;
            }
            diesel::update(org_defaults::table.filter(org_defaults::org_id.eq(&o)))
                .set((
                    org_defaults::llm_api_key_sealed.eq(llm),
                    org_defaults::search_api_key_sealed.eq(search),
                    org_defaults::mcp_config_sealed.eq(mcp),
                    org_defaults::provider_connections
                        .eq(serde_json::to_string(&connections).map_err(bad)?),
                ))
                .execute(conn)
                .map_err(db_err)?;
        }
        Ok(())
    }
}

impl SealedStore for DieselStore {
    /// One write transaction ([`DieselStore::write`]) over the eight tables holding sealed
    /// values; a refusal of `reseal` rolls it back and is returned.
    fn reseal_all(
        &self,
        reseal: Reseal<'_>,
        new_fingerprint: Option<&str>,
    ) -> Result<u64, DomainError> {
        let mut refused = None;
        let mut walk = Walk {
            reseal,
            refused: &mut refused,
            count: 0,
        };
        let done = self.write(|conn| {
            walk.sandboxes(conn)?;
            walk.start_tasks(conn)?;
            walk.user_settings(conn)?;
            walk.profile_keys(conn)?;
            walk.user_secrets(conn)?;
            walk.provider_tokens(conn)?;
            walk.org_defaults(conn)?;
            walk.llm_routes(conn)?;
            if let Some(fingerprint) = new_fingerprint {
                super::installation::set_fingerprint(conn, fingerprint)?;
            }
            Ok(walk.count)
        });
        if let Some(e) = refused {
            return Err(e);
        }
        Ok(done?)
    }

    fn installation(&self) -> Result<Option<Installation>, DomainError> {
        let mut conn = self.conn()?;
        Ok(super::installation::read(&mut conn)?)
    }

    fn claim_installation(&self, candidate: &Installation) -> Result<Installation, DomainError> {
        Ok(self.claim_installation_record(candidate)?)
    }

    fn detach_restored(
        &self,
        new_id: &str,
        at: time::OffsetDateTime,
    ) -> Result<(Installation, u64), DomainError> {
        Ok(self.detach_restored_copy(new_id, at)?)
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

impl DieselStore {
    /// How many `switchboard serve` processes hold this database open, as far as it can be
    /// told: on PostgreSQL, the listening connections on this database (every server keeps
    /// one, `application_name` [`LISTENER_APPLICATION_NAME`](crate::listen::LISTENER_APPLICATION_NAME));
    /// on SQLite nothing tells, and the answer is 0.
    ///
    /// # Errors
    /// Storage.
    pub fn servers_listening(&self) -> Result<i64, StorageError> {
        if self.kind != crate::connection::BackendKind::Postgres {
            return Ok(0);
        }
        let mut pooled = self.conn()?;
        let conn: &mut DbConnection = &mut pooled;
        let found: Count = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE application_name = $1 AND datname = current_database()",
        )
        .bind::<diesel::sql_types::Text, _>(crate::listen::LISTENER_APPLICATION_NAME)
        .get_result(conn)
        .map_err(db_err)?;
        Ok(found.n)
    }
}

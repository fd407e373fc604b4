// Test-only OpenID Connect provider for Switchboard's login tests, built on
// panva's certified `oidc-provider` (version pinned in package-lock.json).
// NEVER use it for anything but tests: in-memory storage, an RSA signing key
// made fresh at each start, plain-text test passwords.
//
// Run: node scripts/oidc-provider/provider.mjs   (after scripts/oidc-provider/setup.sh)
//
// When ready it prints exactly one line on stdout:
//     ISSUER=http://127.0.0.1:<port>
// (no trailing slash), then serves until SIGTERM/SIGINT, on which it exits 0.
// Everything else (oidc-provider's notices and warnings) goes to stderr.
//
// Environment (all optional):
//   OIDC_PORT          TCP port on 127.0.0.1; 0 (default) = pick a free one.
//   OIDC_CLIENTS       JSON array of clients:
//                        [{"client_id", "client_secret", "redirect_uris": [...],
//                          "grant_types"?, "response_types"?, "token_endpoint_auth_method"?}]
//                      Defaults: grant_types ["authorization_code"], response_types ["code"],
//                      token_endpoint_auth_method "client_secret_basic" (client_secret_post
//                      is accepted from such a client too). Other oidc-provider client
//                      metadata (e.g. post_logout_redirect_uris) passes through as given.
//                      Default: one client "switchboard" / "switchboard-secret",
//                      redirect http://127.0.0.1:8000/login/callback.
//   OIDC_ACCOUNTS      JSON array of accounts:
//                        [{"sub", "login", "password", "email", "email_verified", "name", "groups": [...]}]
//                      Default: alice, bob (email_verified false), carol (see DEFAULT_ACCOUNTS).
//   OIDC_ID_TOKEN_TTL  ID token lifetime in seconds (exp - iat); default 3600.
//   OIDC_CLOCK_BEHIND  Seconds the provider's clock runs behind the real one; default 0.
//                      With more than OIDC_ID_TOKEN_TTL its ID tokens have lapsed when
//                      issued (a relying party must refuse them).
//
// Scopes -> claims (claims go into the ID token AND userinfo, see conformIdTokenClaims):
//   openid: sub   email: email, email_verified   profile: name   groups: groups
//
// Login: own minimal interaction pages at /interaction/<uid> (login form with a
// real password check, then a consent form); see README.md for the HTTP steps.
// PKCE (S256) is required for every authorization code request.

import crypto from 'node:crypto';
import http from 'node:http';

// oidc-provider prints notices with console.info; stdout is reserved for the ISSUER line.
console.log = console.info = console.warn;
const { default: Provider } = await import('oidc-provider');

const DEFAULT_CLIENTS = [{
  client_id: 'switchboard',
  client_secret: 'switchboard-secret',
  redirect_uris: ['http://127.0.0.1:8000/login/callback'],
}];

const DEFAULT_ACCOUNTS = [
  { sub: 'u-alice', login: 'alice', password: 'alice-password', email: 'alice@example.com',
    email_verified: true, name: 'Alice Example', groups: ['engineering'] },
  { sub: 'u-bob', login: 'bob', password: 'bob-password', email: 'bob@example.com',
    email_verified: false, name: 'Bob Example', groups: ['engineering'] },
  { sub: 'u-carol', login: 'carol', password: 'carol-password', email: 'carol@example.com',
    email_verified: true, name: 'Carol Example', groups: ['admins'] },
];

function fail(message) {
  console.error(`oidc test provider: ${message}`);
  process.exit(2);
}

function jsonEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  try {
    const value = JSON.parse(raw);
    if (!Array.isArray(value)) throw new Error('not a JSON array');
    return value;
  } catch (err) {
    return fail(`${name}: ${err.message}`);
  }
}

function intEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) fail(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

const port = intEnv('OIDC_PORT', 0);
const idTokenTtl = intEnv('OIDC_ID_TOKEN_TTL', 3600);
if (idTokenTtl < 1) fail('OIDC_ID_TOKEN_TTL must be at least 1');
const clockBehind = intEnv('OIDC_CLOCK_BEHIND', 0);
if (clockBehind > 0) {
  const realNow = Date.now;
  Date.now = () => realNow() - clockBehind * 1000;
}

const clients = jsonEnv('OIDC_CLIENTS', DEFAULT_CLIENTS).map((c) => ({
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_basic',
  ...c,
}));

const accounts = jsonEnv('OIDC_ACCOUNTS', DEFAULT_ACCOUNTS);
const accountBySub = new Map(accounts.map((a) => [String(a.sub), a]));
const accountByLogin = new Map(accounts.map((a) => [String(a.login), a]));

// The key is made as PEM and exported as a JWK from a key object of its own: exporting the
// generated key object itself as a JWK can deadlock in Node 20 (a garbage collection during
// the export destroys the generation job, which waits for the key's lock the export holds;
// about one start in twenty hung, printing nothing).
const { privateKey: signingPem } = crypto.generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const signingKey = {
  ...crypto.createPrivateKey(signingPem).export({ format: 'jwk' }),
  kid: crypto.randomUUID(),
  alg: 'RS256',
  use: 'sig',
};

const configuration = {
  clients,
  jwks: { keys: [signingKey] },
  async findAccount(ctx, sub) {
    const account = accountBySub.get(sub);
    if (!account) return undefined;
    return {
      accountId: sub,
      // oidc-provider keeps only the claims that the granted scopes allow.
      async claims() {
        return {
          sub,
          email: account.email,
          email_verified: account.email_verified,
          name: account.name,
          groups: account.groups ?? [],
        };
      },
    };
  },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  // By default, when an access token is issued too (response_type=code), scope
  // claims only go to userinfo. false = put them in the ID token as well.
  conformIdTokenClaims: false,
  pkce: { required: () => true }, // only S256 is supported by oidc-provider 9
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  // No `secure` flag: cookies work over plain http on 127.0.0.1.
  cookies: {
    keys: [crypto.randomBytes(32).toString('base64url')],
    long: { httpOnly: true, sameSite: 'lax' },
    short: { httpOnly: true, sameSite: 'lax' },
  },
  ttl: {
    IdToken: idTokenTtl,
    AccessToken: 3600,
    AuthorizationCode: 60,
    Interaction: 600,
    Session: 86400,
    Grant: 86400,
  },
};

// ---- interaction pages: GET/POST /interaction/<uid>, GET /interaction/<uid>/abort ----

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function sendHtml(res, status, title, body) {
  const html = `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${esc(title)}</title></head>\n`
    + `<body><h1>${esc(title)}</h1>\n${body}\n</body></html>\n`;
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(html),
  });
  res.end(html);
}

function loginPage(res, uid, status = 200, error = '', login = '') {
  sendHtml(res, status, 'Sign-in', `${error ? `<p class="error">${esc(error)}</p>\n` : ''}`
    + `<form method="post" action="/interaction/${esc(uid)}">\n`
    + '<input type="hidden" name="prompt" value="login">\n'
    + `<input type="text" name="login" value="${esc(login)}" required>\n`
    + '<input type="password" name="password" required>\n'
    + '<button type="submit">Sign-in</button>\n</form>');
}

function consentPage(res, uid, details) {
  const scopes = (details.missingOIDCScope ?? []).join(' ');
  sendHtml(res, 200, 'Authorize', `<p>scopes: ${esc(scopes)}</p>\n`
    + `<form method="post" action="/interaction/${esc(uid)}">\n`
    + '<input type="hidden" name="prompt" value="consent">\n'
    + '<button type="submit">Continue</button>\n</form>');
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('request body too large');
  }
  return new URLSearchParams(body);
}

async function interaction(provider, req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction uid does not match the interaction cookie');
  const { prompt, params, grantId, session } = details;

  if (action === 'abort') {
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'End-User aborted interaction',
    }, { mergeWithLastSubmission: false });
  }

  if (req.method === 'GET') {
    if (prompt.name === 'login') return loginPage(res, uid, 200, '', params.login_hint ?? '');
    if (prompt.name === 'consent') return consentPage(res, uid, prompt.details);
    throw new Error(`unsupported prompt ${prompt.name}`);
  }
  if (req.method !== 'POST') throw new Error(`method ${req.method} not allowed`);

  const form = await readForm(req);
  if (form.get('prompt') !== prompt.name) {
    throw new Error(`form prompt ${form.get('prompt')} does not match the pending prompt ${prompt.name}`);
  }

  if (prompt.name === 'login') {
    const login = form.get('login') ?? '';
    const account = accountByLogin.get(login);
    if (!account || String(account.password) !== (form.get('password') ?? '')) {
      return loginPage(res, uid, 401, 'Invalid login or password.', login);
    }
    return provider.interactionFinished(req, res, {
      login: { accountId: String(account.sub) },
    }, { mergeWithLastSubmission: false });
  }

  if (prompt.name === 'consent') {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    return provider.interactionFinished(req, res, {
      consent: { grantId: await grant.save() },
    }, { mergeWithLastSubmission: true });
  }

  throw new Error(`unsupported prompt ${prompt.name}`);
}

// ---- server ----

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, configuration);
provider.proxy = false; // plain http, no X-Forwarded-* trust
const providerCallback = provider.callback();
// Static clients are otherwise only validated on first use: fail at start instead.
for (const { client_id: id } of clients) {
  await provider.Client.find(String(id)).catch((err) => fail(`client ${id}: ${err.error_description ?? err.message}`));
}

server.on('request', (req, res) => {
  const match = /^\/interaction\/([^/?]+)(\/abort)?(?:\?.*)?$/.exec(req.url);
  if (!match) return providerCallback(req, res);
  return interaction(provider, req, res, match[1], match[2] ? 'abort' : '').catch((err) => {
    console.error(`interaction error: ${err.message}`);
    if (!res.headersSent) sendHtml(res, 400, 'Error', `<p class="error">${esc(err.message)}</p>`);
  });
});

function shutdown() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

process.stdout.write(`ISSUER=${issuer}\n`);

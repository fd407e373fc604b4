#!/usr/bin/env bash
# Installs the test OIDC provider's npm dependencies (oidc-provider, pinned by
# package-lock.json) into scripts/oidc-provider/node_modules with `npm ci`.
#
# Idempotent: does nothing when node_modules already holds the locked version.
# The install stays next to provider.mjs on purpose: Node's ESM resolver finds
# packages only in node_modules folders above the importing file (NODE_PATH is
# ignored for `import`), and npm's own cache (~/.npm) already makes a repeat
# `npm ci` in a fresh clone quick and offline-friendly.
#
# Exit 0 with a "SKIP:" line when node/npm is missing or node is too old, so a
# caller can go on without the provider; tests should then look for
# scripts/oidc-provider/node_modules/oidc-provider and skip when it is absent.
# Exit non-zero only when npm is there but the install fails.
set -euo pipefail
cd "$(dirname "$0")"

skip() { echo "oidc-provider setup: SKIP: $*"; exit 0; }

command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"
# oidc-provider 9 uses URL.parse and crypto.hash: Node >= 20.18.
node -e 'process.exit(typeof URL.parse === "function" && typeof require("crypto").hash === "function" ? 0 : 1)' \
  || skip "node $(node --version) is too old; oidc-provider 9 needs Node >= 20.18 (22 LTS recommended)"

installed() {
  node -e '
    const want = require("./package-lock.json").packages["node_modules/oidc-provider"].version;
    const have = require("./node_modules/oidc-provider/package.json").version;
    process.exit(want === have ? 0 : 1);' 2>/dev/null
}

if installed; then
  echo "oidc-provider setup: already installed in $PWD/node_modules"
  exit 0
fi

npm ci --no-audit --no-fund
installed || { echo "oidc-provider setup: npm ci finished but oidc-provider is not the locked version" >&2; exit 1; }
echo "oidc-provider setup: installed in $PWD/node_modules"

#!/usr/bin/env python3
"""The OpenHands SDK's own client reading a member's settings from Switchboard (issue 21),
unchanged: `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2) starts a sandbox through
Switchboard's API, then `get_llm()` (`GET /api/v1/users/me?expose_secrets=true` with the API
key and the sandbox's session key) and `get_secrets()` (`GET
/api/v1/sandboxes/{id}/settings/secrets`), and resolves each `LookupSecret` as the agent
server would (its URL with its headers). The sandbox is deleted as the `with` block ends.

Prints one JSON line: {"model", "api_key", "base_url", "secrets": {name: value}, "mcp"}.

Usage: sdk_user_settings.py SWITCHBOARD_URL API_KEY
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import httpx  # noqa: E402

from openhands.workspace import OpenHandsCloudWorkspace  # noqa: E402


def plain(o):
    """JSON for what `get_mcp_config()` answers: models as dicts, secrets in the clear."""
    if hasattr(o, "get_secret_value"):
        return o.get_secret_value()
    if hasattr(o, "headers") and hasattr(o, "url"):
        # The model's own dump masks the headers: read them as the client would use them.
        return {"url": str(o.url), "headers": {k: plain(v) if not isinstance(v, str) else v
                                                for k, v in dict(o.headers or {}).items()}}
    if hasattr(o, "model_dump"):
        return o.model_dump()
    return str(o)


def main():
    url, api_key = sys.argv[1:3]
    with OpenHandsCloudWorkspace(
        cloud_api_url=url, cloud_api_key=api_key, init_timeout=120
    ) as workspace:
        llm = workspace.get_llm()
        secrets = {}
        for name, lookup in workspace.get_secrets().items():
            r = httpx.get(lookup.url, headers=lookup.headers, timeout=30)
            r.raise_for_status()
            secrets[name] = r.text
        mcp = workspace.get_mcp_config()
        key = llm.api_key.get_secret_value() if llm.api_key is not None else None
    print(
        json.dumps(
            {
                "model": llm.model,
                "api_key": key,
                "base_url": llm.base_url,
                "secrets": secrets,
                "mcp": mcp,
            },
            # 1.58.2 answers the MCP servers as pydantic models, their headers as secrets.
            default=plain,
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The OpenHands SDK's own client running a conversation on a member's own LLM and secrets
(issue 21), unchanged: `OpenHandsCloudWorkspace` (openhands-workspace 1.58.2) starts a sandbox
through Switchboard's API; `get_llm()` gives the agent its LLM (the member's model, base URL
and key, from `GET /api/v1/users/me?expose_secrets=true`), `get_secrets()` the member's secrets
(`LookupSecret`s of `GET /api/v1/sandboxes/{id}/settings/secrets/{name}`, which the agent
server resolves when a command names them); the conversation runs MESSAGE on the sandbox's
agent server. The sandbox is deleted as the `with` block ends.

Prints one JSON line: {"model", "api_key", "base_url", "secret_names", "conversation_id"}.

Usage: sdk_member_conversation.py SWITCHBOARD_URL API_KEY MESSAGE
Run with the Python of a venv holding openhands-workspace==1.58.2 and openhands-tools==1.58.2.
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import openhands.tools.terminal  # noqa: E402,F401  (registers TerminalTool for the client)
from openhands.sdk import Agent, Conversation, Tool  # noqa: E402
from openhands.workspace import OpenHandsCloudWorkspace  # noqa: E402


def main():
    url, api_key, message = sys.argv[1:4]
    with OpenHandsCloudWorkspace(
        cloud_api_url=url, cloud_api_key=api_key, init_timeout=240
    ) as workspace:
        llm = workspace.get_llm(num_retries=0)
        secrets = workspace.get_secrets()
        # The SDK's default working_dir, /workspace/project (issue 31).
        agent = Agent(llm=llm, tools=[Tool(name="terminal")])
        conversation = Conversation(agent=agent, workspace=workspace)
        conversation.update_secrets(secrets)
        conversation.send_message(message)
        conversation.run()
        key = llm.api_key.get_secret_value() if llm.api_key is not None else None
        out = {
            "model": llm.model,
            "api_key": key,
            "base_url": llm.base_url,
            "secret_names": sorted(secrets),
            "conversation_id": str(conversation.id),
        }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

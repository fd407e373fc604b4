#!/usr/bin/env python3
"""The OpenHands SDK's own client against Switchboard, unchanged: `OpenHandsCloudWorkspace`
(openhands-workspace 1.58.2) starts a sandbox through Switchboard's API, runs a conversation on
the sandbox's agent server, and deletes the sandbox as it leaves its `with` block (as it always
does). Just before leaving, it reads the agent server's own event search: every event the agent
server persisted, which Switchboard must then hold (issue 19).

The workspace keeps the SDK's default `working_dir`, `/workspace/project` (issue 31).

Prints one JSON line: {"sandbox_id", "conversation_id", "agent_event_ids": [...in order...],
"working_dir", "execution_status", "written": [pwd, content of sdk.txt written there]}.

Usage: sdk_cloud_workspace.py SWITCHBOARD_URL API_KEY LLM_BASE_URL [MESSAGE]
Run with the Python of a venv holding openhands-workspace==1.58.2 and openhands-tools==1.58.2
(the client reads the agent's tool definitions back).
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import httpx  # noqa: E402
from pydantic import SecretStr  # noqa: E402

import openhands.tools.terminal  # noqa: E402,F401  (registers TerminalTool for the client)
from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.workspace import OpenHandsCloudWorkspace  # noqa: E402


def agent_event_ids(host, key, conversation_id):
    """Every event id of the agent server's own search, oldest first."""
    ids, page = [], None
    with httpx.Client(base_url=host, headers={"X-Session-API-Key": key}, timeout=30) as c:
        while True:
            params = {"limit": 100}
            if page:
                params["page_id"] = page
            r = c.get(f"/api/conversations/{conversation_id}/events/search", params=params)
            r.raise_for_status()
            body = r.json()
            ids += [e["id"] for e in body["items"]]
            page = body.get("next_page_id")
            if not page:
                return ids


def main():
    url, api_key, llm_base = sys.argv[1:4]
    message = sys.argv[4] if len(sys.argv) > 4 else "say hello"
    llm = LLM(
        model="openai/fake-model",
        base_url=llm_base,
        api_key=SecretStr("fake-key"),
        usage_id="agent",
        num_retries=0,
    )
    agent = Agent(llm=llm, tools=[Tool(name="terminal")])
    with OpenHandsCloudWorkspace(
        cloud_api_url=url, cloud_api_key=api_key, init_timeout=240
    ) as workspace:
        sandbox_id = workspace._sandbox_id
        # The SDK's own default working_dir (/workspace/project), as every OpenHands client.
        conversation = Conversation(agent=agent, workspace=workspace)
        conversation.send_message(message)
        conversation.run()
        conversation_id = str(conversation.id)
        ids = agent_event_ids(workspace.host, workspace.api_key, conversation_id)
        state = str(conversation.state.execution_status.value)
        # Where the agent works, as the agent server says, and a file written there.
        written = workspace.execute_command(
            "echo from-sdk > sdk.txt && pwd && cat sdk.txt", cwd=workspace.working_dir
        )
    print(
        json.dumps(
            {
                "sandbox_id": sandbox_id,
                "conversation_id": conversation_id,
                "agent_event_ids": ids,
                "working_dir": workspace.working_dir,
                "execution_status": state,
                "written": written.stdout.strip().splitlines(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()

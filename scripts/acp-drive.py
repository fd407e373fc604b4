#!/usr/bin/env python3
"""Drives an Agent Client Protocol agent over its standard streams, as an editor would.

Used by the tests to run the OpenHands CLI's `openhands acp --cloud` unchanged against
Switchboard: it starts the command given after `--`, sends `initialize`, `session/new` and one
`session/prompt` (newline-delimited JSON-RPC 2.0, ACP protocol version 1), answers the agent's
permission requests by allowing once, and refuses the file-system and terminal requests (the
client declares neither capability). Notifications (`session/update`) are counted.

It prints one JSON object on its last line: `{"session_id", "stop_reason", "updates",
"agent_messages"}` (the text the agent sent as message chunks), and exits 0 when the prompt
ended with a stop reason; otherwise it prints what it saw and exits 1. Every step is bounded
by --timeout seconds.

With --no-prompt it stops after `session/new` (and exits 0 once the session is open).

Usage: acp-drive.py [--cwd DIR] [--prompt TEXT | --no-prompt] [--timeout S] -- COMMAND [ARGS...]
"""

import argparse
import json
import queue
import subprocess
import sys
import threading
import time


def reader(stream, out):
    """Puts each JSON-RPC line of `stream` on `out`; None at its end."""
    for line in stream:
        line = line.strip()
        if not line:
            continue
        try:
            out.put(json.loads(line))
        except json.JSONDecodeError:
            sys.stderr.write(f"acp-drive: not JSON from the agent: {line[:200]}\n")
    out.put(None)


class Session:
    """One agent process and its JSON-RPC traffic."""

    def __init__(self, command, timeout):
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            text=True,
            bufsize=1,
        )
        self.inbox = queue.Queue()
        threading.Thread(target=reader, args=(self.proc.stdout, self.inbox), daemon=True).start()
        self.timeout = timeout
        self.next_id = 0
        self.updates = 0
        self.agent_text = []

    def send(self, message):
        message["jsonrpc"] = "2.0"
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def answer_request(self, message):
        """Answers a request the agent made of the client."""
        method = message.get("method")
        if method == "session/request_permission":
            options = message.get("params", {}).get("options", [])
            allow = next(
                (o for o in options if o.get("kind") in ("allow_once", "allow_always")),
                options[0] if options else None,
            )
            if allow is None:
                result = {"outcome": {"outcome": "cancelled"}}
            else:
                result = {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
            self.send({"id": message["id"], "result": result})
        else:
            self.send(
                {
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"not supported: {method}"},
                }
            )

    def note(self, message):
        """Keeps what a notification says."""
        if message.get("method") != "session/update":
            return
        self.updates += 1
        update = message.get("params", {}).get("update", {})
        if update.get("sessionUpdate") == "agent_message_chunk":
            content = update.get("content", {})
            if content.get("type") == "text":
                self.agent_text.append(content.get("text", ""))

    def call(self, method, params):
        """Sends a request and waits for its answer, serving the agent meanwhile."""
        self.next_id += 1
        call_id = self.next_id
        self.send({"id": call_id, "method": method, "params": params})
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"acp-drive: no answer to {method} within {self.timeout} s")
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise SystemExit(
                    f"acp-drive: the agent exited ({self.proc.wait()}) before answering {method}"
                )
            if "method" in message and "id" in message:
                self.answer_request(message)
            elif "method" in message:
                self.note(message)
            elif message.get("id") == call_id:
                if "error" in message:
                    raise SystemExit(f"acp-drive: {method} failed: {json.dumps(message['error'])}")
                return message.get("result")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cwd", default="/workspace/project")
    parser.add_argument("--prompt", default="run: echo acp-cloud")
    parser.add_argument("--no-prompt", action="store_true", help="stop once the session is open")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("the agent's command goes after --")

    session = Session(command, args.timeout)
    try:
        init = session.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False},
                    "terminal": False,
                },
                "clientInfo": {"name": "switchboard-acp-drive", "version": "1"},
            },
        )
        sys.stderr.write(f"acp-drive: initialized: protocol {init.get('protocolVersion')}\n")
        new = session.call("session/new", {"cwd": args.cwd, "mcpServers": []})
        session_id = new["sessionId"]
        sys.stderr.write(f"acp-drive: session {session_id}\n")
        stop_reason = None
        if not args.no_prompt:
            done = session.call(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": args.prompt}]},
            )
            stop_reason = (done or {}).get("stopReason")
    finally:
        session.close()
    print(
        json.dumps(
            {
                "session_id": session_id,
                "stop_reason": stop_reason,
                "updates": session.updates,
                "agent_messages": "".join(session.agent_text),
            }
        )
    )
    return 0 if stop_reason or args.no_prompt else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The browser walk of OpenHands' Agent Canvas against Switchboard (issue 25).

Drives Debian's chromium (never a browser of playwright's own: `executable_path`) through the
client served by Switchboard itself (`switchboard serve --web-client DIR`), with one "cloud"
backend registered as a user would in the client's Manage Backends dialog: Switchboard's
address and an API key (seeded into the client's local storage before its scripts run).

Steps, each asserted:
  list      `/` loads, the conversation list is fetched (200) and the backend's status dot
            says connected (`GET /api/keys/current` answered);
  llm-key   the member saves their LLM (model, base URL, API key) with the request the client's
            LLM page sends (`POST /api/v1/settings`, `agent_settings_diff.llm`), from the page:
            the client starts nothing before a key is saved;   [with --llm-model]
            without it (a server whose operator provides the LLM), the member's settings must
            already say an LLM is set: the home page shows no "isn't set up" warning;
  start     "say hello" typed on the home page and sent starts a conversation: the browser
            lands on `/conversations/{id}`, whose page shows the agent's reply (the fake
            LLM's closing message) and a finished state;       [--skip-start to leave out]
  reload    the conversation's page reloaded shows the reply again; the Files tab's list
            (`GET …/files?path=<the conversation's working directory>`) was answered 200;
  pages     the settings, LLM, secrets and profiles pages load.
Every request the page makes to Switchboard's origin is recorded with its status (websockets
with their outcome); any failed one (status >= 400, or no answer) fails the walk. Requests to
other origins are refused by the walk (this machine reaches no other host) and listed apart.

Writes --out (a Markdown table of every request, in order, with the step that made it) and
screenshots into --shots. Exit 0 when every check passed; 1 with the failures listed.

Usage: walk.py --base http://127.0.0.1:PORT --key sb_... [--chromium /usr/bin/chromium]
               [--out requests.md] [--shots DIR] [--skip-start] [--timeout 240]
               [--llm-model M --llm-base-url URL [--llm-api-key K]] [--allow-missing REGEX]
"""

import argparse
import json
import re
import sys
import time
import urllib.parse

# The fake LLM's closing message is "I ran `echo hello` and it printed hello. Done."; the page
# renders `echo hello` as code, so the walk looks for the plain text after it.
REPLY = "and it printed hello. Done."
PAGES = [
    ("settings", "/settings/app"),
    ("llm", "/settings/llm"),
    ("secrets", "/settings/secrets"),
    ("profiles", "/settings/agents"),
]


class Walk:
    def __init__(self, args):
        self.args = args
        self.base = args.base.rstrip("/")
        self.origin = urllib.parse.urlsplit(self.base)._replace(path="", query="", fragment="").geturl()
        self.step = "boot"
        self.records = []  # [step, method, path, status or error]
        self.external = []
        self.failures = []

    # ------------------------------------------------------------------ recording
    def same_origin(self, url):
        return url.startswith(self.origin + "/") or url == self.origin

    def path_of(self, url):
        parts = urllib.parse.urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def on_response(self, response):
        req = response.request
        if self.same_origin(req.url):
            self.records.append([self.step, req.method, self.path_of(req.url), response.status])

    def on_failed(self, request):
        if self.same_origin(request.url):
            self.records.append(
                [self.step, request.method, self.path_of(request.url), f"failed: {request.failure}"]
            )

    def on_websocket(self, ws):
        if not (ws.url.startswith("ws://") or ws.url.startswith("wss://")):
            return
        row = [self.step, "WS", self.path_of(ws.url.replace("ws", "http", 1)), "open"]
        self.records.append(row)
        ws.on("framereceived", lambda _f: row.__setitem__(3, "open, frames received") if row[3] == "open" else None)
        ws.on("socketerror", lambda e: row.__setitem__(3, f"failed: {e}"))
        ws.on("close", lambda _w: row.__setitem__(3, row[3] + ", closed") if not row[3].endswith("closed") else None)

    def route(self, route):
        url = route.request.url
        if self.same_origin(url) or url.startswith("data:") or url.startswith("blob:"):
            route.continue_()
        else:
            self.external.append([self.step, route.request.method, url])
            route.abort()

    # ------------------------------------------------------------------ checks
    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + f"[{self.step}] {what}", flush=True)
        if not ok:
            self.failures.append(f"[{self.step}] {what}")
        return ok

    def failed_requests(self, step):
        out = []
        for s, method, path, status in self.records:
            if s != step:
                continue
            if isinstance(status, int) and status < 400:
                continue
            if isinstance(status, str) and not status.startswith("failed"):
                continue
            # A request the client cancels while navigating away is not a failure of the
            # server (chromium reports it as net::ERR_ABORTED).
            if isinstance(status, str) and "ERR_ABORTED" in status:
                continue
            # Chromium drops requests in flight when the host's network interfaces change
            # (another test's namespace, say) and the client asks again: a failure only when
            # no later try in this step succeeded.
            if isinstance(status, str) and "ERR_NETWORK_CHANGED" in status and any(
                s2 == step and m2 == method and p2 == path and isinstance(st2, int) and st2 < 400
                for s2, m2, p2, st2 in self.records
            ):
                continue
            if any(re.search(rx, path) for rx in self.args.allow_missing):
                continue
            out.append(f"{method} {path} -> {status}")
        return out

    def saw(self, step, method, pattern, status=200):
        rx = re.compile(pattern)
        return any(
            s == step and m == method and rx.search(p) and st == status
            for s, m, p, st in self.records
        )

    def shot(self, page, name):
        if self.args.shots:
            page.screenshot(path=f"{self.args.shots}/{name}.png", full_page=False)

    def settle(self, page, ms=1500):
        try:
            page.wait_for_load_state("networkidle", timeout=15000)
        except Exception:
            pass
        page.wait_for_timeout(ms)

    # ------------------------------------------------------------------ steps
    def run(self):
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=self.args.chromium,
                headless=True,
                args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
            )
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(self.seed_script())
            context.route("**/*", self.route)
            page = context.new_page()
            page.on("response", self.on_response)
            page.on("requestfailed", self.on_failed)
            page.on("websocket", self.on_websocket)
            # Console errors, less the walk's own refusals of other origins (net::ERR_FAILED).
            page.on(
                "console",
                lambda m: m.type == "error"
                and "net::ERR_FAILED" not in m.text
                and print(f"  console[{self.step}]: {m.text[:300]}"),
            )
            try:
                self.list_step(page)
                if self.args.llm_model:
                    self.llm_step(page)
                if not self.args.skip_start:
                    conversation = self.start_step(page)
                    if conversation:
                        self.reload_step(page, conversation)
                self.pages_step(page)
            finally:
                context.close()
                browser.close()
        self.write_report()
        return not self.failures

    def seed_script(self):
        backend = {
            "id": "switchboard",
            "name": "Switchboard",
            "host": self.base,
            "apiKey": self.args.key,
            "kind": "cloud",
            "authMode": "api-key",
        }
        items = {
            "openhands-backends": json.dumps([backend]),
            "openhands-active-backend": json.dumps({"backendId": "switchboard"}),
            "openhands-onboarded": "true",
        }
        sets = "".join(
            f"if (localStorage.getItem({json.dumps(k)}) === null) localStorage.setItem({json.dumps(k)}, {json.dumps(v)});"
            for k, v in items.items()
        )
        # What the package's own static server injects for AGENT_CANVAS_DISABLE_TELEMETRY.
        return f"window.__AGENT_CANVAS_DO_NOT_TRACK__ = true; try {{ {sets} }} catch (e) {{}}"

    def list_step(self, page):
        self.step = "list"
        page.goto(self.base + "/", wait_until="domcontentloaded")
        self.settle(page, 3000)
        dot = page.locator('[data-testid="backend-status-dot"][data-status="connected"]')
        try:
            dot.first.wait_for(state="attached", timeout=20000)
            connected = True
        except Exception:
            connected = False
        self.check(self.saw("list", "GET", r"^/api/keys/current"), "GET /api/keys/current answered 200")
        self.check(connected, "the backend's status dot says connected")
        self.check(
            self.saw("list", "GET", r"^/api/v1/app-conversations/search"),
            "the conversation list was fetched (GET /api/v1/app-conversations/search 200)",
        )
        self.shot(page, "1-list")
        failed = self.failed_requests("list")
        self.check(not failed, f"no failed request while loading the list {failed}")

    def llm_step(self, page):
        self.step = "llm-key"
        body = {
            "agent_settings_diff": {
                "llm": {
                    "model": self.args.llm_model,
                    "base_url": self.args.llm_base_url,
                    "api_key": self.args.llm_api_key,
                }
            }
        }
        status = page.evaluate(
            """async ([base, key, body]) => {
                const r = await fetch(`${base}/api/v1/settings`, {method: "POST",
                    headers: {Authorization: `Bearer ${key}`, "Content-Type": "application/json"},
                    body: JSON.stringify(body)});
                return r.status;
            }""",
            [self.base, self.args.key, body],
        )
        self.check(status == 200, f"the member's LLM saved (POST /api/v1/settings: {status})")

    def start_step(self, page):
        self.step = "start"
        page.goto(self.base + "/", wait_until="domcontentloaded")
        self.settle(page)
        box = page.locator('[data-testid="chat-input"]').first
        if not self.check(box.count() > 0 or self.wait_for(box), "the home page has a chat input"):
            self.shot(page, "2-home")
            return None
        if not self.args.llm_model:
            # No key entered: the LLM a start would use (the operator's) is the member's.
            unset = page.get_by_text(re.compile(r"LLM isn.t set up")).count()
            self.check(unset == 0, "no \"LLM isn't set up\" warning without a key entered")
        box.click()
        page.keyboard.type("say hello")
        self.shot(page, "2-home-typed")
        send = page.locator('[data-testid="submit-button"]').first
        if send.count() and send.is_enabled():
            send.click()
        else:
            page.keyboard.press("Enter")
        try:
            page.wait_for_url(re.compile(r".*/conversations/[0-9a-fA-F-]{32,36}.*"), timeout=60000)
        except Exception:
            self.shot(page, "2-after-send")
            self.check(False, f"sending led to a conversation's page (still at {page.url})")
            return None
        conversation = re.search(r"/conversations/([0-9a-fA-F-]{32,36})", page.url).group(1)
        self.check(True, f"sending led to the conversation's page /conversations/{conversation}")
        replied = self.wait_text(page, REPLY, self.args.timeout)
        self.shot(page, "3-conversation")
        self.check(replied, "the conversation's page shows the agent's reply")
        finished = self.finished(page, conversation)
        self.check(finished, "the conversation is finished (its page and its record)")
        failed = self.failed_requests("start")
        self.check(not failed, f"no failed request while starting {failed}")
        return conversation

    def reload_step(self, page, conversation):
        self.step = "reload"
        page.reload(wait_until="domcontentloaded")
        self.settle(page, 3000)
        replied = self.wait_text(page, REPLY, 60)
        self.shot(page, "4-reloaded")
        self.check(replied, "after a reload the conversation's page still shows the reply")
        self.check(self.finished(page, conversation), "after a reload it still shows finished")
        failed = self.failed_requests("reload")
        self.check(not failed, f"no failed request after the reload {failed}")
        # The Files tab's list: asked with the conversation's own working directory (never the
        # client's fallback /workspace/project) and answered.
        files = r"^/api/v1/app-conversations/[^/]+/files\?path=%2F"
        self.check(
            self.saw("start", "GET", files) or self.saw("reload", "GET", files),
            "the Files tab's list was fetched (GET …/files?path=<working dir> 200)",
        )

    def pages_step(self, page):
        for name, path in PAGES:
            self.step = name
            page.goto(self.base + path, wait_until="domcontentloaded")
            self.settle(page, 2500)
            self.shot(page, f"5-{name}")
            ok = urllib.parse.urlsplit(page.url).path.startswith(path.split("?")[0])
            self.check(ok, f"{path} loaded (at {self.path_of(page.url)})")
            failed = self.failed_requests(name)
            self.check(not failed, f"no failed request on {path} {failed}")

    # ------------------------------------------------------------------ helpers
    def wait_for(self, locator, timeout=20000):
        try:
            locator.wait_for(state="visible", timeout=timeout)
            return True
        except Exception:
            return False

    def wait_text(self, page, text, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if page.get_by_text(text, exact=False).count() > 0:
                    return True
            except Exception:
                pass
            page.wait_for_timeout(1000)
        return False

    def finished(self, page, conversation):
        """The page shows a finished agent, and Switchboard holds the run as finished."""
        deadline = time.time() + 60
        while time.time() < deadline:
            answer = page.evaluate(
                """async ([base, key, id]) => {
                    const r = await fetch(`${base}/api/v1/app-conversations?ids=${id}`,
                        {headers: {Authorization: `Bearer ${key}`}});
                    return r.ok ? (await r.json())[0] : null;
                }""",
                [self.base, self.args.key, conversation],
            )
            status = (answer or {}).get("execution_status")
            # The client marks a finished conversation with a check in the list beside it.
            shown = page.locator('[data-testid="conversation-status-check"]').count() > 0
            if status == "finished" and shown:
                return True
            page.wait_for_timeout(1000)
        print(f"  execution_status {status}; finished mark on the page: {shown}")
        return False

    def write_report(self):
        lines = [
            "| # | step | method | path | status |",
            "| --- | --- | --- | --- | --- |",
        ]
        # The client's own files (`/assets/…`, hashed names) are one row per step: their count
        # and statuses; any that failed is listed by itself.
        rows, assets = [], {}
        for step, method, path, status in self.records:
            if path.startswith("/assets/") and status == 200:
                if step not in assets:
                    assets[step] = [step, method, "/assets/… (the client's files)", 0]
                    rows.append(assets[step])
                assets[step][3] += 1
            else:
                rows.append([step, method, path, status])
        for i, (step, method, path, status) in enumerate(rows, 1):
            shown = f"{status} × 200" if path.startswith("/assets/…") else status
            lines.append(f"| {i} | {step} | {method} | `{path}` | {shown} |")
        known = sorted(
            {
                f"{m} {p} -> {st}"
                for _s, m, p, st in self.records
                if not (isinstance(st, int) and st < 400)
                and any(re.search(rx, p) for rx in self.args.allow_missing)
            }
        )
        if known:
            lines += ["", "Failed but allowed (--allow-missing: not Switchboard's to answer):", ""]
            lines += [f"- {k}" for k in known]
        if self.external:
            lines += ["", "Requests to other origins, refused by the walk:", ""]
            lines += [f"- [{s}] {m} {u}" for s, m, u in self.external]
        if self.failures:
            lines += ["", "Failed checks:", ""] + [f"- {f}" for f in self.failures]
        text = "\n".join(lines) + "\n"
        if self.args.out:
            with open(self.args.out, "w") as f:
                f.write(text)
        print(f"{len(self.records)} requests recorded" + (f" in {self.args.out}" if self.args.out else ""))


def main():
    parser = argparse.ArgumentParser(description="Agent Canvas against Switchboard, in chromium")
    parser.add_argument("--base", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out")
    parser.add_argument("--shots")
    parser.add_argument("--skip-start", action="store_true")
    parser.add_argument("--llm-model", help="the member's LLM model, saved before the start")
    parser.add_argument("--llm-base-url")
    parser.add_argument("--llm-api-key", default="fake-key")
    parser.add_argument("--timeout", type=int, default=240)
    parser.add_argument(
        "--allow-missing",
        action="append",
        default=[],
        metavar="REGEX",
        help="a path (regex) whose failure is reported apart and does not fail the walk",
    )
    args = parser.parse_args()
    ok = Walk(args).run()
    print("walk passed" if ok else "walk FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Distinct failures of a Schemathesis run, classified (used by scripts/fuzz-api.sh).

Reads the NDJSON event report of `st run --report ndjson` (every test case, its checks and its
request/response), not the console summary: the console folds failures of the stateful phase
away (a 500 seen only there is not printed), the NDJSON keeps every one.

A failure is distinct by (operation, failure code, status, reason), where the reason is the
`type@loc` of the first entry of a FastAPI-style 422 body, or the body of any other 4xx/5xx.
For each it prints the class, code, status, operation, title, how many test cases hit it, a
curl reproduction ($KEY / $SESSION stand for the filtered X-Access-Token and
X-Session-API-Key; $BASE for the server's address) and the server's body:

    class  code   status  operation  -- title  (N cases)
        curl …
        body …

Classes (issue 7, "Done when"):
    a  5xx (ST101, ST102, or any 5xx status)
    b  a request valid by the document that the server rejects (ST202): the document
       under-states a rule
    c  a response that does not match the document: status, content type, headers or schema
       (ST103-ST115), or the answer to an undeclared method (ST204, ST205)
    d  a request the document forbids that the server accepts (ST201, ST203)
    e  stateful behaviour (ST3xx: use after free, resource availability, auth)

Usage: fuzz_summary.py REPORT.ndjson [--markdown]
Prints nothing when the run had no failure. Standard library only.
"""

import base64
import json
import shlex
import sys
import urllib.parse

SECRETS = {"x-access-token": "$KEY", "x-session-api-key": "$SESSION", "authorization": "Bearer $KEY"}


def classify(code: str, status: int | None) -> str:
    """Class letter of a failure (see the module docstring)."""
    n = int(code[2:]) if code[2:].isdigit() else 0
    if code in ("ST101", "ST102") or (status or 0) >= 500:
        return "a"
    if code == "ST202":
        return "b"
    if 103 <= n <= 115 or code in ("ST204", "ST205"):
        return "c"
    if code in ("ST201", "ST203"):
        return "d"
    return "e"


def decode(blob) -> str:
    """Text of a report body ({"$base64": …} or a string); "" when absent."""
    if blob is None:
        return ""
    if isinstance(blob, dict) and "$base64" in blob:
        return base64.b64decode(blob["$base64"]).decode("utf-8", "replace")
    return blob if isinstance(blob, str) else json.dumps(blob)


def reason(status: int | None, body: str) -> str:
    """What tells two failures of one code and status apart."""
    if status is None or status < 400:
        return ""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        return body[:80]
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        d = detail[0]
        return f"{d.get('type')}@{'.'.join(str(x) for x in d.get('loc', []))}"
    return str(detail)[:80]


def curl(request: dict) -> str:
    """A curl command line for a recorded request."""
    parts = ["curl", "-sS", "-i", "-X", request["method"]]
    for name, values in (request.get("headers") or {}).items():
        if name.lower() in ("user-agent", "accept-encoding", "accept", "connection", "content-length") \
                or name.lower().startswith("x-schemathesis"):
            continue
        for v in values if isinstance(values, list) else [values]:
            v = SECRETS.get(name.lower(), v) if v == "[Filtered]" else v
            parts += ["-H", f"{name}: {v}"]
    body = decode(request.get("body"))
    if body:
        parts += ["--data-binary", body]
    u = urllib.parse.urlsplit(request["uri"])
    parts.append("$BASE" + urllib.parse.urlunsplit(("", "", u.path, u.query, "")))
    out = []
    for p in parts:
        # Keep the placeholders expandable: double quotes around them, single quotes otherwise.
        if "$KEY" in p or "$SESSION" in p or p.startswith("$BASE"):
            out.append('"' + p.replace('"', '\\"') + '"')
        else:
            out.append(shlex.quote(p))
    return " ".join(out)


def parse(path: str) -> tuple[list[dict], dict]:
    """Distinct failures in the order they first occurred, and run totals."""
    failures: dict[tuple, dict] = {}
    totals = {"cases": 0, "5xx": 0}
    with open(path, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            sf = event.get("ScenarioFinished")
            if not sf:
                continue
            rec = sf.get("recorder") or {}
            interactions = rec.get("interactions") or {}
            for case_id, checks in (rec.get("checks") or {}).items():
                totals["cases"] += 1
                inter = interactions.get(case_id) or {}
                resp = inter.get("response") or {}
                status = resp.get("status_code")
                if (status or 0) >= 500:
                    totals["5xx"] += 1
                for check in checks:
                    if check.get("status") != "failure":
                        continue
                    info = (check.get("failure_info") or {}).get("failure") or {}
                    code = info.get("code") or check.get("name")
                    op = info.get("operation") or rec.get("label")
                    if code == "ST204" and " " in op:
                        # The operation names a declared method; the request used another
                        # (its curl line shows which): one entry per path.
                        op = f"(undeclared method) {op.split(' ', 1)[1]}"
                    body = decode(resp.get("content"))
                    key = (op, code, status, reason(status, body))
                    if key in failures:
                        failures[key]["count"] += 1
                        continue
                    failures[key] = {
                        "op": op, "code": code, "title": info.get("title", check.get("name")),
                        "status": status, "count": 1, "phase": sf.get("phase"),
                        "curl": curl(inter["request"]) if inter.get("request") else "",
                        "body": " ".join(body.split())[:200],
                        "class": classify(code, status),
                    }
    return list(failures.values()), totals


def main() -> None:
    failures, totals = parse(sys.argv[1])
    markdown = "--markdown" in sys.argv[2:]
    if markdown and failures:
        print("| class | code | status | operation | failure | cases | reproduction |")
        print("|---|---|---|---|---|---|---|")
    for f in sorted(failures, key=lambda f: (f["class"], f["op"], f["code"], f["status"] or 0)):
        if markdown:
            repro = f["curl"] if len(f["curl"]) < 300 else f["curl"][:300] + " …"
            print(f"| {f['class']} | {f['code']} | {f['status']} | `{f['op']}` | {f['title']} "
                  f"| {f['count']} | `{repro.replace('|', '%7C')}` |")
        else:
            print(f"  {f['class']}  {f['code']}  {f['status'] or '---'}  {f['op']}  -- {f['title']}"
                  f"  ({f['count']} cases, first in {f['phase']})")
            repro = f["curl"] if len(f["curl"]) < 500 else f["curl"][:500] + " …"
            print(f"        {repro}")
            if f["body"]:
                print(f"        body {f['body']}")
    if not markdown:
        print(f"  {totals['cases']} test cases, {totals['5xx']} answered 5xx, "
              f"{len(failures)} distinct failures")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The live delivery checks of `just e2e-main` (run by scripts/demo.sh with LLM_STREAM=1, after
the first run of the conversation reached `finished` and before scripts/e2e/main_checks.py),
against the real agent server whose LLM streams (`serve --llm-stream`, the fake LLM answering
SSE). Two live subscribers, one per protocol (`/sockets/session/{id}` and `/sockets/events/{id}`,
authenticated with `X-Access-Token`), then, in order:

  1. both receive the agent server's `full_state` as a transient frame: the relay to the
     agent server's own socket is up;
  2. a `Message` frame ("reply: <text>", which the fake LLM answers with <text>, word by word,
     and no tool call) sent over the session socket starts a run: the user `MessageEvent` is
     stored (a durable frame on both sockets) and agent events follow;
  3. `StreamingDeltaEvent` frames (transient envelopes on the session socket) arrive before
     the final agent `MessageEvent`, and their `content` put together is its text;
  4. the final agent `MessageEvent` and `execution_status` = `finished` arrive as durable
     (stored) events;
  5. a subscriber connecting afterwards with the whole history (`after_seq=-1`, and
     `resend_mode=all` on /sockets/events) gets that `MessageEvent` from the history and no
     delta; the event search holds no `StreamingDeltaEvent` either.

Needs the `websockets` package (the agent server's venv has it).
Usage: live_checks.py BASE_URL API_KEY TASK_ID [TIMEOUT_SECONDS]
Prints one PASS line per check; exits non-zero with a "CHECK FAILED: ..." line and the frames
seen, in order, on the first failed check.
"""

import json
import sys
import threading
import time
import urllib.request

from websockets.sync.client import connect

BASE, KEY, TASK_ID = sys.argv[1:4]
TIMEOUT = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
WS_BASE = BASE.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
REPLY = "streamed hello from the fake model through Switchboard"
T0 = time.monotonic()


def get(path):
    req = urllib.request.Request(BASE + path, headers={"X-Access-Token": KEY})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


class Subscriber:
    """One websocket to Switchboard; a thread records every frame with its arrival time."""

    def __init__(self, name, path):
        self.name = name
        self.frames = []  # (seconds since start, parsed frame)
        self.cond = threading.Condition()
        self.closed = None
        self.ws = connect(WS_BASE + path, additional_headers={"X-Access-Token": KEY},
                          open_timeout=30, max_size=None)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for raw in self.ws:
                frame = json.loads(raw)
                with self.cond:
                    self.frames.append((time.monotonic() - T0, frame))
                    self.cond.notify_all()
        except Exception as e:  # the close, or a failure: recorded for the report
            self.closed = repr(e)
        with self.cond:
            self.closed = self.closed or "closed"
            self.cond.notify_all()

    def wait(self, what, pred, timeout=TIMEOUT):
        """Waits until pred(list of (transient?, event, seq)) is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = pred(self.items())
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    fail(f"{self.name}: {what} (socket: {self.closed or 'open'})")
                self.cond.wait(min(left, 1.0))

    def items(self):
        """(kind of frame, event, seq): kind is 'durable', 'transient' or, on /sockets/events
        where frames carry no envelope, 'event'; control envelopes have event None."""
        out = []
        for _, f in list(self.frames):
            if "type" in f and "kind" not in f:
                out.append((f["type"], f.get("event"), f.get("seq")))
            else:
                out.append(("event", f, None))
        return out

    def send(self, obj):
        self.ws.send(json.dumps(obj))

    def close(self):
        self.ws.close()


SUBSCRIBERS = []


def describe(sub):
    """The frames of a subscriber in order, runs of the same kind collapsed: `T` transient,
    `D` durable, `E` a frame of /sockets/events."""
    parts = []
    for kind, ev, seq in sub.items():
        tag = {"transient": "T", "durable": "D", "event": "E"}.get(kind, kind)
        if ev is None:
            label = tag
        else:
            label = f"{tag}:{ev.get('kind')}"
            if ev.get("kind") == "ConversationStateUpdateEvent":
                label += f"[{ev.get('key')}" + (
                    f"={ev.get('value')}" if ev.get("key") == "execution_status" else "") + "]"
            elif ev.get("kind") == "MessageEvent":
                label += f"({ev.get('source')})"
        if parts and parts[-1][0] == label:
            parts[-1][1] += 1
        else:
            parts.append([label, 1])
    return " ".join(lbl + (f" x{n}" if n > 1 else "") for lbl, n in parts)


def fail(msg):
    print(f"CHECK FAILED: {msg}")
    for sub in SUBSCRIBERS:
        print(f"  frames on {sub.name}: {describe(sub)}")
    sys.exit(1)


def text_of(ev):
    msg = (ev or {}).get("llm_message") or {}
    return " ".join(p.get("text", "") for p in msg.get("content") or [] if isinstance(p, dict))


def is_kind(ev, kind, source=None):
    return bool(ev) and ev.get("kind") == kind and (source is None or ev.get("source") == source)


def is_delta(ev):
    return is_kind(ev, "StreamingDeltaEvent")


task = get(f"/api/v1/app-conversations/start-tasks?ids={TASK_ID}")[0]
cid = task["app_conversation_id"]
prompt = f"reply: {REPLY}"

# 1. two live subscribers; the relay's full_state shows the agent server's socket is up
session = Subscriber("/sockets/session", f"/sockets/session/{cid}")
SUBSCRIBERS.append(session)
events = Subscriber("/sockets/events", f"/sockets/events/{cid}")
SUBSCRIBERS.append(events)
session.wait("no transient full_state from the agent server (the relay did not connect)",
             lambda items: any(k == "transient" and is_kind(e, "ConversationStateUpdateEvent")
                               for k, e, _ in items), timeout=60)
# /sockets/events: Switchboard's own full_state first, then the relayed one.
events.wait("no second full_state (the relay's) on /sockets/events",
            lambda items: sum(1 for _, e, _ in items if is_kind(e, "ConversationStateUpdateEvent")
                              and e.get("key") == "full_state") >= 2, timeout=60)
print(f"1. relay up: both live subscribers got the agent server's full_state as a transient "
      f"frame ({time.monotonic() - T0:.1f} s)")

# 2. a Message over the socket starts a run
sent_at = time.monotonic() - T0
session.send({"role": "user", "content": [{"type": "text", "text": prompt}]})


def user_message(items):
    for i, (k, e, seq) in enumerate(items):
        if is_kind(e, "MessageEvent", "user") and prompt in text_of(e) and k in ("durable", "event"):
            return i + 1, seq
    return None


u_idx, u_seq = session.wait("the user message sent over the socket was not stored", user_message)
events.wait("the user message sent over the socket did not reach /sockets/events", user_message)
print(f"2. Message over the session socket: the user MessageEvent stored at seq {u_seq}, "
      f"{time.monotonic() - T0 - sent_at:.1f} s after sending")


# 3./4. deltas before the final agent MessageEvent, which is durable, then `finished`
def final_message(items):
    for i, (k, e, seq) in enumerate(items):
        if i >= u_idx and is_kind(e, "MessageEvent", "agent") and k in ("durable", "event"):
            return i, e, seq
    return None


def finished_after(start):
    return lambda items: any(k in ("durable", "event") and is_kind(e, "ConversationStateUpdateEvent")
                             and e.get("key") == "execution_status" and e.get("value") == "finished"
                             for k, e, _ in items[start:])


results = {}
for sub in (session, events):
    f_idx, final, f_seq = sub.wait("no final agent MessageEvent arrived", final_message)
    sub.wait("no execution_status = finished after the final MessageEvent", finished_after(f_idx))
    items = sub.items()
    run = items[u_idx if sub is session else 0:f_idx]
    deltas = [e for k, e, _ in run if is_delta(e)]
    if sub is session and any(k != "transient" for k, e, _ in run if is_delta(e)):
        fail("a StreamingDeltaEvent arrived in a durable envelope")
    if not deltas:
        fail(f"{sub.name}: no StreamingDeltaEvent before the final agent MessageEvent")
    streamed = "".join(d.get("content") or "" for d in deltas)
    if text_of(final) != REPLY:
        fail(f"{sub.name}: the final MessageEvent says {text_of(final)!r}, not {REPLY!r}")
    if streamed != REPLY:
        fail(f"{sub.name}: the deltas put together say {streamed!r}, not {REPLY!r}")
    late = [e for k, e, _ in items[f_idx:] if is_delta(e)]
    first = next(i for i, (_, e, _) in enumerate(items) if is_delta(e))
    sub.timing = (sub.frames[first][0] - sent_at, sub.frames[f_idx][0] - sent_at)
    results[sub.name] = (len(deltas), len(late), final, f_seq)
n_s, late_s, final, f_seq = results["/sockets/session"]
n_e, late_e, final_e, _ = results["/sockets/events"]
if final_e.get("id") != final.get("id"):
    fail("the two sockets name different final MessageEvents")
print(f"3. {n_s} transient StreamingDeltaEvent frames on /sockets/session and {n_e} on "
      f"/sockets/events arrived before the final agent MessageEvent; together they say {REPLY!r}"
      + (f" ({late_s}/{late_e} more after it)" if late_s or late_e else "")
      + "; after sending, first delta / final MessageEvent at "
      + ", ".join(f"{a:.2f} s / {b:.2f} s ({s.name})" for s in (session, events)
                  for a, b in [s.timing]))
print(f"4. the final agent MessageEvent is durable (seq {f_seq}, id {final.get('id')}), then "
      f"execution_status = finished")
session.close()
events.close()

# 5. a later subscriber with the whole history: the final MessageEvent, no delta
late_session = Subscriber("/sockets/session?after_seq=-1", f"/sockets/session/{cid}?after_seq=-1")
SUBSCRIBERS.append(late_session)
sync = late_session.wait("no sync envelope", lambda items: next(
    (True for k, _, _ in items if k == "sync"), None))
through = next(f for _, f in late_session.frames if f.get("type") == "sync")["through_seq"]
late_session.wait(f"the history did not reach seq {through}", lambda items: any(
    k == "durable" and s == through for k, _, s in items))
history = [(k, e, s) for k, e, s in late_session.items() if k == "durable"]
if not any(e.get("id") == final["id"] and s == f_seq for _, e, s in history):
    fail(f"the final MessageEvent is not in the history replay (after_seq=-1) at seq {f_seq}")
late_events = Subscriber("/sockets/events?resend_mode=all", f"/sockets/events/{cid}?resend_mode=all")
SUBSCRIBERS.append(late_events)
late_events.wait("the final MessageEvent is not in the history (resend_mode=all)",
                 lambda items: any(e and e.get("id") == final["id"] for _, e, _ in items))
time.sleep(1.0)  # anything still coming would be live, not history
for sub in (late_session, late_events):
    if any(is_delta(e) for _, e, _ in sub.items()):
        fail(f"{sub.name}: a StreamingDeltaEvent was replayed")
stored, page = [], None
while True:
    out = get(f"/api/v1/conversation/{cid}/events/search?limit=100"
              + (f"&page_id={page}" if page else ""))
    stored += out["items"]
    page = out.get("next_page_id")
    if not page:
        break
if any(is_delta(e) for e in stored):
    fail("a StreamingDeltaEvent is stored")
late_session.close()
late_events.close()
print(f"5. a later subscriber (after_seq=-1: {len(history)} durable events; resend_mode=all) gets "
      f"the final MessageEvent from the history and no delta; none of the {len(stored)} stored "
      "events is a delta")
for sub in SUBSCRIBERS:
    print(f"  frames on {sub.name}: {describe(sub)}")
print("SWITCHBOARD E2E LIVE DELIVERY: PASS")

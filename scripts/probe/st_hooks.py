"""Schemathesis hooks of scripts/fuzz-api.sh (loaded through SCHEMATHESIS_HOOKS).

One hook, `filter_failure`: a "schema-valid request rejected" failure (ST202) is kept only when
the request as sent is valid by the document, in its path and its query.

Why: in the stateful phase Schemathesis 4.32.5 fills parameters from values its inferred links
copy out of earlier responses, and a link can copy `null`s. Two runs of CI met it:
  - `POST /api/v1/app-conversations/stream-start` answers start tasks whose
    `app_conversation_id` is still `null`; the inferred link into the required `ids` query of
    `GET /api/v1/app-conversations` gave `ids = None`, so the request went out with no `ids`
    at all, and the server's 422 "Field required" was reported as a valid request rejected.
    Schemathesis re-checks a case's containers after a link edits them only for the
    containers its generator filled (`meta.components`); the query here came from the link
    alone, so the case kept its positive label.
  - the same kind of link put `None` into the `conversation_id` path of
    `…/send-message`. That one the document now settles by itself: ids carry the pattern of
    the accepted forms, so `None` is invalid by the document and Schemathesis labels the case
    negative.
The hook judges the request that was sent: a `None` in the query is a parameter left out, a
`None` in a path or inside a list is the text `None`. When that request violates the
document, the positive label was wrong and the failure is not the server's. Every failure
dropped is recorded, one JSON line each, in $SWITCHBOARD_FUZZ_DROPPED when set, so that a
report shows what was set aside and why.

Self-test: `python st_hooks.py OPENAPI.json` (run by scripts/fuzz-api.sh on the served document
before Schemathesis starts).
"""

import json
import os
import sys

import jsonschema_rs
import schemathesis

_VALIDATORS = {}


def _validator(schema):
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = jsonschema_rs.validator_for(schema)
    return _VALIDATORS[key]


def _as_sent(value):
    """A parameter's value as the request carried it (`None` went out as the text `None`)."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return [_as_sent(v) for v in value]
    return value


def sent_violations(case):
    """The containers (`path`, `query`) of `case` whose sent form the document refuses."""
    found = []
    containers = (
        ("path", case.path_parameters, case.operation.path_parameters, True),
        ("query", case.query, case.operation.query, False),
    )
    for name, values, parameters, none_is_text in containers:
        if not values:
            values = {}
        sent = {
            key: _as_sent(value)
            for key, value in dict(values).items()
            if value is not None or none_is_text
        }
        schema = getattr(parameters, "validation_schema", None)
        if schema is None:
            continue
        if not _validator(schema).is_valid(sent):
            found.append({"container": name, "sent": sent})
    return found


def why_dropped(failure, case):
    """The reasons to drop `failure` of `case`: the containers a request that got an ST202
    violated as sent; empty (keep it) for any other failure or a request valid as sent."""
    if getattr(failure, "code", None) != "ST202":
        return []
    return sent_violations(case)


def keep(failure, case):
    """Whether to keep `failure` of `case`."""
    return not why_dropped(failure, case)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    violations = why_dropped(failure, case)
    if not violations:
        return True
    path = os.environ.get("SWITCHBOARD_FUZZ_DROPPED")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            record = {
                "code": failure.code,
                "operation": case.operation.label,
                "status": response.status_code,
                "why": "the request as sent is not valid by the document",
                "violations": violations,
            }
            f.write(json.dumps(record, default=str) + "\n")
    return False


def _self_test(document_path):
    """Both failures CI met are dropped; the same requests with real ids are kept."""
    with open(document_path, encoding="utf-8") as f:
        schema = schemathesis.openapi.from_dict(json.load(f))

    class St202:
        code = "ST202"

    class St101:
        code = "ST101"

    uuid = "0ab2e2bb-c820-4933-8b28-222c9733efa0"
    batch = schema["/api/v1/app-conversations"]["GET"]
    send = schema["/api/v1/app-conversations/{conversation_id}/send-message"]["POST"]
    body = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    cases = [
        (batch.Case(query={"ids": None}), False),
        (batch.Case(query={"ids": [None, None]}), False),
        (batch.Case(query={}), False),
        (batch.Case(query={"ids": [uuid]}), True),
        (send.Case(path_parameters={"conversation_id": None}, body=body), False),
        (send.Case(path_parameters={"conversation_id": uuid}, body=body), True),
    ]
    for case, kept in cases:
        got = keep(St202(), case)
        assert got == kept, f"{case.operation.label} {case.path_parameters} {case.query}: kept={got}"
        assert keep(St101(), case), "only ST202 is ever dropped"
    print(f"st_hooks self-test: {len(cases)} cases as expected")


if __name__ == "__main__":
    _self_test(sys.argv[1])

#!/usr/bin/env python3
"""Regenerates crates/domain/data/llm_catalog.json, the LLM model catalog Switchboard serves at
`GET /api/v1/config/models/search` and `/providers/search` (docs/API.md, Model and provider
catalogs).

Sources, both wheels from PyPI fetched with pip (no other network):
- LiteLLM's model list as the `litellm` package ships it
  (`litellm/model_prices_and_context_window_backup.json`): every entry whose `mode` is `chat`
  or `responses` (the models an agent can talk to), as `provider/name`;
- the models OpenHands verifies, from the `openhands-sdk` package
  (`openhands/sdk/llm/utils/verified_models.py`, `VERIFIED_MODELS`), the same version as the
  agent server Switchboard runs. The `openhands` provider (OpenHands' own hosted proxy) is
  left out: Switchboard does not serve it.

A model's provider is the prefix of LiteLLM's key when it has one (`vertex_ai/…`), else its
`litellm_provider` as LiteLLM routes it (`bedrock_converse` -> `bedrock`, `vertex_ai-*` ->
`vertex_ai`, `cohere_chat` -> `cohere`). A verified model missing from LiteLLM's list is added.

Usage: python3 scripts/llm-catalog.py [--litellm VERSION] [--openhands-sdk VERSION]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

LITELLM = "1.110.2"
OPENHANDS_SDK = "1.58.2"
OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/domain/data/llm_catalog.json"
MODES = {"chat", "responses"}
PROVIDER_ALIASES = {"bedrock_converse": "bedrock", "cohere_chat": "cohere", "amazon_nova": "amazon-nova"}


def wheel(package: str, version: str, into: str) -> zipfile.ZipFile:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
         f"{package}=={version}", "-d", into],
        check=True,
    )
    name = package.replace("-", "_")
    found = sorted(pathlib.Path(into).glob(f"{name}-{version}-*.whl"))
    if not found:
        sys.exit(f"no wheel of {package} {version} in {into}")
    return zipfile.ZipFile(found[0])


def provider_of(key: str, entry: dict) -> tuple[str, str] | None:
    if "/" in key:
        prefix, name = key.split("/", 1)
        return prefix, name
    provider = entry.get("litellm_provider")
    if not isinstance(provider, str) or not provider:
        return None
    if provider.startswith("vertex_ai"):
        provider = "vertex_ai"
    return PROVIDER_ALIASES.get(provider, provider), key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--litellm", default=LITELLM)
    parser.add_argument("--openhands-sdk", default=OPENHANDS_SDK)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        prices = json.loads(
            wheel("litellm", args.litellm, tmp).read(
                "litellm/model_prices_and_context_window_backup.json"
            )
        )
        verified_src = wheel("openhands-sdk", args.openhands_sdk, tmp).read(
            "openhands/sdk/llm/utils/verified_models.py"
        )
    namespace: dict = {}
    exec(compile(verified_src, "verified_models.py", "exec"), namespace)  # plain lists of names
    verified = {
        provider: set(names)
        for provider, names in namespace["VERIFIED_MODELS"].items()
        if provider != "openhands"
    }
    models: set[tuple[str, str]] = set()
    for key, entry in prices.items():
        if not isinstance(entry, dict) or entry.get("mode") not in MODES:
            continue
        split = provider_of(key, entry)
        if split and split[1]:
            models.add(split)
    for provider, names in verified.items():
        models.update((provider, name) for name in names)
    rows = [
        [provider, name, name in verified.get(provider, set())]
        for provider, name in sorted(models)
    ]
    catalog = {
        "source": f"litellm {args.litellm} (model_prices_and_context_window_backup.json), "
        f"openhands-sdk {args.openhands_sdk} (VERIFIED_MODELS); scripts/llm-catalog.py",
        "litellm": args.litellm,
        "openhands_sdk": args.openhands_sdk,
        "verified_providers": sorted(verified),
        "models": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as f:
        f.write("{\n")
        for field in ("source", "litellm", "openhands_sdk", "verified_providers"):
            f.write(f"  {json.dumps(field)}: {json.dumps(catalog[field])},\n")
        f.write('  "models": [\n')
        f.write(",\n".join("    " + json.dumps(r) for r in rows))
        f.write("\n  ]\n}\n")
    print(f"{OUT}: {len(rows)} models, {len({r[0] for r in rows})} providers")


if __name__ == "__main__":
    main()

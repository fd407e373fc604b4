//! The public endpoints of LLM providers (issue 38): where a key whose owner set no base URL
//! is sent, by the model's LiteLLM provider prefix. Never a loopback or private address.
//!
//! The agent's LiteLLM is given the pass-through's address as `api_base`. It formats the
//! request for the provider and sends it to that address plus the path it appends to a custom
//! `api_base`; the pass-through forwards it to the upstream plus that same path (and query).
//! So the endpoint of a provider is the URL `E` for which `E` + that path is the URL LiteLLM
//! sends to when given no `api_base` at all: usually LiteLLM's own default `api_base`, but not
//! always (Mistral, MiniMax, Anthropic and Gemini, below).
//!
//! Read from the source of `litellm` 1.105.7, the newest release `openhands-sdk` 1.58.2 accepts
//! (`litellm>=1.93.0,<1.106`), checked against 1.93.0 where noted; the `openhands/` and
//! `digitalocean/` prefixes are the SDK's own (`openhands/sdk/llm/utils/openhands_provider.py`).
//!
//! | prefix | endpoint | path LiteLLM appends | key in |
//! | --- | --- | --- | --- |
//! | `openai` (and bare `gpt-…`, `o1`/`o3`/`o4…`, `chatgpt-…`, `codex-…`) | `https://api.openai.com/v1` | `/chat/completions`, `/responses` | `Authorization: Bearer` |
//! | `anthropic` (and bare `claude-…`) | `https://api.anthropic.com` | `/v1/messages` | `x-api-key` |
//! | `gemini` | `https://generativelanguage.googleapis.com/v1beta`, `…/v1alpha` for Gemini 3 and newer | `/models/{model}:generateContent`, `…:streamGenerateContent?alt=sse` | `x-goog-api-key` |
//! | `mistral` | `https://api.mistral.ai` | `/v1/chat/completions` | `Authorization: Bearer` |
//! | `groq` | `https://api.groq.com/openai/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `deepseek` | `https://api.deepseek.com/beta` | `/chat/completions` | `Authorization: Bearer` |
//! | `openrouter` | `https://openrouter.ai/api/v1` | `/chat/completions`, `/responses` | `Authorization: Bearer` |
//! | `xai` | `https://api.x.ai/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `together_ai` | `https://api.together.ai/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `fireworks_ai` | `https://api.fireworks.ai/inference/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `cerebras` | `https://api.cerebras.ai/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `deepinfra` | `https://api.deepinfra.com/v1/openai` | `/chat/completions` | `Authorization: Bearer` |
//! | `perplexity` | `https://api.perplexity.ai` | `/chat/completions` | `Authorization: Bearer` |
//! | `moonshot` | `https://api.moonshot.ai/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `minimax` | `https://api.minimax.io` | `/v1/chat/completions` | `Authorization: Bearer` |
//! | `openhands` (SDK: LiteLLM's `litellm_proxy`) | `https://llm-proxy.app.all-hands.dev` | `/chat/completions`, `/responses` | `Authorization: Bearer` |
//! | `digitalocean` (SDK: LiteLLM's `openai`) | `https://inference.do-ai.run/v1` | `/chat/completions` | `Authorization: Bearer` |
//! | `azure` | none: the URL is the deployment's | | `api-key` |
//! | `litellm_proxy`, `hosted_vllm` | none: the owner's own server | | `Authorization: Bearer` |
//!
//! Where it is in LiteLLM 1.105.7 (`litellm/…`):
//!
//! - OpenAI-compatible providers: `litellm_core_utils/get_llm_provider_logic.py`
//!   `_get_openai_compatible_provider_info` sets the default `api_base` (groq 628, deepinfra
//!   620, perplexity 608, cerebras 658, deepseek 723, fireworks_ai 732, litellm_proxy 753,
//!   mistral 759, xai 770, together_ai 780, moonshot 846), a given `api_base` kept as is, but
//!   for Mistral, which appends `/v1` unless it ends so (`llms/mistral/chat/transformation.py`
//!   209-219). The URL is `api_base` + `/chat/completions`: the OpenAI client's `base_url`
//!   (`main.py` `_complete_custom_openai` 2606-2632 for openai, cerebras, deepinfra, perplexity,
//!   litellm_proxy, moonshot; `llms/openai/openai.py` 428-439) or
//!   `OpenAIGPTConfig.get_complete_url` (`llms/openai/chat/gpt_transformation.py` 717-743, for
//!   groq, xai, together_ai, fireworks_ai, openrouter, mistral), which skips the append when
//!   `api_base` already holds `chat/completions`; deepseek's and moonshot's own
//!   `get_complete_url` likewise (`llms/deepseek/chat/transformation.py` 354-372,
//!   `llms/moonshot/chat/transformation.py` 77-95). MiniMax appends `/v1/chat/completions` to
//!   a base not ending in `/v1` (`llms/minimax/chat/transformation.py` 44-68; default
//!   `https://api.minimax.io/v1`, `main.py` 2536). The key is `Authorization: Bearer`
//!   (`gpt_transformation.py` 745-757; fireworks `llms/fireworks_ai/common_utils.py` 92-106).
//! - OpenAI's default: `main.py` 1061-1081 (`https://api.openai.com/v1`); the Responses API
//!   appends `/responses` (`llms/openai/responses/transformation.py` 639-656; LiteLLM proxy
//!   `llms/litellm_proxy/responses/transformation.py` 25-45; OpenRouter
//!   `llms/openrouter/responses/transformation.py` 62-72). OpenRouter's default: `main.py` 3476.
//! - Anthropic: `main.py` 2919-2931: the default is `https://api.anthropic.com/v1/messages`, a
//!   given `api_base` gets `/v1/messages` unless it ends so. The key goes in `x-api-key`
//!   (`llms/anthropic/common_utils.py` 983-990, 1054-1067); only an OAuth token (`sk-ant-oat…`)
//!   or the `use_bearer_for_custom_base` parameter, which the SDK does not set, use `Bearer`.
//! - Gemini: `main.py` 6019 and 3742; the default URL is
//!   `https://generativelanguage.googleapis.com/{v1beta|v1alpha}/models/{model}:{endpoint}`
//!   (`llms/vertex_ai/common_utils.py` 559-600), `v1alpha` when
//!   `VertexGeminiConfig._is_gemini_3_or_newer`
//!   (`llms/vertex_ai/gemini/vertex_and_google_ai_studio_gemini.py` 285-298); a given
//!   `api_base` becomes
//!   `{api_base}/models/{model}:{endpoint}`, `?alt=sse` added when streaming
//!   (`llms/vertex_ai/vertex_llm_base.py` 655-666, 693-697). The key is `x-goog-api-key` both
//!   ways (`vertex_llm_base.py` 666, 734), never `?key=`. So the endpoint depends on the model:
//!   [`public_endpoint`] reproduces 1.105.7's rule. LiteLLM 1.93.0 chose `v1alpha` only for
//!   names holding `gemini-3`; the two differ for names such as `gemini-4-…` and
//!   `gemini-flash-latest` (1.105.7: `v1alpha`; 1.93.0: `v1beta`).
//! - Bare names: `get_llm_provider_logic.py` 411-530 look the name up in LiteLLM's model list
//!   (OpenAI's `gpt-…`, `o…`, `chatgpt-…` names; Anthropic's `claude-…`) and, failing that,
//!   in its routing rules (`claude-<family>-<n>…` to anthropic). A bare Gemini name goes to
//!   Vertex AI, not to `gemini/`.
//! - None: ollama, llamafile, lm_studio, vllm/hosted_vllm, litellm_proxy, custom_openai and
//!   openai_like have no fixed host (or a loopback default such as ollama's
//!   `http://localhost:11434`, `get_llm_provider_logic.py` 684); azure is per deployment;
//!   bedrock, sagemaker and vertex_ai sign requests with cloud credentials rather than a key.
//!
//! The path a provider appends is what the pass-through forwards, so its address must end in
//! none of the suffixes LiteLLM looks for: `/v1` (Mistral, MiniMax), `/v1/messages`
//! (Anthropic), `chat/completions` (OpenAI-compatible). Endpoints differ in a few places
//! between LiteLLM releases (`together_ai` was `https://api.together.xyz/v1` in 1.93.0, the
//! same service).

use super::KeyPlacement::{self, ApiKey, Bearer, XApiKey, XGoogApiKey};

/// One provider prefix: its endpoint (`None` when it has no public one) and where its key goes.
struct Provider {
    prefix: &'static str,
    endpoint: Option<&'static str>,
    key: KeyPlacement,
}

const fn p(prefix: &'static str, endpoint: Option<&'static str>, key: KeyPlacement) -> Provider {
    Provider {
        prefix,
        endpoint,
        key,
    }
}

/// Gemini's endpoint before Gemini 3.
const GEMINI_V1BETA: &str = "https://generativelanguage.googleapis.com/v1beta";
/// Gemini's endpoint for Gemini 3 and newer.
const GEMINI_V1ALPHA: &str = "https://generativelanguage.googleapis.com/v1alpha";

/// The providers of the module table. Gemini's endpoint is chosen per model.
const PROVIDERS: &[Provider] = &[
    p("openai", Some("https://api.openai.com/v1"), Bearer),
    p("anthropic", Some("https://api.anthropic.com"), XApiKey),
    p("gemini", Some(GEMINI_V1BETA), XGoogApiKey),
    p("mistral", Some("https://api.mistral.ai"), Bearer),
    p("groq", Some("https://api.groq.com/openai/v1"), Bearer),
    p("deepseek", Some("https://api.deepseek.com/beta"), Bearer),
    p("openrouter", Some("https://openrouter.ai/api/v1"), Bearer),
    p("xai", Some("https://api.x.ai/v1"), Bearer),
    p("together_ai", Some("https://api.together.ai/v1"), Bearer),
    p(
        "fireworks_ai",
        Some("https://api.fireworks.ai/inference/v1"),
        Bearer,
    ),
    p("cerebras", Some("https://api.cerebras.ai/v1"), Bearer),
    p(
        "deepinfra",
        Some("https://api.deepinfra.com/v1/openai"),
        Bearer,
    ),
    p("perplexity", Some("https://api.perplexity.ai"), Bearer),
    p("moonshot", Some("https://api.moonshot.ai/v1"), Bearer),
    p("minimax", Some("https://api.minimax.io"), Bearer),
    p(
        "openhands",
        Some("https://llm-proxy.app.all-hands.dev"),
        Bearer,
    ),
    p(
        "digitalocean",
        Some("https://inference.do-ai.run/v1"),
        Bearer,
    ),
    p("azure", None, ApiKey),
    p("litellm_proxy", None, Bearer),
    p("hosted_vllm", None, Bearer),
];

/// LiteLLM's provider prefix of `model`: the text before its first `/` (`openrouter` for
/// `openrouter/anthropic/claude-…`, whether or not LiteLLM knows the prefix), or for a bare
/// name the provider LiteLLM infers for the common families: `openai` for `gpt-…`,
/// `chatgpt-…`, `codex-…`, `o1`, `o3-mini`, `o4-…` (also after `ft:`), `anthropic` for
/// `claude-…` (but not Bedrock's `…-v1:0` names). `None` for any other bare name (LiteLLM
/// routes bare Gemini names to Vertex AI) and for an empty prefix.
///
/// Source: `litellm/litellm_core_utils/get_llm_provider_logic.py` 236-256 (prefix) and
/// 411-530 (bare names), litellm 1.105.7.
pub fn provider_of(model: &str) -> Option<&str> {
    if let Some((prefix, _)) = model.split_once('/') {
        return (!prefix.is_empty()).then_some(prefix);
    }
    let name = model.strip_prefix("ft:").unwrap_or(model);
    let openai_family = ["gpt-", "chatgpt-", "codex-"]
        .iter()
        .any(|f| name.starts_with(f))
        || is_o_series(name);
    if openai_family {
        Some("openai")
    } else if name.starts_with("claude-") && !name.contains(':') {
        Some("anthropic")
    } else {
        None
    }
}

/// OpenAI's reasoning series: `o` and a digit, then the end or `-` (`o1`, `o3-mini`).
fn is_o_series(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0] == b'o' && b[1].is_ascii_digit() && matches!(b.get(2), None | Some(b'-'))
}

/// The table's entry for `model`, which names a model after its prefix.
fn provider(model: &str) -> Option<&'static Provider> {
    if model.ends_with('/') {
        return None;
    }
    let prefix = provider_of(model)?;
    PROVIDERS.iter().find(|p| p.prefix == prefix)
}

/// The base URL the pass-through forwards to for `model` (LiteLLM's name, e.g.
/// `anthropic/claude-sonnet-4-5` or a bare `gpt-4o`) when the key's owner set none: the URL
/// that, given to LiteLLM as `api_base`, makes it send exactly the request it sends the
/// provider by default (module table). An `https://` URL of a public host, without a trailing
/// `/`. For `gemini/` it depends on the model: `…/v1alpha` for Gemini 3 and newer, else
/// `…/v1beta`.
///
/// `None` for a provider with no public endpoint (a local server such as `ollama/` or
/// `llamafile/`, a proxy such as `litellm_proxy/`, `azure/` deployments, `bedrock/` and
/// `vertex_ai/`, which sign requests with cloud credentials) and for a model whose provider is
/// unknown: such a key needs its owner's base URL.
pub fn public_endpoint(model: &str) -> Option<&'static str> {
    let provider = provider(model)?;
    if provider.prefix == "gemini" {
        let name = model.split_once('/').map_or(model, |(_, name)| name);
        return Some(if is_gemini_3_or_newer(name) {
            GEMINI_V1ALPHA
        } else {
            GEMINI_V1BETA
        });
    }
    provider.endpoint
}

/// Where LiteLLM puts the key for `model`'s provider (module table): the header the agent's
/// token arrives in and the real key replaces. `None` for a provider not in the table.
pub fn key_placement(model: &str) -> Option<KeyPlacement> {
    provider(model).map(|p| p.key)
}

/// LiteLLM 1.105.7's `VertexGeminiConfig._is_gemini_3_or_newer` for a `gemini/` model name:
/// false for a fine-tuned (all digits) or `gemma-` name and for Gemini 1 and 2 names
/// (`^gemini-(?:[12](?:\.\d+)?|exp|(?:pro|flash)(?!-(?:lite-)?latest$))(?:-|$)`), true
/// otherwise.
fn is_gemini_3_or_newer(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    if name.is_empty() || name.bytes().all(|b| b.is_ascii_digit()) || name.starts_with("gemma-") {
        return false;
    }
    let Some(rest) = name.strip_prefix("gemini-") else {
        return true;
    };
    let ends = |s: &str| s.is_empty() || s.starts_with('-');
    let before_3 = match rest.as_bytes().first() {
        Some(b'1' | b'2') => {
            let after = &rest[1..];
            let dotted = after.strip_prefix('.').and_then(|s| {
                let digits = s.bytes().take_while(u8::is_ascii_digit).count();
                (digits > 0).then(|| &s[digits..])
            });
            ends(after) || dotted.is_some_and(ends)
        }
        _ => ["exp", "pro", "flash"].iter().any(|w| {
            rest.strip_prefix(w).is_some_and(|after| {
                let latest = *w != "exp" && (after == "-latest" || after == "-lite-latest");
                ends(after) && !latest
            })
        }),
    };
    !before_3
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    const OPENAI: &str = "https://api.openai.com/v1";

    #[test]
    fn each_provider_has_its_litellm_default() {
        let cases = [
            ("openai/gpt-4o", OPENAI),
            ("anthropic/claude-sonnet-4-5", "https://api.anthropic.com"),
            ("mistral/devstral-2512", "https://api.mistral.ai"),
            (
                "groq/llama-3.3-70b-versatile",
                "https://api.groq.com/openai/v1",
            ),
            ("deepseek/deepseek-chat", "https://api.deepseek.com/beta"),
            (
                "openrouter/anthropic/claude-opus-4",
                "https://openrouter.ai/api/v1",
            ),
            ("xai/grok-4", "https://api.x.ai/v1"),
            (
                "together_ai/meta-llama/Llama-3-70b",
                "https://api.together.ai/v1",
            ),
            (
                "fireworks_ai/accounts/fireworks/models/kimi-k2",
                "https://api.fireworks.ai/inference/v1",
            ),
            ("cerebras/llama3.1-8b", "https://api.cerebras.ai/v1"),
            (
                "deepinfra/meta-llama/Llama-3-8B",
                "https://api.deepinfra.com/v1/openai",
            ),
            ("perplexity/sonar-pro", "https://api.perplexity.ai"),
            ("moonshot/kimi-k3", "https://api.moonshot.ai/v1"),
            ("minimax/minimax-m3", "https://api.minimax.io"),
            (
                "openhands/claude-sonnet-5",
                "https://llm-proxy.app.all-hands.dev",
            ),
            ("digitalocean/glm-5.3", "https://inference.do-ai.run/v1"),
        ];
        for (model, endpoint) in cases {
            assert_eq!(public_endpoint(model), Some(endpoint), "{model}");
        }
    }

    #[test]
    fn bare_names_are_routed_as_litellm_infers_them() {
        for model in [
            "gpt-4o",
            "gpt-5.2-codex",
            "o3-mini",
            "o1",
            "o4-mini-2025-04-16",
        ] {
            assert_eq!(provider_of(model), Some("openai"), "{model}");
            assert_eq!(public_endpoint(model), Some(OPENAI), "{model}");
        }
        for model in [
            "chatgpt-4o-latest",
            "ft:gpt-4o-mini:org::abc",
            "codex-mini-latest",
        ] {
            assert_eq!(public_endpoint(model), Some(OPENAI), "{model}");
        }
        for model in [
            "claude-3-5-sonnet-20241022",
            "claude-sonnet-4-5",
            "claude-opus-4-7",
        ] {
            assert_eq!(provider_of(model), Some("anthropic"), "{model}");
            assert_eq!(public_endpoint(model), Some("https://api.anthropic.com"));
        }
        for model in [
            "o",
            "oss-120b",
            "o3x",
            "gemini-2.5-pro",
            "deepseek-chat",
            "llama3",
        ] {
            assert_eq!(public_endpoint(model), None, "{model}");
        }
        assert_eq!(
            provider_of("claude-sonnet-4-5-20250929-v1:0"),
            None,
            "Bedrock's"
        );
    }

    #[test]
    fn gemini_3_and_newer_use_v1alpha() {
        let beta = [
            "gemini-2.5-pro",
            "gemini-2.0-flash",
            "gemini-1.5-pro-002",
            "gemini-2",
            "gemini-exp-1206",
            "gemini-pro",
            "gemini-flash-lite",
            "GEMINI-2.5-FLASH",
            "gemma-3-27b-it",
            "1234567890",
        ];
        for name in beta {
            let model = format!("gemini/{name}");
            assert_eq!(public_endpoint(&model), Some(GEMINI_V1BETA), "{model}");
        }
        let alpha = [
            "gemini-3-pro-preview",
            "gemini-3.1-pro",
            "gemini-3.8-flash",
            "gemini-4-argon",
            "gemini-flash-latest",
            "gemini-flash-lite-latest",
            "gemini-pro-latest",
            "gemini-2.5x",
            "gemini-20",
            "learnlm-2.0-flash",
        ];
        for name in alpha {
            let model = format!("gemini/{name}");
            assert_eq!(public_endpoint(&model), Some(GEMINI_V1ALPHA), "{model}");
        }
    }

    #[test]
    fn providers_without_a_public_endpoint_have_none() {
        let none = [
            "ollama/llama3",
            "ollama_chat/qwen3",
            "llamafile/mistral",
            "lm_studio/qwen",
            "vllm/meta-llama/Llama-3",
            "hosted_vllm/meta-llama/Llama-3",
            "litellm_proxy/claude-sonnet-4-5",
            "azure/my-deployment",
            "azure_ai/mistral-large",
            "bedrock/anthropic.claude-3-sonnet",
            "vertex_ai/gemini-2.5-pro",
            "sagemaker/my-endpoint",
            "custom_openai/model",
            "openai_like/model",
            "unknown/model",
            "OpenAI/gpt-4o",
            "/gpt-4o",
            "openai/",
            "gemini/",
            "",
            "openai",
        ];
        for model in none {
            assert_eq!(public_endpoint(model), None, "{model:?}");
        }
    }

    #[test]
    fn keys_go_where_litellm_puts_them() {
        assert_eq!(key_placement("openai/gpt-4o"), Some(Bearer));
        assert_eq!(key_placement("gpt-4o"), Some(Bearer));
        assert_eq!(key_placement("claude-sonnet-4-5"), Some(XApiKey));
        assert_eq!(key_placement("anthropic/claude-sonnet-4-5"), Some(XApiKey));
        assert_eq!(key_placement("gemini/gemini-3-pro"), Some(XGoogApiKey));
        assert_eq!(key_placement("azure/gpt-4o"), Some(ApiKey));
        assert_eq!(key_placement("openhands/claude-sonnet-5"), Some(Bearer));
        assert_eq!(key_placement("ollama/llama3"), None);
        for p in PROVIDERS
            .iter()
            .filter(|p| p.prefix != "anthropic" && p.prefix != "gemini")
        {
            assert!(matches!(p.key, Bearer | ApiKey), "{}", p.prefix);
        }
    }

    #[test]
    fn provider_of_reads_the_prefix() {
        assert_eq!(
            provider_of("openrouter/anthropic/claude"),
            Some("openrouter")
        );
        assert_eq!(provider_of("meta-llama/Llama-3"), Some("meta-llama"));
        assert_eq!(provider_of("/x"), None);
        assert_eq!(provider_of("mistral"), None);
    }

    /// Every endpoint, of the table and of Gemini, is `https://` on a public DNS name, with no
    /// port, credentials, query or trailing `/`.
    #[test]
    fn every_endpoint_is_https_on_a_public_host() {
        let mut all: Vec<&str> = PROVIDERS.iter().filter_map(|p| p.endpoint).collect();
        all.push(GEMINI_V1ALPHA);
        for url in all {
            let rest = url.strip_prefix("https://").expect(url);
            let host = rest.split('/').next().unwrap();
            assert!(
                !url.ends_with('/') && !url.contains(['?', '#', '@']),
                "{url}"
            );
            assert!(
                !host.contains(':') && !host.contains('[') && host.contains('.'),
                "{url}"
            );
            assert!(host.parse::<IpAddr>().is_err(), "{url}: an address");
            let lower = host.to_ascii_lowercase();
            for private in ["localhost", ".local", ".internal", ".lan", ".home.arpa"] {
                assert!(!lower.ends_with(private) && lower != private, "{url}");
            }
            assert!(
                host.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
            );
        }
    }
}

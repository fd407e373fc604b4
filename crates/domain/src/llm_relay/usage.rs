//! What a provider reports one request used (issue 38): tokens and, where it reports one,
//! cost, from the answer's JSON, whole ([`of_json`]) or streamed as server-sent events
//! ([`SseUsage`]).
//!
//! Shapes read (each a `usage` object; a later report of a field replaces an earlier one, as
//! every provider reports running totals):
//!
//! - OpenAI chat completions: top-level `usage: {prompt_tokens, completion_tokens}`; streamed,
//!   the chunk(s) carrying a `usage` object (with `stream_options.include_usage`), other
//!   chunks having `"usage": null`. `prompt_tokens` already counts cached tokens.
//! - OpenAI Responses API: `usage: {input_tokens, output_tokens}`; streamed, the
//!   `response.usage` of the `response.completed` (or `.incomplete`, `.failed`) event.
//! - Anthropic messages: `usage: {input_tokens, output_tokens, cache_creation_input_tokens,
//!   cache_read_input_tokens}`, the cache tokens counted as input (Anthropic bills them and
//!   leaves them out of `input_tokens`); streamed, `message_start`'s `message.usage` then
//!   `message_delta`'s `usage` (cumulative `output_tokens`, newer API versions also the input
//!   counts).
//! - Gemini (`generateContent`): `usageMetadata: {promptTokenCount, candidatesTokenCount,
//!   thoughtsTokenCount}`, thinking tokens counted as output; streamed, every chunk's running
//!   totals.
//! - Cost: `usage.cost`, a number in USD (OpenRouter; a LiteLLM proxy with
//!   `include_cost_in_streaming_usage`). A cost is never computed here: `None` when the answer
//!   reports none (a negative one is not taken).
//!
//! Counts are JSON numbers (an integral float is taken, anything else ignored); sums
//! saturate. Nothing here panics on any input.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The usage of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Prompt (input) tokens, cache reads and writes included.
    pub input_tokens: u64,
    /// Completion (output) tokens, reasoning tokens included.
    pub output_tokens: u64,
    /// Cost in USD, when the provider reports one.
    pub cost_usd: Option<f64>,
}

/// The usage in a whole JSON answer (OpenAI chat or Responses, Anthropic, Gemini); `None` when
/// it reports none, or is not a JSON object.
pub fn of_json(body: &[u8]) -> Option<Usage> {
    let mut tally = Tally::default();
    tally.read(body);
    tally.usage()
}

/// The longest line [`SseUsage`] holds, 4 MiB: a longer line is dropped unread. Usage lines
/// are short but for the Responses API's `response.completed`, which repeats the whole answer
/// (about 1 MiB at 128k output tokens).
pub const MAX_LINE: usize = 4 << 20;

/// A held line's capacity above which the buffer is given back after use (64 KiB).
const KEEP_CAPACITY: usize = 64 << 10;

/// Reads the usage of a server-sent-events answer as its chunks pass, holding at most one
/// incomplete line (at most [`MAX_LINE`] bytes; a longer line is dropped).
///
/// Lines end at `\n` (a `\r` before it is dropped); only `data:` lines holding a `"usage"` or
/// `"usageMetadata"` member that opens an object are parsed, each line as one JSON value (a
/// JSON value spread over several `data:` lines is not read); others, `data: [DONE]` and lines
/// that are not JSON are skipped.
#[derive(Debug, Default)]
pub struct SseUsage {
    /// The start of a line whose end has not arrived yet.
    held: Vec<u8>,
    /// The current line is being dropped (too long, or not a `data:` line) until its `\n`.
    skipping: bool,
    tally: Tally,
}

impl SseUsage {
    /// A reader at the start of an answer.
    pub fn new() -> Self {
        SseUsage::default()
    }

    /// Reads the next bytes of the answer (any split, even inside a line or a UTF-8 character).
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(nl) = chunk.iter().position(|&b| b == b'\n') {
            let (line, rest) = (&chunk[..nl], &chunk[nl + 1..]);
            if self.skipping {
                self.skipping = false;
            } else if self.held.is_empty() {
                if line.len() <= MAX_LINE {
                    self.tally.line(line);
                }
            } else {
                self.hold(line);
                self.end_held_line();
            }
            chunk = rest;
        }
        if !self.skipping && !chunk.is_empty() {
            self.hold(chunk);
        }
    }

    /// The usage the answer reported; `None` when it reported none. A last line without its
    /// `\n` (a cut stream) is read too.
    pub fn finish(mut self) -> Option<Usage> {
        if !self.skipping && !self.held.is_empty() {
            self.end_held_line();
        }
        self.tally.usage()
    }

    /// Adds `part` to the held line, or drops the line when it cannot be a `data:` line or
    /// would pass [`MAX_LINE`].
    fn hold(&mut self, part: &[u8]) {
        let len = self.held.len() + part.len();
        let head = len.min(5);
        let mut start = [0u8; 5];
        let from_held = self.held.len().min(head);
        start[..from_held].copy_from_slice(&self.held[..from_held]);
        start[from_held..head].copy_from_slice(&part[..head - from_held]);
        if len > MAX_LINE || !b"data:".starts_with(&start[..head]) {
            self.skipping = true;
            self.release();
        } else {
            self.held.extend_from_slice(part);
        }
    }

    /// Reads the held line, whose end has arrived, and empties the buffer.
    fn end_held_line(&mut self) {
        if !self.skipping {
            self.tally.line(&self.held);
        }
        self.skipping = false;
        self.release();
    }

    fn release(&mut self) {
        self.held.clear();
        if self.held.capacity() > KEEP_CAPACITY {
            self.held = Vec::new();
        }
    }
}

/// The counts read so far, each field as last reported.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// OpenAI's `prompt_tokens` or Gemini's `promptTokenCount` (cache included).
    prompt: Option<u64>,
    /// OpenAI's `completion_tokens` or Gemini's candidates plus thoughts.
    completion: Option<u64>,
    /// Anthropic's and the Responses API's `input_tokens`.
    input: Option<u64>,
    /// Anthropic's and the Responses API's `output_tokens`.
    output: Option<u64>,
    cache_write: Option<u64>,
    cache_read: Option<u64>,
    cost: Option<f64>,
}

impl Tally {
    /// One SSE line, without its `\n`.
    fn line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(data) = line.strip_prefix(b"data:")
            && mentions_usage(data)
        {
            self.read(data);
        }
    }

    /// One JSON value: its `usage`, `message.usage`, `response.usage` and `usageMetadata`.
    fn read(&mut self, json: &[u8]) {
        if skip_ws(json).first() != Some(&b'{') {
            return;
        }
        let Ok(env) = serde_json::from_slice::<Envelope>(json) else {
            return;
        };
        for usage in [&env.message.0, &env.response.0, &env.usage] {
            self.absorb(usage);
        }
        if let Value::Object(m) = &env.usage_metadata {
            let get = |k: &str| m.get(k).and_then(count);
            set(&mut self.prompt, get("promptTokenCount"));
            let (candidates, thoughts) = (get("candidatesTokenCount"), get("thoughtsTokenCount"));
            if candidates.is_some() || thoughts.is_some() {
                let sum = candidates
                    .unwrap_or(0)
                    .saturating_add(thoughts.unwrap_or(0));
                self.completion = Some(sum);
            }
        }
    }

    fn absorb(&mut self, usage: &Value) {
        let Value::Object(u) = usage else { return };
        let get = |k: &str| u.get(k).and_then(count);
        set(&mut self.prompt, get("prompt_tokens"));
        set(&mut self.completion, get("completion_tokens"));
        set(&mut self.input, get("input_tokens"));
        set(&mut self.output, get("output_tokens"));
        set(&mut self.cache_write, get("cache_creation_input_tokens"));
        set(&mut self.cache_read, get("cache_read_input_tokens"));
        let cost = u.get("cost").and_then(Value::as_f64);
        set(&mut self.cost, cost.filter(|c| c.is_finite() && *c >= 0.0));
    }

    fn usage(&self) -> Option<Usage> {
        let parts = [self.input, self.cache_write, self.cache_read];
        let input = self.prompt.or_else(|| {
            let any = parts.iter().any(Option::is_some);
            any.then(|| {
                parts
                    .iter()
                    .flatten()
                    .fold(0u64, |a, b| a.saturating_add(*b))
            })
        });
        let output = self.completion.or(self.output);
        if input.is_none() && output.is_none() && self.cost.is_none() {
            return None;
        }
        Some(Usage {
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
            cost_usd: self.cost,
        })
    }
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

/// A token count: a non-negative integer, or a float holding one.
fn count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        (f >= 0.0 && f <= u64::MAX as f64 && f.fract() == 0.0).then_some(f as u64)
    })
}

/// Whether `data` has a `"usage"` or `"usageMetadata"` member opening an object, the cheap
/// test before parsing (`"usage": null` chunks are skipped).
fn mentions_usage(data: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"usage";
    let mut rest = data;
    while let Some(at) = find(rest, NEEDLE) {
        rest = &rest[at + NEEDLE.len()..];
        let key_end = rest
            .strip_prefix(b"\"")
            .or_else(|| rest.strip_prefix(b"Metadata\""));
        if let Some(after) = key_end
            && let Some(value) = skip_ws(after).strip_prefix(b":")
            && skip_ws(value).first() == Some(&b'{')
        {
            return true;
        }
    }
    false
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[n..]
}

/// The first position of `needle` (not empty) in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (first, tail) = needle.split_first()?;
    let mut from = 0;
    while let Some(p) = hay[from..].iter().position(|b| b == first) {
        let at = from + p;
        if hay[at + 1..].starts_with(tail) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The members of an answer or event that may hold usage; the rest is skipped unread.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    usage: Value,
    #[serde(default, rename = "usageMetadata")]
    usage_metadata: Value,
    /// Anthropic's `message_start`.
    #[serde(default)]
    message: UsageOf,
    /// The Responses API's `response.*` events.
    #[serde(default)]
    response: UsageOf,
}

/// The `usage` member of an object, the object's other members skipped without being kept (a
/// `response.completed` event repeats the whole answer); `Null` for anything but an object.
#[derive(Default)]
struct UsageOf(Value);

impl<'de> Deserialize<'de> for UsageOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UsageOfVisitor)
    }
}

struct UsageOfVisitor;

impl<'de> Visitor<'de> for UsageOfVisitor {
    type Value = UsageOf;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UsageOf, A::Error> {
        let mut usage = Value::Null;
        while let Some(key) = map.next_key::<String>()? {
            if key == "usage" {
                usage = map.next_value()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(UsageOf(usage))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UsageOf, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(UsageOf::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<UsageOf, E> {
        Ok(UsageOf::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(input_tokens: u64, output_tokens: u64, cost_usd: Option<f64>) -> Option<Usage> {
        Some(Usage {
            input_tokens,
            output_tokens,
            cost_usd,
        })
    }

    const CHAT_STREAM: &str = concat!(
        "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{\"content\":\"h\u{e9}llo \u{65e5}\u{672c} \u{1f600}\"}}],\"usage\":null}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":35,",
        "\"prompt_tokens_details\":{\"cached_tokens\":100}}}\n\n",
        "data: [DONE]\n\n",
    );

    const OPENROUTER_STREAM: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
        "data: {\"choices\":[],\"usage\": {\"prompt_tokens\": 10, \"completion_tokens\": 4, \"cost\": 0.00125}}\n\n",
        "data: [DONE]\n\n",
    );

    const RESPONSES_STREAM: &str = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"\u{fc}ber \\\"usage\\\": {\"}\n\n",
        "event: response.completed\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"output\":[{\"type\":\"message\",",
        "\"content\":[{\"type\":\"output_text\",\"text\":\"\u{fc}ber\"}]}],\"usage\":{\"input_tokens\":50,",
        "\"input_tokens_details\":{\"cached_tokens\":20},\"output_tokens\":7,\"total_tokens\":57}}}\n\n",
    );

    const ANTHROPIC_STREAM: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"content\":[],\"usage\":",
        "{\"input_tokens\":25,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\u{e7}a\"}}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    const GEMINI_STREAM: &str = concat!(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\u{4f60}\"}]}}],",
        "\"usageMetadata\":{\"promptTokenCount\":9,\"totalTokenCount\":9}}\n\n",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\u{597d}\"}]}}],\"usageMetadata\":",
        "{\"promptTokenCount\":9,\"candidatesTokenCount\":6,\"thoughtsTokenCount\":30,\"totalTokenCount\":45}}\n\n",
    );

    fn streams() -> Vec<(&'static str, Option<Usage>)> {
        vec![
            (CHAT_STREAM, u(120, 35, None)),
            (OPENROUTER_STREAM, u(10, 4, Some(0.00125))),
            (RESPONSES_STREAM, u(50, 7, None)),
            (ANTHROPIC_STREAM, u(1125, 15, None)),
            (GEMINI_STREAM, u(9, 36, None)),
        ]
    }

    fn read(parts: &[&[u8]]) -> Option<Usage> {
        let mut r = SseUsage::new();
        parts.iter().for_each(|p| r.feed(p));
        r.finish()
    }

    /// Whole, a byte at a time, and in two pieces split at every position, with `\n` and with
    /// `\r\n` line ends: always the same usage.
    #[test]
    fn every_split_of_every_stream_reads_the_same() {
        for (stream, want) in streams() {
            for text in [stream.to_string(), stream.replace('\n', "\r\n")] {
                let b = text.as_bytes();
                assert_eq!(read(&[b]), want, "{text}");
                let bytes: Vec<&[u8]> = b.chunks(1).collect();
                assert_eq!(read(&bytes), want, "byte by byte: {text}");
                for at in 0..=b.len() {
                    assert_eq!(read(&[&b[..at], &b[at..]]), want, "split at {at}: {text}");
                }
            }
        }
    }

    #[test]
    fn whole_answers_of_each_shape() {
        let chat = br#"{"id":"x","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"hi"}}],
            "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"completion_tokens_details":{"reasoning_tokens":1}}}"#;
        assert_eq!(of_json(chat), u(12, 3, None));
        let openrouter = br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"cost":0.5,"cost_details":{}}}"#;
        assert_eq!(of_json(openrouter), u(12, 3, Some(0.5)));
        let responses = br#"{"object":"response","output":[{"type":"message"}],"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":30},"output_tokens":8}}"#;
        assert_eq!(of_json(responses), u(40, 8, None));
        let anthropic = br#"{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":200,"output_tokens":9}}"#;
        assert_eq!(of_json(anthropic), u(205, 9, None));
        let gemini = br#"{"candidates":[],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9}}"#;
        assert_eq!(of_json(gemini), u(7, 2, None));
        // LiteLLM's proxy reports cache counts beside a `prompt_tokens` that already has them.
        let proxy = br#"{"usage":{"prompt_tokens":300,"completion_tokens":1,"cache_read_input_tokens":200}}"#;
        assert_eq!(of_json(proxy), u(300, 1, None));
        // The last usage-bearing event of a stream, alone (Anthropic's needs its start too).
        for (stream, want) in streams().into_iter().filter(|s| s.0 != ANTHROPIC_STREAM) {
            let last = stream.lines().rfind(|l| l.contains("sage")).unwrap();
            let body = last.strip_prefix("data: ").unwrap();
            assert_eq!(of_json(body.as_bytes()), want, "{body}");
        }
    }

    #[test]
    fn answers_without_usage_report_none() {
        let none: [&[u8]; 9] = [
            br#"{"choices":[{"message":{"content":"no usage here"}}]}"#,
            br#"{"usage":null}"#,
            br#"{"usage":{}}"#,
            br#"{"usage":"12 tokens"}"#,
            br#"{"usage":{"prompt_tokens":-1,"completion_tokens":"3","cost":-0.1}}"#,
            br#"{"usage":{"prompt_tokens":1.5,"completion_tokens":1e300}}"#,
            br#"[{"prompt_tokens":1}]"#,
            br#"{"error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            br#"{"message":"rate limited","response":"none"}"#,
        ];
        for body in none {
            assert_eq!(of_json(body), None, "{}", String::from_utf8_lossy(body));
        }
        assert_eq!(
            of_json(br#"{"usage":{"prompt_tokens":12.0}}"#),
            u(12, 0, None)
        );
        assert_eq!(of_json(br#"{"usage":{"cost":0.25}}"#), u(0, 0, Some(0.25)));
    }

    #[test]
    fn garbage_never_panics_and_reports_nothing() {
        let garbage: [&[u8]; 8] = [
            b"",
            b"\0\0\0\0",
            b"\xff\xfe\xfd",
            b"{\"usage\":{\"prompt_tokens\":1",
            b"null",
            b"{\"usage\":{\"prompt_tokens\":1},\"usage\":{\"prompt_tokens\":2}}",
            b"data: {\"usage\":{\"prompt_tokens\":3}}",
            b"\xef\xbb\xbf{\"usage\":{\"prompt_tokens\":1}}",
        ];
        for body in garbage {
            assert_eq!(of_json(body), None, "{body:?}");
        }
        let mut noise = Vec::new();
        for i in 0..20_000u32 {
            noise.push((i.wrapping_mul(2_654_435_761) >> 13) as u8);
        }
        noise.extend_from_slice(
            b"\ndata: \xff{\"usage\":{\"prompt_tokens\":1}}\ndata: {\"usage\":{\0}}\n",
        );
        noise.extend_from_slice(b"data:{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}");
        let whole = read(&[&noise]);
        let pieces: Vec<&[u8]> = noise.chunks(7).collect();
        assert_eq!(read(&pieces), whole);
        assert_eq!(read(&[b"\0\n\xff\n\r\n\n"]), None);
    }

    #[test]
    fn only_data_lines_opening_a_usage_object_are_read() {
        let s = b"event: x\nid: {\"usage\":{\"prompt_tokens\":9}}\n: {\"usage\":{\"prompt_tokens\":9}}\n\n";
        assert_eq!(read(&[s]), None);
        assert!(mentions_usage(br#"{"a":1, "usage" : {"x":1}}"#));
        assert!(mentions_usage(
            br#"{"usageMetadata":{"promptTokenCount":1}}"#
        ));
        assert!(!mentions_usage(br#"{"usage":null,"text":"\"usage\": {"}"#));
        assert!(!mentions_usage(br#"{"usages":{},"usage":[]}"#));
        assert_eq!(find(b"abcabd", b"abd"), Some(3));
        assert_eq!(find(b"ab", b"abc"), None);
        // A cut stream: the last line, without its newline, is read at the end.
        assert_eq!(
            read(&[b"data: {\"usage\":{\"prompt_tokens\":4}}"]),
            u(4, 0, None)
        );
        // Anthropic's newer `message_delta` repeats the input counts; the last report wins.
        let newer = concat!(
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n",
            "data: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":12,\"output_tokens\":30}}\n",
        );
        assert_eq!(read(&[newer.as_bytes()]), u(17, 30, None));
    }

    /// A line over [`MAX_LINE`] is dropped however it arrives, the held buffer is given back,
    /// and the lines after it are read.
    #[test]
    fn a_line_over_the_cap_is_dropped_and_the_reader_recovers() {
        let mut long = b"data: {\"usage\":{\"prompt_tokens\":99},\"pad\":\"".to_vec();
        long.resize(MAX_LINE + 10, b'a');
        long.extend_from_slice(b"\"}\n");
        let tail = b"data: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n";
        let want = u(3, 1, None);
        let mut stream = long.clone();
        stream.extend_from_slice(tail);
        assert_eq!(read(&[&stream]), want);
        for size in [1 << 10, 1 << 16, (1 << 20) + 3] {
            let mut r = SseUsage::new();
            stream.chunks(size).for_each(|c| r.feed(c));
            assert!(r.held.capacity() <= KEEP_CAPACITY, "{size}");
            assert_eq!(r.finish(), want, "{size}");
        }
        let mut fits = b"data: {\"usage\":{\"prompt_tokens\":99},\"pad\":\"".to_vec();
        fits.resize(MAX_LINE - 3, b'a');
        fits.extend_from_slice(b"\"}\n");
        let pieces: Vec<&[u8]> = fits.chunks(1 << 16).collect();
        assert_eq!(read(&pieces), u(99, 0, None));
    }
}

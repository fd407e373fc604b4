//! Parse and serialize throughput over the conformance corpus (`just bench`).
//!
//! Two inputs: the real conversation logs (`valid/conversation_*.jsonl`) and the whole valid
//! corpus (canonical lines, `full/` lines with explicit nulls, and the logs). Divan reports
//! time per pass, events/s (item counter) and bytes/s.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use switchboard_model::Event;

fn main() {
    divan::main();
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/valid")
}

fn lines_of(paths: impl IntoIterator<Item = PathBuf>) -> Vec<String> {
    let mut out = Vec::new();
    for p in paths {
        let text = fs::read_to_string(&p).unwrap();
        out.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned),
        );
    }
    out
}

fn jsonl_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

static CONVERSATIONS: LazyLock<Vec<String>> = LazyLock::new(|| {
    lines_of(
        jsonl_in(&corpus_dir())
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("conversation_")),
    )
});

static WHOLE: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut paths = jsonl_in(&corpus_dir());
    paths.extend(jsonl_in(&corpus_dir().join("full")));
    lines_of(paths)
});

fn input(name: &str) -> &'static [String] {
    match name {
        "conversations" => &CONVERSATIONS,
        _ => &WHOLE,
    }
}

const INPUTS: &[&str] = &["conversations", "whole_valid_corpus"];

#[divan::bench(args = INPUTS)]
fn parse(bencher: Bencher<'_, '_>, name: &str) {
    let lines = input(name);
    let bytes: usize = lines.iter().map(String::len).sum();
    bencher
        .counter(BytesCount::new(bytes))
        .counter(ItemsCount::new(lines.len()))
        .bench(|| {
            for line in lines {
                black_box(Event::from_json_str(black_box(line)).unwrap());
            }
        });
}

#[divan::bench(args = INPUTS)]
fn serialize(bencher: Bencher<'_, '_>, name: &str) {
    let events: Vec<Event> = input(name)
        .iter()
        .map(|l| Event::from_json_str(l).unwrap())
        .collect();
    let mut buf = Vec::with_capacity(1 << 20);
    let bytes: usize = events
        .iter()
        .map(|e| {
            buf.clear();
            e.write_json(&mut buf);
            buf.len()
        })
        .sum();
    bencher
        .counter(BytesCount::new(bytes))
        .counter(ItemsCount::new(events.len()))
        .bench_local(|| {
            for e in &events {
                buf.clear();
                e.write_json(&mut buf);
                black_box(&buf);
            }
        });
}

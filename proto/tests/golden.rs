//! Golden vectors: `tests/golden/<name>.hex` holds the exact frame (length
//! prefix and payload) of each fixture in `common/fixtures.rs`, one file per
//! oneof variant, so any change to the wire shows up in review as a diff of
//! these files.
//!
//! After an intended wire change, rewrite the files with
//! `CODEMODE_BLESS=1 cargo test -p codemode-proto --test all golden`
//! and review the diff; without the variable the test only compares.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use codemode_proto::frame::{decode_payload, read_frame, DEFAULT_MAX_FRAME_BYTES};
use codemode_proto::v1::{GuestMessage, HostMessage};
use codemode_proto::FRAME_HEADER_BYTES;

use crate::common::fixtures::{self, Fixture};

const BLESS_VAR: &str = "CODEMODE_BLESS";

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn blessing() -> bool {
    std::env::var_os(BLESS_VAR).is_some_and(|v| v == "1")
}

/// The file's text: comments naming the frame, the prefix on its own line,
/// then the payload, 16 bytes a line.
fn render(name: &str, frame: &[u8]) -> String {
    let (prefix, payload) = frame.split_at(FRAME_HEADER_BYTES);
    let mut out = format!(
        "# codemode.v1 golden frame: {name}\n\
         # Regenerate: {BLESS_VAR}=1 cargo test -p codemode-proto --test all golden\n\
         # length prefix (u32 big-endian): {} bytes\n{}\n# payload\n",
        payload.len(),
        hex::encode(prefix)
    );
    for line in payload.chunks(16) {
        let bytes: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{}", bytes.join(" ")).expect("writing to a String");
    }
    out
}

/// Bytes of a golden file: hex digits, ignoring whitespace and `#` lines.
fn parse(text: &str) -> Vec<u8> {
    let digits: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    hex::decode(&digits).expect("golden file holds hex digits")
}

#[test]
fn every_frame_matches_its_golden_file_and_decodes_back() {
    let dir = golden_dir();
    let bless = blessing();
    let mut mismatches = Vec::new();
    for fixture in fixtures::all() {
        let name = fixture.name();
        let frame = fixture.frame();
        let path = dir.join(format!("{name}.hex"));
        if bless {
            std::fs::write(&path, render(&name, &frame)).expect("writing a golden file");
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run with {BLESS_VAR}=1 to create it",
                path.display()
            )
        });
        let golden = parse(&text);
        if golden != frame {
            mismatches.push(format!(
                "{name}: encoder gives\n{}\n  golden file has\n{}",
                hex::encode(&frame),
                hex::encode(&golden)
            ));
            continue;
        }
        assert_decodes_to(&golden, &fixture);
    }
    assert!(
        mismatches.is_empty(),
        "the wire changed; if intended, rerun with {BLESS_VAR}=1 and review the diff:\n{}",
        mismatches.join("\n")
    );
    assert_directory_holds_exactly_the_fixtures(&dir);
}

/// Decodes the golden bytes through the blocking reader and the payload
/// decoder and checks both give back the fixture.
fn assert_decodes_to(golden: &[u8], fixture: &Fixture) {
    let payload = &golden[FRAME_HEADER_BYTES..];
    match fixture {
        Fixture::Host(expected) => {
            let mut reader = golden;
            let read = read_frame::<HostMessage, _>(&mut reader, DEFAULT_MAX_FRAME_BYTES);
            assert_eq!(read.expect("golden frame reads"), Some(expected.clone()));
            assert!(
                reader.is_empty(),
                "{} has bytes after its frame",
                fixture.name()
            );
            let decoded = decode_payload::<HostMessage>(payload).expect("golden payload decodes");
            assert_eq!(&decoded, expected);
        }
        Fixture::Guest(expected) => {
            let mut reader = golden;
            let read = read_frame::<GuestMessage, _>(&mut reader, DEFAULT_MAX_FRAME_BYTES);
            assert_eq!(read.expect("golden frame reads"), Some(expected.clone()));
            assert!(
                reader.is_empty(),
                "{} has bytes after its frame",
                fixture.name()
            );
            let decoded = decode_payload::<GuestMessage>(payload).expect("golden payload decodes");
            assert_eq!(&decoded, expected);
        }
    }
}

/// Stale files would pass review unnoticed: every file must be a fixture's.
/// Called from the test that writes the files, so blessing cannot race it.
fn assert_directory_holds_exactly_the_fixtures(dir: &Path) {
    let expected: BTreeSet<String> = fixtures::all()
        .iter()
        .map(|f| format!("{}.hex", f.name()))
        .collect();
    assert_eq!(
        expected.len(),
        fixtures::all().len(),
        "two fixtures share a name"
    );
    let present: BTreeSet<String> = std::fs::read_dir(dir)
        .expect("tests/golden exists")
        .map(|entry| {
            entry
                .expect("readable entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(present, expected, "stale or missing golden files");
}

/// Field names of `oneof NAME { ... }` inside `message MESSAGE { ... }`,
/// read from the schema text so a variant added there needs a fixture here.
fn oneof_fields(schema: &str, message: &str, oneof: &str) -> Vec<String> {
    let start = schema
        .find(&format!("message {message} {{"))
        .unwrap_or_else(|| panic!("schema has message {message}"));
    let body = &schema[start..];
    let open = body
        .find(&format!("oneof {oneof} {{"))
        .unwrap_or_else(|| panic!("{message} has oneof {oneof}"));
    let block = &body[open..];
    let close = block.find('}').expect("oneof block closes");
    block[..close]
        .lines()
        .skip(1)
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                return None;
            }
            // `Type field_name = N;`
            line.split_whitespace().nth(1).map(str::to_owned)
        })
        .collect()
}

#[test]
fn every_oneof_variant_of_the_schema_has_a_fixture() {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto/codemode.proto");
    let schema = std::fs::read_to_string(schema_path).expect("schema readable");
    let names: BTreeSet<String> = fixtures::all().iter().map(Fixture::name).collect();
    let covered = |prefix: &str| {
        names
            .iter()
            .any(|n| n == prefix || n.starts_with(&format!("{prefix}.")))
    };

    let host = oneof_fields(&schema, "HostMessage", "kind");
    let guest = oneof_fields(&schema, "GuestMessage", "kind");
    let calls = oneof_fields(&schema, "RpcRequest", "call");
    let results = oneof_fields(&schema, "RpcResponse", "result");
    for (what, fields) in [
        ("host", &host),
        ("guest", &guest),
        ("call", &calls),
        ("result", &results),
    ] {
        assert!(
            !fields.is_empty(),
            "found no {what} oneof fields in the schema"
        );
    }
    let mut missing = Vec::new();
    let wanted = host
        .iter()
        .map(|f| format!("host.{f}"))
        .chain(guest.iter().map(|f| format!("guest.{f}")))
        .chain(calls.iter().map(|f| format!("guest.rpc_request.{f}")))
        .chain(results.iter().map(|f| format!("host.rpc_response.{f}")));
    for name in wanted {
        if !covered(&name) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "oneof variants without a golden fixture: {missing:?}"
    );
}

//! The tool index: tokeniser, BM25 ranking on a fixture index, hits, and
//! the file's round trip, merging and recovery.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{json, Value};

use super::bm25::{rank, tokenize, Document};
use super::search::{hits, Catalog};
use super::*;
use crate::proxy::Detail;

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        panic!("schema must be an object")
    };
    Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
}

fn param(name: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {name: {"type": "string", "description": description}}})
}

/// Three servers' tools, in the shapes real servers list them.
fn fixture() -> Vec<(&'static str, &'static str, Vec<Tool>)> {
    vec![
        (
            "github",
            "GitHub issues, pull requests and repositories",
            vec![
                tool(
                    "list_issues",
                    "List issues in a GitHub repository.",
                    param("repo", "owner/name"),
                ),
                tool(
                    "create_issue",
                    "Create a new issue in a GitHub repository.",
                    param("title", "Issue title"),
                ),
                tool(
                    "createPullRequest",
                    "Open a pull request.",
                    param("head", "Branch to merge"),
                ),
                tool(
                    "search_code",
                    "Search code across repositories.",
                    param("query", "Search text"),
                ),
            ],
        ),
        (
            "time",
            "Current time and time-zone conversion",
            vec![
                tool(
                    "get_current_time",
                    "Get the current time in a specific timezone.",
                    param("timezone", "IANA timezone name"),
                ),
                tool(
                    "convert_time",
                    "Convert time between timezones.",
                    json!({"type": "object", "properties": {
                    "source_timezone": {"type": "string"}, "time": {"type": "string", "description": "HH:MM"},
                    "target_timezone": {"type": "string"}}}),
                ),
            ],
        ),
        (
            "files",
            "Local files",
            vec![
                tool(
                    "read_file",
                    "Read a file's contents.",
                    param("path", "Path of the file"),
                ),
                tool(
                    "write_file",
                    "Write a file.",
                    param("path", "Path of the file"),
                ),
                tool(
                    "get_file_info",
                    "Size and times of a file.",
                    param("path", "Path; times use the UTC timezone"),
                ),
            ],
        ),
    ]
}

fn fixture_index(dir: &Path) -> ToolIndex {
    let index = ToolIndex::open(dir);
    for (name, _, tools) in fixture() {
        index.record(name, &format!("fp-{name}"), &tools);
    }
    index
}

/// `search` over the fixture, as the RPC does it: (server.tool, loaded).
fn search(index: &ToolIndex, query: &str, limit: u32, loaded: &[&str]) -> Vec<Value> {
    let snapshot = index.snapshot();
    let descriptions: BTreeMap<&str, &str> = fixture().iter().map(|(n, d, _)| (*n, *d)).collect();
    let catalog: Vec<Catalog<'_>> = snapshot
        .iter()
        .map(|(name, entry)| Catalog {
            name,
            alias: name.clone(),
            description: descriptions[name.as_str()],
            tools: entry
                .tools
                .iter()
                .map(|t| (t, t.name.to_lowercase()))
                .collect(),
        })
        .collect();
    let loaded: BTreeSet<String> = loaded.iter().map(|s| s.to_string()).collect();
    hits(&catalog, query, limit, Detail::Summary, &loaded)
}

fn names(hits: &[Value]) -> Vec<String> {
    hits.iter()
        .map(|h| {
            format!(
                "{}.{}",
                h["server"].as_str().unwrap(),
                h["tool"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn tokens_are_lowercase_words_split_at_case_and_punctuation() {
    assert_eq!(tokenize("get_current-time"), ["get", "current", "time"]);
    assert_eq!(tokenize("createPullRequest"), ["create", "pull", "request"]);
    assert_eq!(
        tokenize("getHTTPResponse v2API"),
        ["get", "http", "response", "v2", "api"]
    );
    assert_eq!(
        tokenize("The owner/name of a repo."),
        ["owner", "name", "repo"]
    );
    assert_eq!(
        tokenize("Issues, entries, status, address"),
        ["issue", "entry", "status", "address"]
    );
    assert_eq!(tokenize("  ...  "), Vec::<String>::new());
    assert_eq!(tokenize("Zeitzone ÄNDERN"), ["zeitzone", "ändern"]);
}

#[test]
fn bm25_puts_the_best_match_first() {
    let dir = tempfile::tempdir().unwrap();
    let index = fixture_index(dir.path());
    let cases = [
        ("convert time zone", "time.convert_time"),
        ("create an issue", "github.create_issue"),
        ("open pull request", "github.createPullRequest"),
        ("current time", "time.get_current_time"),
        ("read file contents", "files.read_file"),
        ("list github issues", "github.list_issues"),
    ];
    for (query, best) in cases {
        let found = names(&search(&index, query, 5, &[]));
        assert_eq!(
            found.first().map(String::as_str),
            Some(best),
            "{query}: {found:?}"
        );
    }
}

#[test]
fn a_name_match_outranks_a_parameter_match_and_nothing_matches_nothing() {
    let docs = [
        Document::new(["lookup", "Find things.", "timezone IANA name", "misc"]),
        Document::new(["timezone", "Zone details.", "", "misc"]),
        Document::new(["other", "Unrelated.", "", "misc"]),
    ];
    let ranked = rank(&docs, "timezone", 10);
    assert_eq!(ranked.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 0]);
    assert!(ranked[0].1 > ranked[1].1);
    assert!(rank(&docs, "weather", 10).is_empty());
    assert!(rank(&docs, "the of", 10).is_empty(), "stop words only");
    assert_eq!(rank(&docs, "timezone", 1).len(), 1);
}

#[test]
fn hits_say_whether_their_server_is_loaded_and_how_to_load_it() {
    let dir = tempfile::tempdir().unwrap();
    let index = fixture_index(dir.path());
    let found = search(&index, "timezone", 20, &["files"]);
    let time = found
        .iter()
        .find(|h| h["tool"] == "convert_time")
        .expect("convert_time");
    assert_eq!(time["loaded"], false);
    assert_eq!(
        time["load"],
        "not loaded in this session: call run_python with servers=[\"time\"], then mcp_time.convert_time(...)"
    );
    assert!(time["score"].as_f64().is_some_and(|s| s > 0.0), "{time}");
    assert!(time.get("inputSchema").is_none(), "summary detail: {time}");
    let info = found
        .iter()
        .find(|h| h["tool"] == "get_file_info")
        .expect("get_file_info");
    assert_eq!(info["loaded"], true);
    assert!(info.get("load").is_none(), "{info}");
    assert_eq!(
        search(&index, "file", 0, &[]).len(),
        1,
        "limits are clamped to 1..=20"
    );
}

#[test]
fn the_index_survives_a_restart_and_skips_unchanged_writes() {
    let dir = tempfile::tempdir().unwrap();
    let index = fixture_index(dir.path());
    let file = dir.path().join(INDEX_FILE);
    let inode = |f: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(f).unwrap());
    let written = inode(&file);
    let (_, _, tools) = fixture().remove(1);
    index.record("time", "fp-time", &tools);
    assert_eq!(
        inode(&file),
        written,
        "the same tools are not written again"
    );

    let reopened = ToolIndex::open(dir.path());
    assert_eq!(reopened.snapshot(), index.snapshot());
    let time = &reopened.snapshot()["time"];
    assert_eq!(time.fingerprint, "fp-time");
    assert_eq!(time.tools[1].name, "convert_time");
    assert_eq!(
        time.tools[1].input_schema["properties"]["time"]["description"],
        "HH:MM"
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn two_processes_writing_the_index_keep_each_others_servers() {
    let dir = tempfile::tempdir().unwrap();
    let first = ToolIndex::open(dir.path());
    let second = ToolIndex::open(dir.path());
    first.record("a", "fp", &[tool("one", "", json!({}))]);
    second.record("b", "fp", &[tool("two", "", json!({}))]);
    let names: Vec<String> = ToolIndex::open(dir.path()).snapshot().into_keys().collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn a_corrupt_index_is_rebuilt_without_failing() {
    for garbage in [
        "{not json".to_string(),
        json!({"version": 99, "servers": {}}).to_string(),
        json!({"version": 1, "servers": {"x": {"tools": 5}}}).to_string(),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(INDEX_FILE);
        std::fs::write(&file, &garbage).unwrap();
        let index = ToolIndex::open(dir.path());
        assert!(index.snapshot().is_empty(), "{garbage}");
        index.record("time", "fp", &[tool("now", "The time.", json!({}))]);
        let rebuilt = ToolIndex::open(dir.path()).snapshot();
        assert_eq!(rebuilt.keys().collect::<Vec<_>>(), ["time"], "{garbage}");
    }
}

#[test]
fn oversized_descriptions_and_schemas_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let index = ToolIndex::open(dir.path());
    let huge = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
    index.record("big", "fp", &[tool("t", &"d".repeat(10_000), huge)]);
    let entry = &index.snapshot()["big"];
    assert_eq!(entry.tools[0].description.len(), MAX_DESCRIPTION_CHARS);
    assert_eq!(entry.tools[0].input_schema, Value::Null);
}

#[test]
fn the_fingerprint_follows_the_command_not_the_environment() {
    let config = |command: &str, secret: &str| ServerConfig {
        name: "s".into(),
        command: command.into(),
        args: vec!["--flag".into()],
        env: [("TOKEN".to_string(), secret.to_string())].into(),
        cwd: None,
        description: String::new(),
        source: Default::default(),
        source_name: String::new(),
    };
    assert_eq!(
        fingerprint(&config("srv", "a")),
        fingerprint(&config("srv", "b"))
    );
    assert_ne!(
        fingerprint(&config("srv", "a")),
        fingerprint(&config("other", "a"))
    );
}

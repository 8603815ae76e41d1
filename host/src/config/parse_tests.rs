use std::path::{Path, PathBuf};

use super::{load_file, load_file_report};
use crate::config::error::ConfigErrorKind;
use crate::config::SkipReason;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn names(servers: &[crate::config::ServerConfig]) -> Vec<&str> {
    servers.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn every_server_table_key_is_recognized() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{"mcpServers": {"a": {"command": "x"}}}"#, "a"),
        (
            r#"{"servers": {"b": {"type": "stdio", "command": "x"}}}"#,
            "b",
        ),
        (r#"{"mcp.servers": {"c": {"command": "x"}}}"#, "c"),
        (r#"{"mcp": {"servers": {"d": {"command": "x"}}}}"#, "d"),
        (
            r#"{"mcp": {"e": {"type": "local", "command": ["x"]}}}"#,
            "e",
        ),
        (r#"{"context_servers": {"f": {"command": "x"}}}"#, "f"),
    ];
    for (text, name) in cases {
        let path = write(dir.path(), "c.json", text);
        let servers = load_file(&path).unwrap();
        assert_eq!(names(&servers), [name], "{text}");
        assert_eq!(servers[0].command, "x");
        assert_eq!(servers[0].source, path);
    }
    let toml = write(dir.path(), "c.toml", "[mcp_servers.g]\ncommand = \"x\"\n");
    assert_eq!(names(&load_file(&toml).unwrap()), ["g"]);
}

#[test]
fn format_is_sniffed_when_the_extension_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let toml = write(
        dir.path(),
        "servers.conf",
        "[mcp_servers.t]\ncommand = \"x\"\n",
    );
    assert_eq!(names(&load_file(&toml).unwrap()), ["t"]);
    let json = write(
        dir.path(),
        "servers",
        "\u{feff}{\"mcpServers\": {\"j\": {\"command\": \"x\"}}}",
    );
    assert_eq!(names(&load_file(&json).unwrap()), ["j"]);
}

#[test]
fn gemini_mcp_settings_block_is_not_mistaken_for_servers() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "settings.json",
        r#"{"mcp": {"allowed": ["a"], "serverCommand": "x"}, "mcpServers": {"a": {"command": "y"}}}"#,
    );
    let report = load_file_report(&path).unwrap();
    assert_eq!(names(&report.servers), ["a"]);
    assert!(report.invalid.is_empty() && report.skipped.is_empty());
}

#[test]
fn file_errors_say_what_was_expected_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let err = |name: &str, text: &str| {
        let path = write(dir.path(), name, text);
        let err = load_file(&path).unwrap_err();
        assert_eq!(err.path, path);
        assert!(err.to_string().starts_with(&path.display().to_string()));
        err.kind
    };
    let kind = err(
        "a.json",
        "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"y\",,}\n",
    );
    assert!(
        matches!(&kind, ConfigErrorKind::Json(e) if e.line() == 3),
        "{kind}"
    );
    let kind = err("b.toml", "[mcp_servers.x]\ncommand = \"y\"\nargs = [\n");
    assert!(
        matches!(kind, ConfigErrorKind::Toml { line: 3 | 4, .. }),
        "{kind}"
    );
    let kind = err("c.json", "[1, 2]");
    assert_eq!(
        kind.to_string(),
        "expected an object at the top level, found an array"
    );
    let kind = err("d.json", r#"{"mcpServers": ["x"]}"#);
    assert_eq!(
        kind.to_string(),
        "`mcpServers`: expected an object mapping server names to servers, found an array"
    );
    let kind = err("e.json", r#"{"theme": "dark"}"#);
    assert!(matches!(kind, ConfigErrorKind::NoServerTable));
    let kind = err(
        "f.json",
        r#"{"mcpServers": {"ok": {"command": "x"}, "bad": {"command": 1}}}"#,
    );
    assert_eq!(
        kind.to_string(),
        "server `bad`: `command`: expected a string or an array of strings, found a number"
    );
    let missing = dir.path().join("nope.json");
    assert!(matches!(
        load_file(&missing).unwrap_err().kind,
        ConfigErrorKind::Missing
    ));
    std::fs::write(dir.path().join("bin.json"), [0xff, 0xfe, b'{']).unwrap();
    let not_utf8 = load_file(&dir.path().join("bin.json")).unwrap_err();
    assert!(matches!(not_utf8.kind, ConfigErrorKind::NotUtf8));
}

#[test]
fn report_keeps_good_entries_beside_bad_remote_disabled_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mixed.json",
        r#"{
          "description": "file-wide",
          "mcpServers": {
            "good": {"command": "x"},
            "described": {"command": "x", "description": "own"},
            "bad": {"command": "x", "args": "oops"},
            "web": {"type": "sse", "url": "http://h/sse"},
            "off": {"command": "x", "disabled": true}
          },
          "servers": {"good": {"command": "other"}}
        }"#,
    );
    let report = load_file_report(&path).unwrap();
    let by_name = |name: &str| report.servers.iter().find(|s| s.name == name).unwrap();
    assert_eq!(report.servers.len(), 2);
    // Same-file duplicates: the first table (`mcpServers`) wins.
    assert_eq!(by_name("good").command, "x");
    assert_eq!(by_name("good").description, "file-wide");
    assert_eq!(by_name("described").description, "own");
    assert_eq!(report.invalid.len(), 1);
    assert_eq!(report.invalid[0].server, "bad");
    let mut reasons: Vec<(&str, &SkipReason)> = report
        .skipped
        .iter()
        .map(|s| (s.name.as_str(), &s.reason))
        .collect();
    reasons.sort_by_key(|(name, _)| *name);
    assert_eq!(
        reasons,
        [
            ("good", &SkipReason::Shadowed { by: path.clone() }),
            ("off", &SkipReason::Disabled),
            (
                "web",
                &SkipReason::NotStdio {
                    transport: "sse".into()
                }
            ),
        ]
    );
}

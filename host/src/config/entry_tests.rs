use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::{parse, Launch, Parsed};
use crate::config::error::EntryError;
use crate::config::expand::Expander;

fn env(name: &str) -> Option<String> {
    match name {
        "API_KEY" => Some("k-123".into()),
        "FORWARDED" => Some("from-host".into()),
        _ => None,
    }
}

fn run(value: serde_json::Value) -> Result<Parsed, EntryError> {
    let expander = Expander::for_file(Path::new("/p/.vscode/mcp.json"), None, &env);
    parse(&value, &expander)
}

fn launch(value: serde_json::Value) -> Launch {
    match run(value) {
        Ok(Parsed::Stdio(launch)) => launch,
        other => panic!("expected a stdio server, got {other:?}"),
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn standard_entry_with_all_fields() {
    let got = launch(json!({
        "type": "stdio",
        "command": "npx",
        "args": ["-y", "srv", "--port", 8080, true],
        "env": {"TOKEN": "${API_KEY}", "DEBUG": 1, "ON": false},
        "cwd": "${workspaceFolder}/tools",
        "description": "a server",
    }));
    assert_eq!(got.command, "npx");
    assert_eq!(got.args, ["-y", "srv", "--port", "8080", "true"]);
    assert_eq!(
        got.env,
        map(&[("TOKEN", "k-123"), ("DEBUG", "1"), ("ON", "false")])
    );
    assert_eq!(got.cwd, Some(PathBuf::from("/p/tools")));
    assert_eq!(got.description.as_deref(), Some("a server"));
}

#[test]
fn opencode_command_array_and_environment() {
    let got = launch(json!({
        "type": "local",
        "command": ["uvx", "mcp-server-git", "--repo", "."],
        "args": ["--verbose"],
        "environment": {"A": "b"},
        "enabled": true,
    }));
    assert_eq!(got.command, "uvx");
    assert_eq!(got.args, ["mcp-server-git", "--repo", ".", "--verbose"]);
    assert_eq!(got.env, map(&[("A", "b")]));
}

#[test]
fn old_opencode_env_pairs_and_zed_legacy_command_object() {
    let got = launch(json!({"command": "srv", "env": ["A=1", "B=x=y"]}));
    assert_eq!(got.env, map(&[("A", "1"), ("B", "x=y")]));

    let got = launch(json!({"command": {"path": "/bin/srv", "args": ["a"], "env": {"Z": "1"}}}));
    assert_eq!(got.command, "/bin/srv");
    assert_eq!(got.args, ["a"]);
    assert_eq!(got.env, map(&[("Z", "1")]));
}

#[test]
fn codex_env_vars_forward_host_values_without_overriding_env() {
    let got = launch(json!({
        "command": "srv",
        "env": {"API_KEY": "explicit"},
        "env_vars": ["API_KEY", "FORWARDED", "UNSET_VAR"],
    }));
    assert_eq!(
        got.env,
        map(&[("API_KEY", "explicit"), ("FORWARDED", "from-host")])
    );
}

#[test]
fn remote_and_disabled_entries_are_classified_not_rejected() {
    let remote = |v| match run(v) {
        Ok(Parsed::Remote { transport }) => transport,
        other => panic!("expected remote, got {other:?}"),
    };
    assert_eq!(remote(json!({"type": "http", "url": "https://x"})), "http");
    assert_eq!(
        remote(json!({"type": "sse", "url": "https://x/sse"})),
        "sse"
    );
    assert_eq!(remote(json!({"httpUrl": "https://x"})), "http");
    assert_eq!(remote(json!({"serverUrl": "https://x"})), "http");
    assert_eq!(
        remote(json!({"type": "remote", "url": "https://x"})),
        "remote"
    );
    assert_eq!(
        remote(json!({"source": "extension", "settings": {}})),
        "zed extension"
    );

    for off in [
        json!({"command": "srv", "disabled": true}),
        json!({"command": ["srv"], "enabled": false}),
        json!({"enabled": false}),
    ] {
        assert_eq!(run(off), Ok(Parsed::Disabled));
    }
}

#[test]
fn bad_shapes_name_the_field_and_what_arrived() {
    let cases = [
        (json!("npx"), "expected an object, found a string"),
        (
            json!({"args": []}),
            "expected a `command` (or a `url` for a remote server), found neither",
        ),
        (
            json!({"command": 5}),
            "`command`: expected a string or an array of strings, found a number",
        ),
        (
            json!({"command": "  "}),
            "`command`: expected a non-empty command, found an empty one",
        ),
        (
            json!({"command": []}),
            "`command`: expected a non-empty command, found an empty one",
        ),
        (
            json!({"command": "x", "args": "-y"}),
            "`args`: expected an array of strings, found a string",
        ),
        (
            json!({"command": "x", "args": ["a", {"b": 1}]}),
            "`args[1]`: expected a string, found an object",
        ),
        (
            json!({"command": "x", "env": {"K": {"nested": 1}}}),
            "`env.K`: expected a string, found an object",
        ),
        (
            json!({"command": "x", "env": {"K": null}}),
            "`env.K`: expected a string, found null",
        ),
        (
            json!({"command": "x", "env": "K=V"}),
            "`env`: expected an object of strings, found a string",
        ),
        (
            json!({"command": "x", "env": ["NOEQUALS"]}),
            "`env[0]`: expected `NAME=VALUE`, found `NOEQUALS`",
        ),
        (
            json!({"command": "x", "cwd": 3}),
            "`cwd`: expected a string, found a number",
        ),
        (
            json!({"command": "x", "disabled": "yes"}),
            "`disabled`: expected a boolean, found a string",
        ),
    ];
    for (value, message) in cases {
        let err = run(value.clone()).expect_err(&value.to_string());
        assert_eq!(err.to_string(), message, "{value}");
    }
}

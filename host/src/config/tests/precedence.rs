//! Precedence, shadowing, skipping and problem reporting across sources.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{skip_reason, Tree};
use crate::config::{discover, DiscoveryContext, SkipReason};

#[test]
fn later_duplicates_are_shadowed_and_non_stdio_self_and_disabled_are_skipped() {
    let tree = Tree::new();
    let d = discover(&tree.context());
    let (home, cwd) = (&tree.home, &tree.cwd);
    let by = |path: &Path| SkipReason::Shadowed {
        by: path.to_path_buf(),
    };
    let mcps = home.join("MCPs/tools.json");
    let claude = home.join(".claude.json");
    assert_eq!(
        skip_reason(&d, "shared", &tree.env_config),
        &by(&tree.explicit)
    );
    assert_eq!(skip_reason(&d, "shared", &mcps), &by(&tree.explicit));
    assert_eq!(skip_reason(&d, "env-shared", &mcps), &by(&tree.env_config));
    assert_eq!(
        skip_reason(&d, "scoped", &cwd.join(".mcp.json")),
        &by(&claude)
    );
    assert_eq!(skip_reason(&d, "scoped", &claude), &by(&claude));
    assert_eq!(
        skip_reason(&d, "scoped", &cwd.join(".mcp.json")).to_string(),
        format!("shadowed by {}", claude.display())
    );

    let self_file = cwd.join("claude_desktop_config.json");
    for name in ["codemode", "code-exec"] {
        assert_eq!(
            skip_reason(&d, name, &self_file),
            &SkipReason::SelfReference
        );
        assert!(!d.servers.contains_key(name));
    }

    let remote = |transport: &str| SkipReason::NotStdio {
        transport: transport.into(),
    };
    let remotes = [
        ("claude-remote", claude.clone(), "http"),
        (
            "opencode-remote",
            home.join(".config/opencode/opencode.json"),
            "remote",
        ),
        ("gemini-http", home.join(".gemini/settings.json"), "http"),
        ("gemini-sse", home.join(".gemini/settings.json"), "http"),
        ("codex-remote", home.join(".codex/config.toml"), "http"),
        ("cursor-remote", home.join(".cursor/mcp.json"), "http"),
        (
            "windsurf-remote",
            home.join(".codeium/windsurf/mcp_config.json"),
            "http",
        ),
        ("vscode-remote", cwd.join(".vscode/mcp.json"), "http"),
        (
            "zed-extension",
            home.join(".config/zed/settings.json"),
            "zed extension",
        ),
    ];
    for (name, source, transport) in &remotes {
        assert_eq!(skip_reason(&d, name, source), &remote(transport), "{name}");
    }
    let disabled = [
        (
            "opencode-disabled",
            home.join(".config/opencode/opencode.json"),
        ),
        ("codex-off", home.join(".codex/config.toml")),
        (
            "windsurf-off",
            home.join(".codeium/windsurf/mcp_config.json"),
        ),
    ];
    for (name, source) in &disabled {
        assert_eq!(
            skip_reason(&d, name, source),
            &SkipReason::Disabled,
            "{name}"
        );
    }
    assert_eq!(
        d.skipped.len(),
        5 + 2 + remotes.len() + disabled.len(),
        "{:#?}",
        d.skipped
    );
}

#[test]
fn broken_files_and_bad_entries_are_problems_with_their_path_and_the_rest_loads() {
    let tree = Tree::new();
    let d = discover(&tree.context());
    let broken = tree.home.join(".config/mcp/servers/broken.json");
    let project = tree.cwd.join("mcp-servers/project.json");
    let problems: BTreeSet<String> = d.problems.iter().map(ToString::to_string).collect();
    let expected: BTreeSet<String> = [
        format!(
            "{}: server `bad-args`: `args`: expected an array of strings, found a string",
            project.display()
        ),
        format!(
            "{}: server `bad-env`: `env.NESTED`: expected a string, found an object",
            project.display()
        ),
    ]
    .into_iter()
    .collect();
    let broken_problem = d.problems.iter().find(|p| p.path == broken).unwrap();
    assert!(
        broken_problem.message.starts_with("invalid JSON: "),
        "{broken_problem}"
    );
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(expected.is_subset(&problems), "{problems:#?}");
    // The broken file's neighbour and the bad entries' neighbour still load.
    assert!(d.servers.contains_key("filesystem"));
    assert!(d.servers.contains_key("project-tool"));
    assert!(!d.servers.contains_key("never-loaded"));
}

#[test]
fn allow_self_keeps_self_references() {
    let tree = Tree::new();
    let d = discover(&DiscoveryContext {
        allow_self: true,
        ..tree.context()
    });
    assert_eq!(d.servers["codemode"].command, "/usr/local/bin/codemode");
    assert!(d.servers.contains_key("code-exec"));
    assert!(!d
        .skipped
        .iter()
        .any(|s| s.reason == SkipReason::SelfReference));
}

#[test]
fn explicit_files_alone_and_missing_ones_reported() {
    let tree = Tree::new();
    let missing = tree.cwd.join("nope.json");
    let d = discover(&DiscoveryContext {
        explicit: vec![missing.clone(), tree.explicit.clone()],
        scan_default_locations: false,
        scan_project_locations: true,
        ..tree.context()
    });
    let names: Vec<&str> = d.servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["env-one", "env-shared", "explicit-one", "shared"]);
    assert_eq!(d.problems.len(), 1);
    assert_eq!(
        d.problems[0].to_string(),
        format!(
            "{}: expected a config file, found nothing at this path",
            missing.display()
        )
    );
    // A relative --config is relative to the context's working directory,
    // and an explicit file without any server table is a problem.
    std::fs::write(tree.cwd.join("empty.json"), "{}").unwrap();
    let d = discover(&DiscoveryContext {
        explicit: vec![PathBuf::from("empty.json")],
        env_config: None,
        scan_default_locations: false,
        scan_project_locations: true,
        ..tree.context()
    });
    assert!(d.servers.is_empty());
    assert_eq!(d.problems[0].path, tree.cwd.join("empty.json"));
    assert!(d.problems[0]
        .message
        .starts_with("expected one of the keys"));
}

#[test]
fn a_file_reached_twice_is_read_once() {
    let tree = Tree::new();
    let cursor = tree.home.join(".cursor/mcp.json");
    let d = discover(&DiscoveryContext {
        explicit: vec![cursor.clone()],
        ..tree.context()
    });
    assert_eq!(d.servers["cursor-tool"].source_name, "--config");
    assert!(!d.skipped.iter().any(|s| s.name == "cursor-tool"));
}

//! Every location is read, and each format yields the right fields.

use std::path::Path;

use super::{generic_name, Tree, FIXTURES, GENERIC};
use crate::config::sources::{default_sources, Kind};
use crate::config::{discover, load_file_report};

#[test]
fn every_default_location_is_populated_and_read() {
    let tree = Tree::new();
    for source in default_sources(Some(&tree.home), Some(&tree.cwd)) {
        let populated = match source.kind {
            Kind::Dir => std::fs::read_dir(&source.path).is_ok_and(|mut d| d.next().is_some()),
            Kind::File | Kind::ClaudeProject => source.path.is_file(),
        };
        assert!(populated, "test tree misses {}", source.path.display());
    }
    let d = discover(&tree.context());
    for file in &tree.files {
        let used = d.servers.values().any(|s| &s.source == file)
            || d.skipped.iter().any(|s| &s.source == file)
            || d.problems.iter().any(|p| &p.path == file);
        assert!(used, "nothing came from {}", file.display());
    }
    for (root, rel) in GENERIC {
        let server = &d.servers[&generic_name(rel)];
        assert_eq!(server.source, tree.at(*root, rel));
    }
}

#[test]
fn each_server_comes_from_its_source_in_its_format() {
    let tree = Tree::new();
    let d = discover(&tree.context());
    let (home, cwd) = (&tree.home, &tree.cwd);
    let expect = [
        ("explicit-one", tree.explicit.clone(), "--config"),
        ("shared", tree.explicit.clone(), "--config"),
        ("env-one", tree.env_config.clone(), "MCP_SERVERS_CONFIG"),
        ("env-shared", tree.env_config.clone(), "MCP_SERVERS_CONFIG"),
        (
            "mcps-tool",
            home.join("MCPs/tools.json"),
            "User MCPs (tools.json)",
        ),
        (
            "filesystem",
            home.join(".config/mcp/servers/filesystem.json"),
            "Standard MCP (filesystem.json)",
        ),
        (
            "project-tool",
            cwd.join("mcp-servers/project.json"),
            "Local Project (project.json)",
        ),
        (
            "claude-local",
            home.join(".claude.json"),
            "Claude Code (local scope)",
        ),
        (
            "scoped",
            home.join(".claude.json"),
            "Claude Code (local scope)",
        ),
        (
            "claude-project",
            cwd.join(".mcp.json"),
            "Claude Code (project scope)",
        ),
        (
            "claude-user",
            home.join(".claude.json"),
            "Claude Code (user scope)",
        ),
        (
            "desktop-memory",
            home.join(".config/Claude/claude_desktop_config.json"),
            "Claude Desktop",
        ),
        (
            "desktop-neighbor",
            cwd.join("claude_desktop_config.json"),
            "Local Claude Desktop",
        ),
        (
            "opencode-legacy",
            home.join(".opencode.json"),
            "OpenCode CLI",
        ),
        (
            "opencode-local",
            home.join(".config/opencode/opencode.json"),
            "OpenCode",
        ),
        (
            "gemini-python",
            home.join(".gemini/settings.json"),
            "Gemini CLI",
        ),
        (
            "codex-project",
            cwd.join(".codex/config.toml"),
            "OpenAI Codex (project)",
        ),
        (
            "codex-docs",
            home.join(".codex/config.toml"),
            "OpenAI Codex",
        ),
        (
            "codex quoted",
            home.join(".codex/config.toml"),
            "OpenAI Codex",
        ),
        ("cursor-tool", home.join(".cursor/mcp.json"), "Cursor"),
        (
            "windsurf-tool",
            home.join(".codeium/windsurf/mcp_config.json"),
            "Windsurf",
        ),
        (
            "vscode-workspace",
            cwd.join(".vscode/mcp.json"),
            "VS Code Workspace",
        ),
        (
            "vscode-profile",
            home.join(".config/Code/User/mcp.json"),
            "VS Code Global (Linux)",
        ),
        (
            "vscode-user",
            home.join(".config/Code/User/settings.json"),
            "VS Code Global (Linux)",
        ),
        (
            "antigravity-tool",
            home.join(".gemini/antigravity/mcp_config.json"),
            "Antigravity IDE",
        ),
        ("zed-custom", home.join(".config/zed/settings.json"), "Zed"),
        ("zed-legacy", home.join(".config/zed/settings.json"), "Zed"),
    ];
    for (name, source, source_name) in &expect {
        let server = d
            .servers
            .get(*name)
            .unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(
            (&server.source, server.source_name.as_str()),
            (source, *source_name),
            "{name}"
        );
    }
    let fixture_servers = d.servers.keys().filter(|n| !n.starts_with("generic "));
    assert_eq!(
        fixture_servers.count(),
        expect.len(),
        "{:?}",
        d.servers.keys()
    );

    let s = |name: &str| &d.servers[name];
    assert_eq!(s("shared").command, "from-explicit");
    assert_eq!(s("scoped").command, "from-local-scope");
    assert_eq!(
        s("explicit-one").description,
        "Servers passed with --config"
    );
    assert_eq!(s("mcps-tool").args, ["mcps-tool", "--port", "8080"]);
    assert_eq!(s("mcps-tool").description, "From the ~/MCPs folder");
    assert_eq!(
        s("project-tool").cwd.as_deref(),
        Some(Path::new("/srv/project"))
    );
    let home_var = std::env::var("HOME").unwrap_or_else(|_| "${HOME}".into());
    assert_eq!(
        s("desktop-memory").env["MEMORY_FILE_PATH"],
        format!("{home_var}/memory.json")
    );
    let acme = std::env::var("ACME_MODE").unwrap_or_else(|_| "dev".into());
    assert_eq!(s("claude-project").env["ACME_MODE"], acme);
    assert_eq!(s("opencode-legacy").env["MODE"], "a=b");
    assert_eq!(
        (
            s("opencode-local").command.as_str(),
            &s("opencode-local").args[..]
        ),
        ("bun", &["x".to_owned(), "my-mcp-command".to_owned()][..])
    );
    assert_eq!(s("opencode-local").env["MY_ENV_VAR"], "my_env_var_value");
    assert_eq!(s("gemini-python").description, "Python tools for Gemini");
    assert_eq!(s("gemini-python").env["API_KEY"], "$MY_API_TOKEN");
    let docs = s("codex-docs");
    assert_eq!(
        (docs.env["LOG_LEVEL"].as_str(), docs.env["RETRIES"].as_str()),
        ("debug", "3")
    );
    assert_eq!(docs.env.get("PATH"), std::env::var("PATH").ok().as_ref());
    assert_eq!(docs.cwd.as_deref(), Some(Path::new("/tmp")));
    let ws = s("vscode-workspace");
    assert_eq!(ws.args, [format!("{}/server.js", cwd.display())]);
    assert_eq!(ws.cwd.as_deref(), Some(cwd.as_path()));
    assert_eq!(ws.env["API_KEY"], "${input:api-key}");
    assert_eq!(
        s("vscode-profile").args[2],
        format!("{}/data.db", home.display())
    );
    assert_eq!(
        s("vscode-user").args,
        ["mcp-server-fetch", "--url=http://example.com/a//b"]
    );
    assert_eq!(s("zed-legacy").command, "legacy-command");
    assert_eq!(s("zed-legacy").env["K"], "V");
    assert!(!d.servers.contains_key("other-project-only"));
}

#[test]
fn every_fixture_loads_on_its_own_except_the_broken_one() {
    for entry in std::fs::read_dir(FIXTURES).unwrap() {
        let path = entry.unwrap().path();
        let result = load_file_report(&path);
        if path.file_name().is_some_and(|n| n == "broken.json") {
            let err = result.unwrap_err();
            assert_eq!(err.path, path);
        } else {
            let report = result.unwrap_or_else(|e| panic!("{e}"));
            assert!(!report.servers.is_empty(), "{}", path.display());
        }
    }
}

//! The default locations, in precedence order (the list in the module docs
//! of `config` mirrors this one; keep them together), each marked user or
//! project scope.

use std::path::{Path, PathBuf};

/// How a location holds its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// One file, any format.
    File,
    /// Every `*.json`, `*.jsonc` and `*.toml` file inside, in name order.
    Dir,
    /// `~/.claude.json`'s per-project table for the working directory.
    ClaudeProject,
}

/// Who put a location's files there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    /// Under `$HOME`, or named by the user (`--config`,
    /// `MCP_SERVERS_CONFIG`): trusted as written.
    User,
    /// Relative to the working directory: it comes with whatever was cloned
    /// there, so it is untrusted until approved and never shadows a user
    /// definition.
    Project,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub path: PathBuf,
    pub kind: Kind,
    pub name: &'static str,
    pub scope: Scope,
}

const MAC: &str = "Library/Application Support";

/// Default locations for `home` and `cwd`; home-relative ones are left out
/// when `home` is unknown, project-local ones when `cwd` is `None`.
pub(crate) fn default_sources(home: Option<&Path>, cwd: Option<&Path>) -> Vec<Source> {
    let mut list = Vec::new();
    let at_home = |list: &mut Vec<Source>, rel: &str, kind: Kind, name: &'static str| {
        if let Some(home) = home {
            list.push(Source {
                path: home.join(rel),
                kind,
                name,
                scope: Scope::User,
            });
        }
    };
    let at_cwd = |list: &mut Vec<Source>, rel: &str, kind: Kind, name: &'static str| {
        if let Some(cwd) = cwd {
            list.push(Source {
                path: cwd.join(rel),
                kind,
                name,
                scope: Scope::Project,
            });
        }
    };
    use Kind::{ClaudeProject, Dir, File};
    let l = &mut list;

    at_home(l, "MCPs", Dir, "User MCPs");
    at_home(l, ".config/mcp/servers", Dir, "Standard MCP");
    at_home(
        l,
        &format!("{MAC}/Claude Code/mcp/servers"),
        Dir,
        "Claude Code",
    );
    at_home(l, ".config/claude-code/mcp/servers", Dir, "Claude Code");
    at_home(
        l,
        &format!("{MAC}/Claude/mcp/servers"),
        Dir,
        "Claude Desktop",
    );
    at_home(l, ".config/Claude/mcp/servers", Dir, "Claude Desktop");
    at_cwd(l, "mcp-servers", Dir, "Local Project");

    at_home(
        l,
        ".claude.json",
        ClaudeProject,
        "Claude Code (local scope)",
    );
    at_cwd(l, ".mcp.json", File, "Claude Code (project scope)");
    at_home(l, ".claude.json", File, "Claude Code (user scope)");
    let code_config = "claude_code_config.json";
    at_home(
        l,
        &format!("{MAC}/Claude Code/{code_config}"),
        File,
        "Claude Code",
    );
    at_home(
        l,
        &format!(".config/claude-code/{code_config}"),
        File,
        "Claude Code",
    );
    at_home(
        l,
        &format!("{MAC}/Claude/{code_config}"),
        File,
        "Claude Code (Legacy)",
    );
    at_home(
        l,
        &format!(".config/Claude/{code_config}"),
        File,
        "Claude Code (Legacy)",
    );
    let desktop_config = "claude_desktop_config.json";
    at_home(
        l,
        &format!("{MAC}/Claude/{desktop_config}"),
        File,
        "Claude Desktop",
    );
    at_home(
        l,
        &format!(".config/Claude/{desktop_config}"),
        File,
        "Claude Desktop",
    );
    at_cwd(l, code_config, File, "Local Claude Code");
    at_cwd(l, desktop_config, File, "Local Claude Desktop");

    at_home(l, ".opencode.json", File, "OpenCode CLI");
    for (file, name) in [
        ("opencode_config.json", "OpenCode"),
        ("opencode_desktop_config.json", "OpenCode Desktop"),
    ] {
        at_home(l, &format!("{MAC}/OpenCode/{file}"), File, name);
        at_home(l, &format!(".config/opencode/{file}"), File, name);
    }
    at_cwd(l, "opencode_config.json", File, "Local OpenCode");
    at_cwd(
        l,
        "opencode_desktop_config.json",
        File,
        "Local OpenCode Desktop",
    );
    at_cwd(l, "opencode.json", File, "Local OpenCode");
    at_cwd(l, "opencode.jsonc", File, "Local OpenCode");
    at_home(l, ".config/opencode/opencode.json", File, "OpenCode");
    at_home(l, ".config/opencode/opencode.jsonc", File, "OpenCode");

    at_cwd(l, ".gemini/settings.json", File, "Gemini CLI (project)");
    at_home(l, ".gemini/settings.json", File, "Gemini CLI");
    at_cwd(l, ".codex/config.toml", File, "OpenAI Codex (project)");
    at_home(l, ".codex/config.toml", File, "OpenAI Codex");
    at_cwd(l, ".cursor/mcp.json", File, "Cursor (project)");
    at_home(l, ".cursor/mcp.json", File, "Cursor");
    at_home(l, ".codeium/windsurf/mcp_config.json", File, "Windsurf");

    at_cwd(l, ".vscode/mcp.json", File, "VS Code Workspace");
    at_home(
        l,
        &format!("{MAC}/Code/User/mcp.json"),
        File,
        "VS Code Global (macOS)",
    );
    at_home(
        l,
        &format!("{MAC}/Code/User/settings.json"),
        File,
        "VS Code Global (macOS)",
    );
    at_home(
        l,
        ".config/Code/User/mcp.json",
        File,
        "VS Code Global (Linux)",
    );
    at_home(
        l,
        ".config/Code/User/settings.json",
        File,
        "VS Code Global (Linux)",
    );

    at_home(l, ".antigravity/settings.json", File, "Antigravity IDE");
    at_home(l, ".antigravity/mcp.json", File, "Antigravity IDE");
    at_home(
        l,
        ".gemini/antigravity/mcp_config.json",
        File,
        "Antigravity IDE",
    );
    at_cwd(l, ".zed/settings.json", File, "Zed (project)");
    at_home(l, ".config/zed/settings.json", File, "Zed");
    list
}

#[cfg(test)]
mod tests {
    use super::{default_sources, Kind, Scope};
    use std::collections::HashSet;
    use std::path::Path;

    #[test]
    fn every_location_is_listed_once_and_home_ones_need_a_home() {
        let all = default_sources(Some(Path::new("/h")), Some(Path::new("/p")));
        let mut seen = HashSet::new();
        for source in &all {
            // ~/.claude.json is read twice on purpose: local scope, then user scope.
            assert!(
                seen.insert((source.path.clone(), source.kind)),
                "{source:?}"
            );
        }
        let cwd_only = default_sources(None, Some(Path::new("/p")));
        assert!(!cwd_only.is_empty());
        assert!(cwd_only.iter().all(|s| s.path.starts_with("/p")));
        let home_only = default_sources(Some(Path::new("/h")), None);
        assert!(!home_only.is_empty());
        assert!(home_only.iter().all(|s| s.path.starts_with("/h")));
        let home_count = all.iter().filter(|s| s.path.starts_with("/h")).count();
        assert_eq!(all.len(), cwd_only.len() + home_count);
    }

    #[test]
    fn home_locations_are_user_scope_and_working_directory_ones_project_scope() {
        let all = default_sources(Some(Path::new("/h")), Some(Path::new("/p")));
        for source in &all {
            let expected = if source.path.starts_with("/h") {
                Scope::User
            } else {
                Scope::Project
            };
            assert_eq!(source.scope, expected, "{source:?}");
        }
        // Claude Code's local scope (this project's table in ~/.claude.json)
        // is the user's own file: user scope, read before the user table.
        let index = |path: &str, kind: Kind| {
            all.iter()
                .position(|s| s.path == Path::new(path) && s.kind == kind)
                .unwrap()
        };
        let local = index("/h/.claude.json", Kind::ClaudeProject);
        let user = index("/h/.claude.json", Kind::File);
        assert!(local < user);
        assert_eq!(all[local].scope, Scope::User);
        assert_eq!(all[0].path, Path::new("/h/MCPs"));
    }
}

//! Discovery over a fake home and project tree with every default location
//! populated, from the fixture files in `tests/fixtures/config/`.

use std::path::{Path, PathBuf};

use super::{Discovery, DiscoveryContext, SkipReason, TrustStore};

mod found;
mod precedence;
mod trust;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/config/");

#[derive(Clone, Copy)]
enum Root {
    Home,
    Cwd,
}

/// Format fixtures and where they go.
const PLACED: &[(Root, &str, &str)] = &[
    (Root::Home, "MCPs/tools.json", "user_mcps.json"),
    (
        Root::Home,
        ".config/mcp/servers/filesystem.json",
        "standard_mcp.json",
    ),
    (Root::Home, ".config/mcp/servers/broken.json", "broken.json"),
    (Root::Home, ".claude.json", "claude_code.json"),
    (
        Root::Home,
        ".config/Claude/claude_desktop_config.json",
        "claude_desktop.json",
    ),
    (Root::Home, ".opencode.json", "opencode_legacy.json"),
    (
        Root::Home,
        ".config/opencode/opencode.json",
        "opencode.json",
    ),
    (Root::Home, ".gemini/settings.json", "gemini_settings.json"),
    (Root::Home, ".codex/config.toml", "codex.toml"),
    (Root::Home, ".cursor/mcp.json", "cursor.json"),
    (
        Root::Home,
        ".codeium/windsurf/mcp_config.json",
        "windsurf.json",
    ),
    (
        Root::Home,
        ".config/Code/User/mcp.json",
        "vscode_user_mcp.json",
    ),
    (
        Root::Home,
        ".config/Code/User/settings.json",
        "vscode_settings.jsonc",
    ),
    (
        Root::Home,
        ".gemini/antigravity/mcp_config.json",
        "antigravity.json",
    ),
    (Root::Home, ".config/zed/settings.json", "zed_settings.json"),
    (Root::Cwd, "mcp-servers/project.json", "bad_entry.json"),
    (Root::Cwd, ".mcp.json", "claude_project_mcp.json"),
    (Root::Cwd, "claude_desktop_config.json", "self_ref.json"),
    (Root::Cwd, ".codex/config.toml", "codex_project.toml"),
    (Root::Cwd, ".vscode/mcp.json", "vscode_mcp.json"),
];

/// Remaining locations: one plain `mcpServers` file each, whose server is
/// named after the location.
const GENERIC: &[(Root, &str)] = &[
    (
        Root::Home,
        "Library/Application Support/Claude Code/mcp/servers/a.json",
    ),
    (Root::Home, ".config/claude-code/mcp/servers/a.json"),
    (
        Root::Home,
        "Library/Application Support/Claude/mcp/servers/a.json",
    ),
    (Root::Home, ".config/Claude/mcp/servers/a.json"),
    (
        Root::Home,
        "Library/Application Support/Claude Code/claude_code_config.json",
    ),
    (Root::Home, ".config/claude-code/claude_code_config.json"),
    (
        Root::Home,
        "Library/Application Support/Claude/claude_code_config.json",
    ),
    (Root::Home, ".config/Claude/claude_code_config.json"),
    (
        Root::Home,
        "Library/Application Support/Claude/claude_desktop_config.json",
    ),
    (
        Root::Home,
        "Library/Application Support/OpenCode/opencode_config.json",
    ),
    (Root::Home, ".config/opencode/opencode_config.json"),
    (
        Root::Home,
        "Library/Application Support/OpenCode/opencode_desktop_config.json",
    ),
    (Root::Home, ".config/opencode/opencode_desktop_config.json"),
    (Root::Home, ".config/opencode/opencode.jsonc"),
    (Root::Home, "Library/Application Support/Code/User/mcp.json"),
    (
        Root::Home,
        "Library/Application Support/Code/User/settings.json",
    ),
    (Root::Home, ".antigravity/settings.json"),
    (Root::Home, ".antigravity/mcp.json"),
    (Root::Cwd, "claude_code_config.json"),
    (Root::Cwd, "opencode_config.json"),
    (Root::Cwd, "opencode_desktop_config.json"),
    (Root::Cwd, "opencode.json"),
    (Root::Cwd, "opencode.jsonc"),
    (Root::Cwd, ".gemini/settings.json"),
    (Root::Cwd, ".cursor/mcp.json"),
    (Root::Cwd, ".zed/settings.json"),
];

struct Tree {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
    explicit: PathBuf,
    env_config: PathBuf,
    files: Vec<PathBuf>,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut tree = Tree {
            home: root.join("home"),
            cwd: root.join("work/project"),
            explicit: root.join("etc/explicit.json"),
            env_config: root.join("etc/env_config.json"),
            files: Vec::new(),
            _dir: dir,
        };
        let cwd = tree.cwd.to_string_lossy().into_owned();
        for (root, rel, fixture) in PLACED {
            let text = fixture_text(fixture).replace("__CWD__", &cwd);
            tree.put(tree.at(*root, rel), &text);
        }
        for (root, rel) in GENERIC {
            let text = format!(
                r#"{{"mcpServers": {{"{}": {{"command": "generic"}}}}}}"#,
                generic_name(rel)
            );
            tree.put(tree.at(*root, rel), &text);
        }
        tree.put(tree.explicit.clone(), &fixture_text("explicit.json"));
        tree.put(tree.env_config.clone(), &fixture_text("env_config.json"));
        tree
    }

    fn at(&self, root: Root, rel: &str) -> PathBuf {
        match root {
            Root::Home => self.home.join(rel),
            Root::Cwd => self.cwd.join(rel),
        }
    }

    fn put(&mut self, path: PathBuf, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        self.files.push(path);
    }

    /// Context with every project file of the tree approved as written.
    fn context(&self) -> DiscoveryContext {
        let mut trust = TrustStore::default();
        for file in self.files.iter().filter(|f| f.starts_with(&self.cwd)) {
            trust.approve(file).unwrap();
        }
        DiscoveryContext {
            home: Some(self.home.clone()),
            cwd: self.cwd.clone(),
            env_config: Some(self.env_config.clone()),
            explicit: vec![self.explicit.clone()],
            allow_self: false,
            scan_default_locations: true,
            scan_project_locations: true,
            trust,
        }
    }
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap()
}

fn generic_name(rel: &str) -> String {
    format!("generic {rel}")
}

fn skip_reason<'a>(d: &'a Discovery, name: &str, source: &Path) -> &'a SkipReason {
    let found = d
        .skipped
        .iter()
        .find(|s| s.name == name && s.source == source);
    &found
        .unwrap_or_else(|| panic!("{name} from {} not skipped", source.display()))
        .reason
}

//! Recognizing configs that would launch codemode (or the reference Python
//! bridge it replaces) as one of its own proxied servers: codemode is
//! usually registered in the very client configs it reads, and proxying
//! itself would start a sandbox inside a sandbox on every call.

use std::path::Path;

use super::ServerConfig;

/// Names that mean "this bridge", compared case-insensitively against the
/// server name and the base names of the command and its arguments.
const SELF_TOKENS: &[&str] = &[
    "codemode",
    "mcp-server-code-execution-mode",
    "mcp_server_code_execution_mode",
];

/// True when `server` would launch codemode or the reference bridge.
pub fn is_self_server(server: &ServerConfig) -> bool {
    if is_token(&server.name) || names_self(&server.command) {
        return true;
    }
    server
        .args
        .iter()
        // A directory called `codemode` (this repository, say) handed to a
        // filesystem server is data, not the program being launched.
        .any(|arg| names_self(arg) && !Path::new(arg).is_dir())
}

fn is_token(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SELF_TOKENS.contains(&lower.as_str())
}

/// Whether a command or argument names the bridge: `codemode`,
/// `/opt/bin/codemode`, `codemode.exe`, `mcp_server_code_execution_mode.py`,
/// `@scope/codemode@1.2`.
fn names_self(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let base = lower.rsplit(['/', '\\']).next().unwrap_or(&lower);
    let base = base
        .strip_suffix(".py")
        .or_else(|| base.strip_suffix(".exe"))
        .unwrap_or(base);
    // An npm spec's version follows the last `@` that is not at the start.
    let base = match base.rfind('@') {
        Some(at) if at > 0 => &base[..at],
        _ => base,
    };
    SELF_TOKENS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::is_self_server;
    use crate::config::ServerConfig;
    use std::path::PathBuf;

    fn server(name: &str, command: &str, args: &[&str]) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Default::default(),
            cwd: None,
            description: String::new(),
            source: PathBuf::from("/x.json"),
            source_name: "test".into(),
        }
    }

    #[test]
    fn recognizes_every_way_of_launching_the_bridge() {
        let cases = [
            server("CodeMode", "anything", &[]),
            server("mcp-server-code-execution-mode", "uv", &[]),
            server("x", "/usr/local/bin/codemode", &["serve"]),
            server("x", "C:\\bin\\codemode.exe", &[]),
            server("x", "cargo", &["run", "-p", "codemode"]),
            server("x", "npx", &["-y", "@acme/codemode@1.2.0"]),
            server(
                "x",
                "uv",
                &["run", "python", "/src/mcp_server_code_execution_mode.py"],
            ),
            server("x", "uvx", &["mcp-server-code-execution-mode"]),
        ];
        for case in cases {
            assert!(is_self_server(&case), "{case:?}");
        }
    }

    #[test]
    fn other_servers_and_data_directories_are_not_self() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("codemode");
        std::fs::create_dir(&repo).unwrap();
        let repo = repo.to_string_lossy().into_owned();
        let cases = [
            server("filesystem", "npx", &["-y", "server-filesystem", &repo]),
            server("codemode-helper", "codemode-helper", &["codemodes"]),
            server("git", "uvx", &["mcp-server-git"]),
        ];
        for case in cases {
            assert!(!is_self_server(&case), "{case:?}");
        }
    }
}

//! `${...}` expansion in command, args, env values and cwd, in the forms
//! clients document: `${VAR}` and `${VAR:-default}` (Claude Code),
//! `${env:VAR}`, `${workspaceFolder}` and `${userHome}` (VS Code).
//!
//! Only these forms are touched. An unset variable or an unknown form
//! (`${input:token}`, `$VAR`) stays as written, so the server sees what the
//! user wrote rather than an empty string.

use std::path::{Path, PathBuf};

/// Where `${...}` values come from.
pub(crate) struct Expander<'a> {
    pub home: Option<PathBuf>,
    /// The VS Code workspace a `.vscode/*.json` file belongs to.
    pub workspace: Option<PathBuf>,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Off for [`Expander::inert`]: every form stays as written.
    pub active: bool,
}

impl<'a> Expander<'a> {
    /// Expander for a file: `${workspaceFolder}` is the directory holding
    /// the file's `.vscode` folder, when it is in one.
    pub fn for_file(
        path: &Path,
        home: Option<PathBuf>,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> Self {
        let parent = path.parent();
        let workspace = parent
            .filter(|dir| dir.file_name().is_some_and(|n| n == ".vscode"))
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        Self {
            home,
            workspace,
            env,
            active: true,
        }
    }

    /// Expander that expands nothing and forwards no variable: for files
    /// the user has not approved, whose entries must not carry codemode's
    /// environment (tokens) anywhere, not even into a listing.
    pub fn inert() -> Expander<'static> {
        Expander {
            home: None,
            workspace: None,
            env: &no_env,
            active: false,
        }
    }

    pub fn expand(&self, text: &str) -> String {
        if !self.active {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let inner = &after[..end];
            match self.lookup(inner) {
                Some(value) => out.push_str(&value),
                None => out.push_str(&rest[start..start + 2 + end + 1]),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn lookup(&self, inner: &str) -> Option<String> {
        match inner {
            "workspaceFolder" => return self.workspace.as_deref().map(path_string),
            "userHome" => return self.home.as_deref().map(path_string),
            _ => {}
        }
        if let Some(name) = inner.strip_prefix("env:") {
            return is_var_name(name).then(|| (self.env)(name)).flatten();
        }
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if !is_var_name(name) {
            return None;
        }
        (self.env)(name).or_else(|| default.map(str::to_owned))
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::Expander;
    use std::path::{Path, PathBuf};

    fn fake_env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn expander() -> Expander<'static> {
        Expander::for_file(
            Path::new("/proj/.vscode/mcp.json"),
            Some(PathBuf::from("/home/u")),
            &fake_env,
        )
    }

    #[test]
    fn supported_forms_expand() {
        let e = expander();
        assert_eq!(e.expand("Bearer ${TOKEN}"), "Bearer s3cret");
        assert_eq!(e.expand("${env:TOKEN}/${env:TOKEN}"), "s3cret/s3cret");
        assert_eq!(e.expand("${UNSET:-fallback}"), "fallback");
        assert_eq!(e.expand("${TOKEN:-fallback}"), "s3cret");
        assert_eq!(e.expand("x${EMPTY}y"), "xy");
        assert_eq!(e.expand("${workspaceFolder}/src"), "/proj/src");
        assert_eq!(e.expand("${userHome}/.cache"), "/home/u/.cache");
    }

    #[test]
    fn unknown_and_unset_forms_stay_as_written() {
        let e = expander();
        for text in [
            "${UNSET}",
            "${env:UNSET}",
            "${input:api_key}",
            "$TOKEN",
            "${not a name}",
            "tail ${TOKEN",
            "",
        ] {
            assert_eq!(e.expand(text), text);
        }
    }

    #[test]
    fn the_inert_expander_leaves_everything_as_written() {
        let e = Expander::inert();
        for text in ["${TOKEN}", "${env:TOKEN}", "${userHome}", "${UNSET:-d}"] {
            assert_eq!(e.expand(text), text);
        }
    }

    #[test]
    fn workspace_folder_is_only_known_inside_vscode_folders() {
        let e = Expander::for_file(Path::new("/proj/mcp.json"), None, &fake_env);
        assert_eq!(e.expand("${workspaceFolder}"), "${workspaceFolder}");
        assert_eq!(e.expand("${userHome}"), "${userHome}");
    }
}

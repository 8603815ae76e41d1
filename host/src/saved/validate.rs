//! What a saved tool may be: its name becomes a file name on the host and a
//! Python attribute in the sandbox, its source a file people read with
//! `codemode tools show`. Both come from a cell, so both are checked here
//! before anything touches the disk.

use super::SavedError;

/// Longest tool name, in characters (all ASCII).
pub const MAX_NAME_CHARS: usize = 64;
/// Largest source of one saved tool, in bytes.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;
/// Most saved tools one state directory holds.
pub const MAX_TOOLS: usize = 100;
/// Largest total size of all saved tools, in bytes.
pub const MAX_TOTAL_BYTES: u64 = 1024 * 1024;

/// A name cells may save under: an ASCII Python identifier, not a keyword,
/// not a dunder (those are the `mcp.saved` module's own attributes).
pub fn check_name(name: &str) -> Result<(), SavedError> {
    let bad = |why: &'static str| {
        Err(SavedError::BadName {
            name: super::shown(name),
            why,
        })
    };
    let Some(first) = name.chars().next() else {
        return bad("it is empty");
    };
    if name.chars().count() > MAX_NAME_CHARS {
        return bad("it is longer than 64 characters");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return bad("only ASCII letters, digits and _ are allowed");
    }
    if first.is_ascii_digit() {
        return bad("it starts with a digit");
    }
    if crate::proxy::alias::PY_KEYWORDS.contains(&name) {
        return bad("it is a Python keyword");
    }
    if name.len() > 4 && name.starts_with("__") && name.ends_with("__") {
        return bad("names of the form __x__ are reserved");
    }
    Ok(())
}

/// A source the host keeps: bounded UTF-8 (the wire already guarantees
/// UTF-8) without NUL, defining `name` at the top level. The host does not
/// parse Python; the guest compiled the source before sending it.
pub fn check_source(name: &str, source: &str) -> Result<(), SavedError> {
    let bad = |why: String| {
        Err(SavedError::BadSource {
            name: name.to_string(),
            why,
        })
    };
    if source.len() > MAX_SOURCE_BYTES {
        return bad(format!(
            "it is {} bytes, more than the {MAX_SOURCE_BYTES}-byte limit",
            source.len()
        ));
    }
    if source.contains('\0') {
        return bad("it contains a NUL character".into());
    }
    if !source.lines().any(|line| defines(line, name)) {
        return bad(format!(
            "it does not define `def {name}(` (or `async def {name}(`) at the start of a line"
        ));
    }
    Ok(())
}

/// Whether `line` starts the top-level definition of `name`.
fn defines(line: &str, name: &str) -> bool {
    let rest = match line.strip_prefix("async") {
        Some(after) if after.starts_with([' ', '\t']) => after.trim_start_matches([' ', '\t']),
        _ => line,
    };
    let Some(rest) = rest.strip_prefix("def") else {
        return false;
    };
    if !rest.starts_with([' ', '\t']) {
        return false;
    }
    rest.trim_start_matches([' ', '\t'])
        .strip_prefix(name)
        .is_some_and(|after| after.trim_start_matches([' ', '\t']).starts_with('('))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_accepted() {
        for name in ["helper", "_private", "double_2", "Parse", "match", "x"] {
            assert!(check_name(name).is_ok(), "{name}");
        }
        assert!(check_name(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn everything_else_is_refused_with_the_reason() {
        for (name, why) in [
            ("", "empty"),
            ("2fast", "digit"),
            ("class", "keyword"),
            ("None", "keyword"),
            ("__init__", "reserved"),
            ("../../etc/passwd", "ASCII letters"),
            ("a.py", "ASCII letters"),
            ("x y", "ASCII letters"),
            ("évian", "ASCII letters"),
            ("evil\u{1b}[31m", "ASCII letters"),
        ] {
            let err = check_name(name).expect_err(name).to_string();
            assert!(err.contains(why), "{name:?}: {err}");
            assert!(!err.contains('\u{1b}'), "the name is escaped: {err:?}");
        }
        let long = "a".repeat(65);
        assert!(check_name(&long)
            .expect_err("65 chars")
            .to_string()
            .contains("64"));
    }

    #[test]
    fn the_source_must_define_the_function_at_column_zero() {
        for source in [
            "def helper(x):\n    return x\n",
            "async def helper():\n    pass\n",
            "@decorator\ndef helper (x): pass\n",
            "import os\n\ndef\thelper(x):\n    return x\n",
        ] {
            assert!(check_source("helper", source).is_ok(), "{source:?}");
        }
        for source in [
            "",
            "x = 1\n",
            "    def helper(x):\n        return x\n",
            "def helper_2(x):\n    return x\n",
            "def helpers(x): pass\n",
            "class helper:\n    pass\n",
            "asyncdef helper(): pass\n",
            "define helper(): pass\n",
            "# def helper(x): pass\n",
        ] {
            let err = check_source("helper", source)
                .expect_err(source)
                .to_string();
            assert!(err.contains("does not define `def helper(`"), "{err}");
        }
    }

    #[test]
    fn oversized_sources_and_nul_are_refused() {
        let big = format!("def f():\n    return '{}'\n", "x".repeat(MAX_SOURCE_BYTES));
        assert!(check_source("f", &big)
            .expect_err("too big")
            .to_string()
            .contains("65536-byte limit"));
        assert!(check_source("f", "def f():\n    return '\0'\n")
            .expect_err("NUL")
            .to_string()
            .contains("NUL"));
    }
}

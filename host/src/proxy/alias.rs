//! Python names for servers and tools, by the reference bridge's rules:
//! lowercase, non-identifier characters to `_`, a leading digit prefixed
//! with `_`, keywords suffixed with `_`, collisions numbered `_2`, `_3`...

use std::collections::BTreeSet;

/// Python's hard keywords (`keyword.kwlist`, as the guest's `keyword.iskeyword`
/// and the reference bridge use): not usable as a name. Soft keywords
/// (`match`, `case`, `type`, `_`) are valid names and attributes, so
/// aliases keep them as they are.
pub(crate) const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// The identifier for one name, before collision numbering.
pub fn sanitize(name: &str, default: &str) -> String {
    let mut out = String::with_capacity(name.len());
    // Like the reference's re.sub(r"[^0-9a-zA-Z_]+", "_"): a run of other
    // characters becomes one underscore; existing underscores stay.
    let mut in_run = false;
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    if out.is_empty() {
        out = default.to_string();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if PY_KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Assigns unique aliases to `names` in order.
pub fn assign(names: &[String], default: &str) -> Vec<String> {
    let mut used = BTreeSet::new();
    names
        .iter()
        .map(|n| {
            let base = sanitize(n, default);
            let mut alias = base.clone();
            let mut k = 1;
            while used.contains(&alias) {
                k += 1;
                alias = format!("{base}_{k}");
            }
            used.insert(alias.clone());
            alias
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_reference_rules() {
        assert_eq!(sanitize("GitHub-Server", "s"), "github_server");
        assert_eq!(sanitize("2fa", "s"), "_2fa");
        assert_eq!(sanitize("class", "s"), "class_");
        // Soft keywords are names Python accepts; lowercase none is no keyword.
        for soft in ["match", "case", "type", "none", "true"] {
            assert_eq!(sanitize(soft, "s"), soft);
        }
        assert_eq!(sanitize("", "tool"), "tool");
        let names = vec!["a-b".to_string(), "a_b".to_string(), "A.B".to_string()];
        assert_eq!(assign(&names, "s"), vec!["a_b", "a_b_2", "a_b_3"]);
    }
}

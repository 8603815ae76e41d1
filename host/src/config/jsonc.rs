//! JSONC to JSON: VS Code, Gemini, OpenCode and Zed settings may hold `//`
//! and `/* */` comments and trailing commas, which serde_json rejects.
//!
//! Stripped bytes become spaces (newlines stay), so serde_json's line and
//! column numbers still point into the file the user edits.

/// Returns `text` with comments and trailing commas blanked out; strict
/// JSON comes back unchanged.
pub(crate) fn to_json(text: &str) -> String {
    let mut out = strip_comments(text.as_bytes());
    blank_trailing_commas(&mut out);
    // Only ASCII bytes were replaced by ASCII spaces, and whole comments
    // (which may hold multi-byte characters) were blanked byte by byte,
    // so the result is valid UTF-8 whenever the input was.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn strip_comments(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b'"' => {
                let end = string_end(input, i);
                out.extend_from_slice(&input[i..end]);
                i = end;
            }
            b'/' if input.get(i + 1) == Some(&b'/') => {
                while i < input.len() && input[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            b'/' if input.get(i + 1) == Some(&b'*') => {
                out.extend_from_slice(b"  ");
                i += 2;
                while i < input.len() && !(input[i] == b'*' && input.get(i + 1) == Some(&b'/')) {
                    out.push(blank(input[i]));
                    i += 1;
                }
                if i < input.len() {
                    out.extend_from_slice(b"  ");
                    i += 2;
                }
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// Index just past the string literal starting at `start` (a `"`), or the
/// end of input for an unterminated one (serde_json reports that).
fn string_end(input: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < input.len() {
        match input[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    input.len()
}

fn blank(byte: u8) -> u8 {
    if byte == b'\n' || byte == b'\r' {
        byte
    } else {
        b' '
    }
}

/// Comments are gone by now, so only whitespace can sit between a comma
/// and the bracket that makes it trailing.
fn blank_trailing_commas(bytes: &mut [u8]) {
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = string_end(bytes, i),
            b',' => {
                let next = bytes[i + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .copied();
                if matches!(next, Some(b'}' | b']')) {
                    bytes[i] = b' ';
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::to_json;
    use serde_json::{json, Value};

    fn parse(text: &str) -> Value {
        serde_json::from_str(&to_json(text)).unwrap()
    }

    #[test]
    fn strict_json_is_unchanged() {
        let text = r#"{"a": [1, 2], "b": {"c": "d"}}"#;
        assert_eq!(to_json(text), text);
    }

    #[test]
    fn comments_and_trailing_commas_are_removed() {
        let text = "{\n  // line comment\n  \"a\": 1, /* block\n comment */ \"b\": [1, 2,],\n}\n";
        assert_eq!(parse(text), json!({"a": 1, "b": [1, 2]}));
    }

    #[test]
    fn comment_markers_and_commas_inside_strings_are_kept() {
        let text = r#"{"url": "http://x//y", "s": "/* no */", "t": ",}", "q": "a\"//b",}"#;
        assert_eq!(
            parse(text),
            json!({"url": "http://x//y", "s": "/* no */", "t": ",}", "q": "a\"//b"})
        );
    }

    #[test]
    fn line_numbers_survive_stripping() {
        let text = "{\n/* one\ntwo */\n\"a\": nope,\n}";
        let err = serde_json::from_str::<Value>(&to_json(text)).unwrap_err();
        assert_eq!(err.line(), 4);
    }

    #[test]
    fn multibyte_text_in_comments_and_strings_survives() {
        let text = "{\"név\": \"é\", // ünïcode ✓\n \"b\": 1 /* ✓ */}";
        assert_eq!(parse(text), json!({"név": "é", "b": 1}));
    }
}

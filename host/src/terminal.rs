//! Text that reaches a person's terminal but was chosen by someone else (a
//! sandboxed cell, a file planted in the state directory): escape sequences
//! in it could move the cursor, rewrite earlier lines, set the window title
//! or, on some terminals, answer back into the input. [`sanitize_for_terminal`]
//! is the one place that makes such text inert.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character spelled out instead of sent: C0
/// (ESC, CR, LF, TAB, BEL...), DEL, C1 (U+0080-U+009F, which some terminals
/// obey like ESC-sequences) and the bidirectional overrides that make text
/// display in another order than it reads ("Trojan Source"). Everything
/// else, including other non-ASCII text, is kept as is.
pub fn sanitize_for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Unicode's explicit directional embeddings, overrides and isolates, plus
/// the marks that steer them.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert_eq!(sanitize_for_terminal("helper_2"), "helper_2");
        assert!(matches!(
            sanitize_for_terminal("x = 'ünïcode ✓'  # fine"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn escape_sequences_are_spelled_out() {
        // Set the window title, clear the screen, colour the rest red.
        let hostile = "x\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31mred";
        let shown = sanitize_for_terminal(hostile);
        assert_eq!(shown, "x\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred");
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}'));
    }

    #[test]
    fn carriage_return_and_newline_cannot_rewrite_a_line() {
        assert_eq!(
            sanitize_for_terminal("safe\rEVIL\nnext"),
            "safe\\rEVIL\\nnext"
        );
    }

    #[test]
    fn nul_del_and_c1_controls_are_escaped() {
        // U+009B is CSI on terminals that honour 8-bit controls.
        assert_eq!(
            sanitize_for_terminal("a\0b\u{7f}c\u{9b}31md\u{85}"),
            "a\\x00b\\x7fc\\x9b31md\\x85"
        );
    }

    #[test]
    fn bidi_overrides_are_escaped() {
        assert_eq!(
            sanitize_for_terminal("access\u{202e}nimda\u{2066}"),
            "access\\u{202e}nimda\\u{2066}"
        );
    }
}

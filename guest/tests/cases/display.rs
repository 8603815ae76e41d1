//! A cell's last value, shown as a notebook shows it: its repr, its JSON
//! when it is plain data, nothing for None, statements or a trailing `;`,
//! a note when the repr fails, and the cell's interrupt while the repr runs.

use codemode_proto::v1::{Display, Status};

use crate::common::*;

fn shown(guest: &mut Guest, code: &str) -> Option<Display> {
    let out = guest.run(code);
    out.assert_success();
    out.finished.display.clone()
}

fn text_and_json(display: Option<Display>) -> (String, String) {
    let display = display.expect("a shown value");
    (display.text, display.result_json)
}

#[test]
fn the_last_expression_shows_its_repr_and_its_json() {
    let mut guest = Guest::started(vec![]);
    assert_eq!(
        text_and_json(shown(&mut guest, "x = 40\nx + 2")),
        ("42".into(), "42".into())
    );
    assert_eq!(
        text_and_json(shown(
            &mut guest,
            "{'a': [1, 2.5, None, True], 'b': ('t',)}"
        )),
        (
            "{'a': [1, 2.5, None, True], 'b': ('t',)}".into(),
            r#"{"a":[1,2.5,null,true],"b":["t"]}"#.into()
        )
    );
    assert_eq!(
        text_and_json(shown(&mut guest, "'héllo'  # a comment")),
        ("'héllo'".into(), r#""héllo""#.into())
    );
}

#[test]
fn values_that_are_not_plain_data_show_text_only() {
    let mut guest = Guest::started(vec![]);
    for (code, text) in [
        ("{1, 2}", "{1, 2}"),
        ("{1: 'a'}", "{1: 'a'}"),
        ("float('nan')", "nan"),
        ("2 ** 70", "1180591620717411303424"),
        (
            "class P:\n    def __repr__(self):\n        return 'P()'\nP()",
            "P()",
        ),
        ("l = []\nl.append(l)\nl", "[[...]]"),
    ] {
        let (shown_text, json) = text_and_json(shown(&mut guest, code));
        assert_eq!((shown_text.as_str(), json.as_str()), (text, ""), "{code}");
    }
    let (_, json) = text_and_json(shown(&mut guest, "list(range(20_000))"));
    assert_eq!(json, "", "too many items for the JSON check");
}

#[test]
fn none_statements_and_a_trailing_semicolon_show_nothing() {
    let mut guest = Guest::started(vec![]);
    for code in [
        "None",
        "x = 5",
        "x;",
        "x ;  # quiet",
        "print('p')",
        "def f():\n    return 1",
        "for i in range(2):\n    i",
        "",
    ] {
        assert_eq!(shown(&mut guest, code), None, "{code:?}");
    }
    assert_eq!(
        text_and_json(shown(&mut guest, "x; x * 2")),
        ("10".into(), "10".into())
    );
}

#[test]
fn the_last_expression_may_await() {
    let mut guest = Guest::started(vec![]);
    let code = "import asyncio\nasync def f():\n    await asyncio.sleep(0.01)\n    return [1, 2]\nawait f()";
    assert_eq!(
        text_and_json(shown(&mut guest, code)),
        ("[1, 2]".into(), "[1,2]".into())
    );
}

#[test]
fn a_failing_repr_is_a_note_and_a_huge_one_is_cut() {
    let mut guest = Guest::started(vec![]);
    let code = "class Bad:\n    def __repr__(self):\n        raise ValueError('no repr')\nBad()";
    let (text, json) = text_and_json(shown(&mut guest, code));
    assert_eq!(
        text,
        "[codemode: repr() of this Bad failed: ValueError: no repr]"
    );
    assert_eq!(json, "");
    let (text, json) = text_and_json(shown(&mut guest, "'x' * 1_000_000"));
    assert!(text.len() < 40 * 1024, "{}", text.len());
    assert!(text.contains("characters cut"), "{text:.100}");
    assert_eq!(json, "", "beyond the JSON bound");
}

#[test]
fn an_error_in_the_last_expression_fails_the_cell_without_display() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("x = 1\n1 / 0");
    assert_eq!(out.status(), Status::Error);
    assert_eq!(out.finished.display, None);
    let tb = &out.finished.error.as_ref().unwrap().traceback;
    assert!(tb.contains("line 2, in <module>\n    1 / 0"), "{tb}");
}

#[test]
fn a_repr_that_hangs_is_interrupted_by_the_timeout() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run_timeout(
        "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nSlow()",
        300,
    );
    assert_eq!(out.status(), Status::Timeout, "{out:#?}");
    assert_eq!(out.finished.display, None);
    guest.run("print('alive')").assert_success();
}

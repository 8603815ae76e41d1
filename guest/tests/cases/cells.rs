//! Cells: persistent state, top-level await, errors reported with a
//! traceback trimmed to the user's code, SystemExit surviving.

use codemode_proto::v1::Status;

use crate::common::*;

#[test]
fn globals_and_imports_persist_between_cells() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("import math\nx = 41\ndef inc(v):\n    return v + 1")
        .assert_success();
    let out = guest.run("print(inc(x), math.floor(2.5), __name__)");
    out.assert_success();
    assert_eq!(out.stdout, "42 2 __main__\n");
}

#[test]
fn top_level_await_runs_on_one_persistent_loop() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("import asyncio\nloop1 = asyncio.get_running_loop()\nawait asyncio.sleep(0.01)")
        .assert_success();
    let out = guest.run(
        "async def f(n):\n    await asyncio.sleep(0.01)\n    return n * 2\n\
         r = await asyncio.gather(*(f(i) for i in range(5)))\n\
         print(r, asyncio.get_running_loop() is loop1)",
    );
    out.assert_success();
    assert_eq!(out.stdout, "[0, 2, 4, 6, 8] True\n");
}

#[test]
fn tasks_spawned_by_a_cell_keep_running_after_it() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("import asyncio\nticks = []\nasync def tick():\n    while True:\n        ticks.append(1)\n        await asyncio.sleep(0.01)\nt = asyncio.create_task(tick())")
        .assert_success();
    let out = guest.run("await asyncio.sleep(0.2)\nprint(len(ticks) > 3)");
    assert_eq!(out.stdout, "True\n");
}

#[test]
fn an_exception_reports_type_message_and_a_trimmed_traceback() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("def inner():\n    return 1 / 0\n\nx = 5\ninner()");
    assert_eq!(out.status(), Status::Error);
    let error = out.finished.error.as_ref().unwrap();
    assert_eq!(error.r#type, "ZeroDivisionError");
    assert_eq!(error.message, "division by zero");
    let tb = &error.traceback;
    assert!(tb.starts_with("Traceback (most recent call last):"), "{tb}");
    assert!(
        tb.contains("File \"<cell-1>\", line 5, in <module>\n    inner()"),
        "{tb}"
    );
    assert!(tb.contains("line 2, in inner\n    return 1 / 0"), "{tb}");
    assert!(
        tb.ends_with("ZeroDivisionError: division by zero\n"),
        "{tb}"
    );
    assert!(!tb.contains("<codemode>"), "guest frames leaked: {tb}");
    // The state before the error survives.
    assert_eq!(guest.run("print(x)").stdout, "5\n");
}

#[test]
fn chained_exceptions_are_trimmed_too() {
    let mut guest = Guest::started(vec![]);
    let out = guest
        .run("try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('bad key') from e");
    let error = out.finished.error.as_ref().unwrap();
    assert_eq!(error.r#type, "ValueError");
    assert!(
        error.traceback.contains("KeyError: 'k'"),
        "{}",
        error.traceback
    );
    assert!(
        error.traceback.contains("direct cause"),
        "{}",
        error.traceback
    );
    assert!(
        !error.traceback.contains("<codemode>"),
        "{}",
        error.traceback
    );
}

#[test]
fn a_syntax_error_points_at_the_cell() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("x = (1,\nprint(x)");
    assert_eq!(out.status(), Status::Error);
    let error = out.finished.error.as_ref().unwrap();
    assert_eq!(error.r#type, "SyntaxError");
    assert!(
        error
            .traceback
            .starts_with("  File \"<cell-1>\", line 1\n    x = (1,\n"),
        "{}",
        error.traceback
    );
    assert!(
        !error.traceback.contains("<codemode>"),
        "{}",
        error.traceback
    );
}

#[test]
fn system_exit_is_an_error_and_the_session_lives_on() {
    let mut guest = Guest::started(vec![]);
    guest.run("y = 'kept'").assert_success();
    let out = guest.run("import sys\nsys.exit(3)");
    assert_eq!(out.status(), Status::Error);
    assert_eq!(out.error_type(), "SystemExit");
    assert_eq!(out.finished.error.as_ref().unwrap().message, "3");
    let out = guest.run("exit()");
    assert_eq!(out.error_type(), "SystemExit");
    assert_eq!(guest.run("print(y)").stdout, "kept\n");
}

#[test]
fn system_exit_from_a_spawned_task_does_not_end_the_session() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run(
        "import asyncio, sys\nasync def bye():\n    sys.exit(1)\n\
         t = asyncio.create_task(bye())\nawait asyncio.sleep(0.05)\nprint('still here')",
    );
    out.assert_success();
    assert_eq!(out.stdout, "still here\n");
    assert_eq!(guest.run("print(1 + 1)").stdout, "2\n");
}

#[test]
fn duration_is_measured() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("import time; time.sleep(0.1)");
    assert!(
        out.finished.duration_us >= 100_000,
        "{}",
        out.finished.duration_us
    );
    assert!(
        out.finished.duration_us < 5_000_000,
        "{}",
        out.finished.duration_us
    );
}

#[test]
fn functions_from_cells_have_their_source() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("def shout(s):\n    return s.upper()")
        .assert_success();
    let out = guest.run("import inspect\nprint(inspect.getsource(shout), end='')");
    // The cell's text had no final newline.
    assert_eq!(out.stdout, "def shout(s):\n    return s.upper()");
}

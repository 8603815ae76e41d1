//! Timeouts and cancels interrupt the running cell, report TIMEOUT or
//! CANCELLED, and leave the session usable.

use std::time::{Duration, Instant};

use codemode_proto::v1::{guest_message, Status};

use crate::common::*;

#[test]
fn a_busy_loop_times_out_and_state_survives() {
    let mut guest = Guest::started(vec![]);
    guest.run("kept = [1, 2]").assert_success();
    let started = Instant::now();
    let out = guest.run_timeout("n = 0\nwhile True:\n    n += 1", 300);
    assert_eq!(out.status(), Status::Timeout, "{out:#?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = out.finished.error.as_ref().unwrap();
    assert_eq!(error.r#type, "TimeoutError");
    assert!(error.traceback.contains("<cell-2>"), "{}", error.traceback);
    let after = guest.run("print(kept, n > 0)");
    after.assert_success();
    assert_eq!(after.stdout, "[1, 2] True\n");
}

#[test]
fn an_await_times_out() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run_timeout("import asyncio\nawait asyncio.sleep(100)", 300);
    assert_eq!(out.status(), Status::Timeout);
    assert!(out.finished.duration_us < 5_000_000);
    guest.run("print('alive')").assert_success();
}

#[test]
fn a_blocking_sleep_times_out() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run_timeout("import time\ntime.sleep(100)", 300);
    assert_eq!(out.status(), Status::Timeout);
    assert!(out.finished.duration_us < 5_000_000);
}

#[test]
fn a_timeout_of_one_cell_does_not_touch_the_next() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run_timeout("import time\ntime.sleep(0.05)", 100);
    out.assert_success();
    let out = guest.run("import time\ntime.sleep(0.3)\nprint('ok')");
    out.assert_success();
    assert_eq!(out.stdout, "ok\n");
}

#[test]
fn cancel_interrupts_a_sleeping_cell() {
    let mut guest = Guest::started(vec![]);
    let id = guest.execute(
        "import asyncio\nprint('waiting', flush=True)\nawait asyncio.sleep(100)",
        0,
    );
    // Cancel once the cell is surely running (its output arrived).
    match guest.recv() {
        Some(guest_message::Kind::Output(out)) => assert_eq!(out.data, b"waiting\n"),
        other => panic!("expected output, got {other:?}"),
    }
    guest.cancel(id);
    let out = guest.collect(id, |_, _| {});
    assert_eq!(out.status(), Status::Cancelled);
    assert_eq!(out.error_type(), "CancelledError");
    guest.run("print('alive')").assert_success();
}

#[test]
fn cancel_interrupts_a_busy_cell() {
    let mut guest = Guest::started(vec![]);
    let id = guest.execute("print('go', flush=True)\nwhile True: pass", 0);
    assert!(matches!(guest.recv(), Some(guest_message::Kind::Output(_))));
    guest.cancel(id);
    let out = guest.collect(id, |_, _| {});
    assert_eq!(out.status(), Status::Cancelled);
    assert_eq!(guest.run("print(3)").stdout, "3\n");
}

#[test]
fn cancel_stops_a_user_task_that_blocks_the_loop() {
    let mut guest = Guest::started(vec![]);
    let id = guest.execute(
        "import asyncio\nasync def spin():\n    while True: pass\n\
         t = asyncio.create_task(spin())\nprint('go', flush=True)\nawait asyncio.sleep(100)",
        0,
    );
    assert!(matches!(guest.recv(), Some(guest_message::Kind::Output(_))));
    guest.cancel(id);
    let out = guest.collect(id, |_, _| {});
    assert_eq!(out.status(), Status::Cancelled);
    assert_eq!(guest.run("print(4)").stdout, "4\n");
}

#[test]
fn cancel_during_pending_tool_calls() {
    let mut guest = Guest::started(vec![fake_server::server()]);
    let id = guest.execute("r = await mcp_everything.echo(message='never answered')", 0);
    let req = match guest.recv() {
        Some(guest_message::Kind::RpcRequest(req)) => req,
        other => panic!("expected an RPC, got {other:?}"),
    };
    guest.cancel(id);
    let out = guest.collect(id, |_, _| {});
    assert_eq!(out.status(), Status::Cancelled);
    // A late answer to the abandoned request is accepted and dropped.
    guest.host.respond(fake_server::answer(&req));
    let out = guest.run("print(await mcp_everything.echo(message='x'))");
    assert_eq!(out.stdout, "Echo: x\n");
}

#[test]
fn a_cell_replacing_the_sigint_handler_cannot_escape_the_next_timeout() {
    let mut guest = Guest::started(vec![]);
    guest
        .run("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)")
        .assert_success();
    let out = guest.run_timeout("while True: pass", 300);
    assert_eq!(out.status(), Status::Timeout);
}

#[test]
fn an_enormous_timeout_means_no_timeout() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run_timeout("print('fine')", u64::MAX);
    out.assert_success();
    assert_eq!(out.stdout, "fine\n");
}

#[test]
fn a_timeout_that_fires_while_the_cell_starts_still_stops_it() {
    let mut guest = Guest::started(vec![]);
    for _ in 0..5 {
        let out = guest.run_timeout("while True: pass", 1);
        assert_eq!(out.status(), Status::Timeout);
    }
}

//! codemode benchmarks, each against a baseline measured in the same run:
//! a direct MCP `tools/call` to the same server, and a native process.
//! Run: `cargo bench -p codemode-tests --features system --bench bench` after scripts/test.sh
//! (it needs the release binaries, the image and the test servers).
//! Prints a markdown table with the date and machine.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::json;

use common::{everything_js, Fixture};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

async fn direct_echo(n: usize) -> Duration {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(everything_js()).arg("stdio");
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let mut times = Vec::new();
    for i in 0..n {
        let mut args = serde_json::Map::new();
        args.insert("message".into(), json!(format!("m{i}")));
        let t = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
            .await
            .unwrap();
        times.push(t.elapsed());
    }
    let _ = client.cancel().await;
    median(times)
}

/// Calls per second of `n` concurrent `echo` calls from one rmcp client.
async fn direct_gather(n: usize) -> f64 {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(everything_js()).arg("stdio");
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let peer = client.peer().clone();
    let batch = |count: usize| {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..count {
            let peer = peer.clone();
            let mut args = serde_json::Map::new();
            args.insert("message".into(), json!(format!("m{i}")));
            set.spawn(async move {
                peer.call_tool(CallToolRequestParams::new("echo").with_arguments(args))
                    .await
            });
        }
        set
    };
    batch(10).join_all().await;
    let t = Instant::now();
    for r in batch(n).join_all().await {
        r.unwrap();
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let _ = client.cancel().await;
    rate
}

fn native_python(n: usize) -> Duration {
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let ok = std::process::Command::new("/usr/bin/python3.11")
                .args(["-c", "import asyncio"])
                .status()
                .unwrap();
            assert!(ok.success());
            t.elapsed()
        })
        .collect();
    median(times)
}

/// Per-call cost of `await mcp_everything.echo(...)` inside one cell.
async fn in_cell_echo(runtime: &str, n: usize) -> Duration {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let warm = c
        .run_with("await mcp_everything.echo(message='warm')", &["everything"])
        .await;
    assert_eq!(warm.status(), "success");
    let empty = {
        let t = Instant::now();
        c.run("pass").await;
        t.elapsed()
    };
    let code = format!("for i in range({n}):\n    await mcp_everything.echo(message=str(i))");
    let t = Instant::now();
    let r = c.run(&code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let total = t.elapsed().saturating_sub(empty);
    c.close().await;
    total / n as u32
}

/// Calls per second of `asyncio.gather` over `n` echo calls in one cell.
async fn in_cell_gather(runtime: &str, n: usize) -> f64 {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let warm = c
        .run_with(
            "import asyncio\nawait mcp_everything.echo(message='warm')",
            &["everything"],
        )
        .await;
    assert_eq!(warm.status(), "success");
    let empty = {
        let t = Instant::now();
        c.run("pass").await;
        t.elapsed()
    };
    let code = format!(
        "r = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range({n})])\nassert len(r) == {n}"
    );
    let t = Instant::now();
    let r = c.run(&code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let total = t.elapsed().saturating_sub(empty);
    c.close().await;
    n as f64 / total.as_secs_f64()
}

/// A new client's first `run_python` right after `initialize`, with the
/// default warm pool (which may still be starting).
async fn first_call_after_initialize(runtime: &str, n: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..n {
        let fx = Fixture::new();
        let c = fx.client(runtime, &[]).await;
        let t = Instant::now();
        let r = c.run("x = 1").await;
        assert_eq!(r.status(), "success");
        times.push(t.elapsed());
        c.close().await;
    }
    median(times)
}

/// `run_python` round trip of a trivial cell in a live session.
async fn cell_round_trip(runtime: &str, n: usize) -> Duration {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    c.run("pass").await;
    let mut times = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let r = c.run("x = 1").await;
        assert_eq!(r.status(), "success");
        times.push(t.elapsed());
    }
    c.close().await;
    median(times)
}

/// First call of a new session: with no warm pool (the sandbox starts on
/// demand) or with one ready sandbox.
async fn first_call(runtime: &str, pooled: bool, n: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..n {
        let fx = Fixture::new();
        let pool = if pooled { "1" } else { "0" };
        let c = fx.client(runtime, &["--warm-pool", pool]).await;
        if pooled {
            // Let the pool fill before the session's first call.
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        let t = Instant::now();
        let r = c.run("x = 1").await;
        assert_eq!(r.status(), "success");
        times.push(t.elapsed());
        c.close().await;
    }
    median(times)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("{cpu}, {cores} cores, Debian 12")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let date = String::from_utf8_lossy(
        &std::process::Command::new("date")
            .arg("-u")
            .arg("+%Y-%m-%d")
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    eprintln!("measuring baselines...");
    let direct = direct_echo(200).await;
    let direct_rate = direct_gather(500).await;
    let native = native_python(10);
    let mut rows = Vec::new();
    for runtime in ["bubblewrap", "podman"] {
        eprintln!("measuring {runtime}...");
        let per_call = in_cell_echo(runtime, 200).await;
        let rt = cell_round_trip(runtime, 30).await;
        let cold = first_call(runtime, false, 5).await;
        let pooled = first_call(runtime, true, 5).await;
        let rate = in_cell_gather(runtime, 500).await;
        let at_once = first_call_after_initialize(runtime, 5).await;
        rows.push((runtime, per_call, rt, cold, pooled, rate, at_once));
    }
    println!("Measured {date} on {}.", machine());
    println!("Baselines in the same run: direct MCP `tools/call` of server-everything `echo` (rmcp client) {}, and {:.0} calls/s with 500 concurrent calls; native `python3.11 -c 'import asyncio'` process {}.", ms(direct), direct_rate, ms(native));
    println!();
    println!("| measure | backend | time | ratio to baseline |");
    println!("|---|---|---|---|");
    for (runtime, per_call, rt, cold, pooled, rate, at_once) in rows {
        let r = |d: Duration, b: Duration| format!("{:.2}x", d.as_secs_f64() / b.as_secs_f64());
        let over = per_call.as_secs_f64() - direct.as_secs_f64();
        println!("| tool call from a cell (`await mcp_everything.echo`), per call | {runtime} | {} | {} direct call ({:+.2} ms) |", ms(per_call), r(per_call, direct), over * 1000.0);
        println!("| 500 calls with `asyncio.gather` in one cell | {runtime} | {rate:.0} calls/s | {:.2}x direct concurrent calls |", rate / direct_rate);
        println!("| `run_python` round trip, trivial cell, live session | {runtime} | {} | {} direct call |", ms(rt), r(rt, direct));
        println!(
            "| first call of a new session, cold start | {runtime} | {} | {} native process |",
            ms(cold),
            r(cold, native)
        );
        println!(
            "| first call of a new session, warm pool | {runtime} | {} | {} native process |",
            ms(pooled),
            r(pooled, native)
        );
        println!(
            "| first call right after `initialize` (pool still starting) | {runtime} | {} | {} native process |",
            ms(at_once),
            r(at_once, native)
        );
    }
}

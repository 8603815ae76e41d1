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

/// An rmcp client of server-everything, the baselines' server.
async fn everything_client() -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(everything_js()).arg("stdio");
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// `echo`'s arguments for call `i`.
fn echo_args(i: usize) -> serde_json::Map<String, serde_json::Value> {
    let mut args = serde_json::Map::new();
    args.insert("message".into(), json!(format!("m{i}")));
    args
}

async fn direct_echo(n: usize) -> Duration {
    let client = everything_client().await;
    let mut times = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(echo_args(i)))
            .await
            .unwrap();
        times.push(t.elapsed());
    }
    let _ = client.cancel().await;
    median(times)
}

/// Calls per second of `n` concurrent `echo` calls from one rmcp client.
async fn direct_gather(n: usize) -> f64 {
    let client = everything_client().await;
    let peer = client.peer().clone();
    let batch = |count: usize| {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..count {
            let peer = peer.clone();
            set.spawn(async move {
                peer.call_tool(CallToolRequestParams::new("echo").with_arguments(echo_args(i)))
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

/// The CPython build the guest embeds (images/cpython/build.sh), as a
/// plain interpreter: the native baseline.
fn native_python_exe() -> std::path::PathBuf {
    let config = common::repo_root().join(".codemode/cpython/pyo3-config.txt");
    let text = std::fs::read_to_string(&config).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("executable="))
        .map(Into::into)
        .unwrap()
}

/// From exec of the guest binary (natively, no sandbox) to its Ready frame.
fn exec_to_ready(guest: &std::path::Path, n: usize) -> Duration {
    use std::io::{Read, Write};
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let mut child = std::process::Command::new(guest)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = child.stdout.as_mut().unwrap();
            let mut len = [0u8; 4];
            stdout.read_exact(&mut len).unwrap();
            let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
            stdout.read_exact(&mut frame).unwrap();
            let elapsed = t.elapsed();
            child.stdin.take().unwrap().flush().unwrap();
            child.wait().unwrap();
            elapsed
        })
        .collect();
    median(times)
}

fn native_python(n: usize) -> Duration {
    let python = native_python_exe();
    let times = (0..n)
        .map(|_| {
            let t = Instant::now();
            let ok = std::process::Command::new(&python)
                .args(["-I", "-c", "import asyncio"])
                .status()
                .unwrap();
            assert!(ok.success());
            t.elapsed()
        })
        .collect();
    median(times)
}

/// Wall time of `code` in a session with server-everything loaded, less
/// the round trip of an empty cell: the cell's own work.
async fn cell_work(runtime: &str, code: &str) -> Duration {
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
    let t = Instant::now();
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let total = t.elapsed().saturating_sub(empty);
    c.close().await;
    total
}

/// Per-call cost of `await mcp_everything.echo(...)` inside one cell.
async fn in_cell_echo(runtime: &str, n: usize) -> Duration {
    let code = format!("for i in range({n}):\n    await mcp_everything.echo(message=str(i))");
    cell_work(runtime, &code).await / n as u32
}

/// Calls per second of `asyncio.gather` over `n` echo calls in one cell.
async fn in_cell_gather(runtime: &str, n: usize) -> f64 {
    let code = format!(
        "r = await asyncio.gather(*[mcp_everything.echo(message=str(i)) for i in range({n})])\nassert len(r) == {n}"
    );
    n as f64 / cell_work(runtime, &code).await.as_secs_f64()
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

/// The warm pool a new session's first call meets.
#[derive(Clone, Copy)]
enum Pool {
    /// None: the sandbox starts on demand.
    Off,
    /// One ready sandbox.
    Filled,
    /// The default pool, still starting its sandbox (the call comes right
    /// after `initialize`).
    Starting,
}

/// First call of a new session, with the pool in the state `pool`.
async fn first_call(runtime: &str, pool: Pool, n: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..n {
        let fx = Fixture::new();
        let flags: &[&str] = match pool {
            Pool::Off => &["--warm-pool", "0"],
            Pool::Filled => &["--warm-pool", "1"],
            Pool::Starting => &[],
        };
        let c = fx.client(runtime, flags).await;
        if let Pool::Filled = pool {
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
    let target = common::target_dir();
    let ready_static = exec_to_ready(&target.join("codemode-guest-static"), 20);
    let ready_dynamic = exec_to_ready(&target.join("codemode-guest"), 20);
    let mut rows = Vec::new();
    for runtime in ["bubblewrap", "podman"] {
        eprintln!("measuring {runtime}...");
        let per_call = in_cell_echo(runtime, 200).await;
        let rt = cell_round_trip(runtime, 30).await;
        let cold = first_call(runtime, Pool::Off, 5).await;
        let pooled = first_call(runtime, Pool::Filled, 5).await;
        let rate = in_cell_gather(runtime, 500).await;
        let at_once = first_call(runtime, Pool::Starting, 5).await;
        rows.push((runtime, per_call, rt, cold, pooled, rate, at_once));
    }
    println!("Measured {date} on {}.", machine());
    println!("Baselines in the same run: direct MCP `tools/call` of server-everything `echo` (rmcp client) {}, and {:.0} calls/s with 500 concurrent calls; native `python3.13 -I -c 'import asyncio'` process (the same CPython build) {}.", ms(direct), direct_rate, ms(native));
    println!();
    println!("| measure | backend | time | ratio to baseline |");
    println!("|---|---|---|---|");
    let r = |d: Duration, b: Duration| format!("{:.2}x", d.as_secs_f64() / b.as_secs_f64());
    println!(
        "| guest exec to `Ready`, static guest | native | {} | {} native process |",
        ms(ready_static),
        r(ready_static, native)
    );
    println!(
        "| guest exec to `Ready`, dynamic guest | native | {} | {} native process |",
        ms(ready_dynamic),
        r(ready_dynamic, native)
    );
    for (runtime, per_call, rt, cold, pooled, rate, at_once) in rows {
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

//! Nothing outlives the bridge: no guest process, no container, no
//! proxied server after the client disconnects.

use std::time::Duration;

use crate::common::{processes_matching, Fixture};
use crate::per_runtime;

async fn nothing_is_left_after_disconnect(runtime: &str) {
    let fx = Fixture::new();
    let state = fx.state().display().to_string();
    let c = fx.client(runtime, &["--warm-pool", "2"]).await;
    let r = c
        .run_with(
            "print((await mcp_time.get_current_time(timezone='UTC'))['timezone'])",
            &["time"],
        )
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert!(
        !processes_matching("mcp-server-time").is_empty(),
        "the proxied server runs while the session lives"
    );
    let pid = c.pid;
    c.close().await;
    let mut left = Vec::new();
    for _ in 0..100 {
        left = processes_matching(&state);
        left.extend(processes_matching(&fx.config().display().to_string()));
        left.retain(|p| !p.contains("cargo") && !p.contains("/deps/all-"));
        if runtime == "podman" {
            let out = std::process::Command::new("podman")
                .args([
                    "ps",
                    "-a",
                    "--filter",
                    &format!("label=io.codemode.owner-pid={pid}"),
                    "--format",
                    "{{.Names}}",
                ])
                .output()
                .expect("podman ps");
            let names = String::from_utf8_lossy(&out.stdout).to_string();
            left.extend(names.lines().map(|l| format!("container {l}")));
        }
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "left behind after disconnect: {left:#?}");
}
per_runtime!(nothing_is_left_after_disconnect);

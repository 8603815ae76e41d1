//! Ranked tool search end to end: a real server's tools, indexed when it
//! ran under one codemode, are found by the next codemode (same state dir)
//! before that server is started or loaded, and say how to load it.

use serde_json::{json, Value};

use crate::common::{children_matching, Fixture};
use crate::per_runtime;

async fn search_finds_tools_of_a_server_not_started_yet(runtime: &str) {
    let fx = Fixture::new();
    let first = fx.client(runtime, &[]).await;
    let r = first
        .run_with("len(runtime.list_tools_sync('time'))", &["time"])
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    first.close().await;
    assert!(
        fx.state().join("tool-index.json").exists(),
        "the index is kept in the state dir"
    );

    let second = fx.client(runtime, &[]).await;
    let code =
        "hits = runtime.search_tool_docs_sync('convert a time to another timezone', limit=3)\n\
                [(h['server'], h['tool'], h['loaded'], h.get('load')) for h in hits]";
    let r = second.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let hits = r.structured["result"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!hits.is_empty(), "{r:?}");
    assert_eq!(hits[0][0], "time", "{r:?}");
    assert_eq!(hits[0][1], "convert_time", "{r:?}");
    assert_eq!(hits[0][2], false, "{r:?}");
    let load = hits[0][3].as_str().unwrap_or_default();
    assert!(load.contains("servers=[\"time\"]"), "{load}");
    assert!(
        children_matching(second.pid, "mcp-server-time").is_empty(),
        "searching did not start the server"
    );
    assert!(
        hits.iter().all(|h| h[0] != "everything"),
        "a server never started is not indexed: {hits:?}"
    );

    // Loaded, the same tool says so; the async form ranks the same way.
    let code = "hits = await runtime.search_tool_docs('current time', limit=1, detail='full')\n\
                h = hits[0]\n[h['tool'], h['loaded'], 'load' in h, sorted(h['inputSchema']['properties'])]";
    let r = second.run_with(code, &["time"]).await;
    assert_eq!(
        r.structured["result"],
        json!(["get_current_time", true, false, ["timezone"]]),
        "{r:?}"
    );
    let r = second
        .run("runtime.search_tool_docs_sync('zzzz qqqq')")
        .await;
    assert_eq!(r.structured["result"], Value::Array(vec![]), "{r:?}");
    second.close().await;
}
per_runtime!(search_finds_tools_of_a_server_not_started_yet);

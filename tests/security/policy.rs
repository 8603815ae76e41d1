//! The operator's policy holds whatever names a cell uses: the guest
//! matches tool names without regard to case and by Python alias, so the
//! host checks the name the server will actually run.

use crate::common::Fixture;
use crate::per_runtime;

async fn denied_tool_stays_denied_under_another_case_or_alias(runtime: &str) {
    let fx = Fixture::new();
    let c = fx
        .client(runtime, &["--deny-tools", "Everything.ECHO"])
        .await;
    let code = r#"
from mcp import runtime
for name in ("echo", "Echo", "ECHO"):
    try:
        await runtime.call_tool("everything", name, {"message": "hi"})
        print(name, "called")
    except runtime.MCPError as e:
        print(name, "refused", "policy" in str(e))
"#;
    let r = c.run_with(code, &["everything"]).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    for name in ["echo", "Echo", "ECHO"] {
        assert!(
            out.contains(&format!("{name} refused True")),
            "{name} must be refused by the policy: {out}"
        );
    }
    c.close().await;
}
per_runtime!(denied_tool_stays_denied_under_another_case_or_alias);

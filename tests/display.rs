//! A cell's last value, end to end: shown as `Out:` text like a notebook,
//! and returned as `structuredContent.result` when it is JSON data.

use serde_json::{json, Value};

use crate::common::{Fixture, Run};
use crate::per_runtime;

fn display(r: &Run) -> &Value {
    &r.structured["display"]
}

async fn the_last_value_is_shown_and_returned(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c.run("x = 40\nx + 2").await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.structured["result"], json!(42), "{r:?}");
    assert_eq!(display(&r), "42");
    assert_eq!(r.text, "Out: 42");

    let r = c
        .run("print('counting')\n{'n': x, 'tags': ['a', 'b'], 'ok': True, 'none': None}")
        .await;
    assert_eq!(
        r.structured["result"],
        json!({"n": 40, "tags": ["a", "b"], "ok": true, "none": null}),
        "{r:?}"
    );
    assert_eq!(
        r.text,
        "counting\nOut: {'n': 40, 'tags': ['a', 'b'], 'ok': True, 'none': None}"
    );

    let r = c.run("'hello ' + 'world'").await;
    assert_eq!(r.structured["result"], json!("hello world"), "{r:?}");
    assert_eq!(display(&r), "'hello world'");

    let r = c.run("{1, 2}").await;
    assert_eq!(display(&r), "{1, 2}", "{r:?}");
    assert!(
        r.structured.get("result").is_none(),
        "a set is not JSON: {r:?}"
    );
    c.close().await;
}
per_runtime!(the_last_value_is_shown_and_returned);

async fn none_statements_and_a_semicolon_show_nothing(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    for code in ["None", "y = 5", "y;", "print(y)", "def f():\n    return 1"] {
        let r = c.run(code).await;
        assert_eq!(r.status(), "success", "{code}: {r:?}");
        for key in ["display", "result"] {
            assert!(r.structured.get(key).is_none(), "{code}: {r:?}");
        }
        assert!(!r.text.contains("Out:"), "{code}: {r:?}");
    }
    c.close().await;
}
per_runtime!(none_statements_and_a_semicolon_show_nothing);

async fn an_awaited_tool_result_is_returned(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let r = c
        .run_with(
            "await mcp_time.convert_time(source_timezone='UTC', time='12:00', target_timezone='Asia/Tokyo')",
            &["time"],
        )
        .await;
    assert_eq!(r.status(), "success", "{r:?}");
    let target = &r.structured["result"]["target"];
    assert_eq!(target["timezone"], "Asia/Tokyo", "{r:?}");
    assert!(
        target["datetime"]
            .as_str()
            .is_some_and(|t| t.contains("T21:00:00")),
        "{r:?}"
    );
    c.close().await;
}
per_runtime!(an_awaited_tool_result_is_returned);

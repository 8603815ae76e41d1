//! Turns a [`RunOutcome`] into what the model reads: compact text (default),
//! a TOON block or JSON, plus `structuredContent` and image content. The
//! single place where results take their wire shape.

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use crate::bridge::{RunOutcome, RunStatus};
use crate::settings::OutputMode;

/// The structured payload: only non-empty fields, so small results stay small.
pub fn structured(out: &RunOutcome) -> Value {
    let mut m = Map::new();
    m.insert("status".into(), json!(out.status.as_str()));
    if !out.stdout.is_empty() {
        m.insert("stdout".into(), json!(out.stdout));
    }
    if !out.stderr.is_empty() {
        m.insert("stderr".into(), json!(out.stderr));
    }
    if let Some(e) = &out.error {
        m.insert("error".into(), json!(e));
    }
    if !out.servers.is_empty() {
        m.insert("servers".into(), json!(out.servers));
    }
    if !out.notes.is_empty() {
        m.insert("notes".into(), json!(out.notes));
    }
    if out.status == RunStatus::Timeout && out.timeout_secs > 0 {
        m.insert("timeoutSeconds".into(), json!(out.timeout_secs));
    }
    if !out.rich.is_empty() {
        m.insert("images".into(), json!(out.rich.len()));
    }
    if let Some(shown) = &out.shown {
        if !shown.text.is_empty() {
            m.insert("display".into(), json!(shown.text));
        }
        if let Some(result) = &shown.result {
            m.insert("result".into(), result.clone());
        }
    }
    m.insert("durationMs".into(), json!(out.duration.as_millis() as u64));
    Value::Object(m)
}

/// Terse text: the output itself, then what went wrong, status first when
/// it is not success.
pub fn compact_text(out: &RunOutcome) -> String {
    let mut parts: Vec<String> = Vec::new();
    if out.status != RunStatus::Success {
        parts.push(format!("status: {}", out.status.as_str()));
    }
    for note in &out.notes {
        parts.push(note.clone());
    }
    let stdout = out.stdout.trim_end();
    if !stdout.is_empty() {
        parts.push(stdout.to_string());
    }
    let stderr = out.stderr.trim_end();
    if !stderr.is_empty() {
        parts.push(format!("stderr:\n{stderr}"));
    }
    if let Some(shown) = out.shown.as_ref().filter(|s| !s.text.is_empty()) {
        parts.push(out_line(&shown.text));
    }
    if let Some(e) = &out.error {
        parts.push(format!("error: {}", e.trim_end()));
    }
    if parts.is_empty() {
        return if out.rich.is_empty() {
            "success (no output)".into()
        } else {
            "success".into()
        };
    }
    parts.join("\n")
}

/// A shown value as a notebook's `Out`: on the same line when it is one
/// line, below when it is a table or other multi-line text.
fn out_line(text: &str) -> String {
    let text = text.trim_end();
    if text.contains('\n') {
        format!("Out:\n{text}")
    } else {
        format!("Out: {text}")
    }
}

pub fn render(out: &RunOutcome, mode: OutputMode) -> CallToolResult {
    let payload = structured(out);
    let text = match mode {
        OutputMode::Compact => compact_text(out),
        OutputMode::Json => serde_json::to_string_pretty(&payload).unwrap_or_default(),
        OutputMode::Toon => match toon_format::encode::encode_default(&payload) {
            Ok(body) => format!("```toon\n{}\n```", body.trim_end()),
            Err(_) => format!(
                "```json\n{}\n```",
                serde_json::to_string_pretty(&payload).unwrap_or_default()
            ),
        },
    };
    let mut content = vec![ContentBlock::text(text)];
    for item in &out.rich {
        let data = base64::engine::general_purpose::STANDARD.encode(&item.data);
        content.push(ContentBlock::image(data, item.mime_type.clone()));
    }
    let mut result = if out.status == RunStatus::Success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.structured_content = Some(payload);
    result
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use codemode_proto::v1::RichOutput;

    use super::*;
    use crate::bridge::Shown;

    fn outcome(status: RunStatus) -> RunOutcome {
        RunOutcome {
            status,
            stdout: String::new(),
            stderr: String::new(),
            error: None,
            servers: vec![],
            duration: Duration::from_millis(12),
            rich: vec![],
            notes: vec![],
            timeout_secs: 0,
            shown: None,
        }
    }

    /// Whether `value` has the JSON type `schema` names (and, for status,
    /// one of its values): enough of JSON Schema for this flat object.
    fn conforms(value: &Value, schema: &Value) -> bool {
        let type_ok = match schema["type"].as_str() {
            Some("string") => value.is_string(),
            Some("integer") => value.is_u64(),
            Some("array") => value
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
            // No type: any JSON value (a cell's result).
            None => schema.get("type").is_none(),
            _ => false,
        };
        let enum_ok = schema["enum"]
            .as_array()
            .is_none_or(|allowed| allowed.contains(value));
        type_ok && enum_ok
    }

    /// Every status, with every field set, fits the declared output schema
    /// (the system tests validate real results with real validators).
    #[test]
    fn structured_content_fits_the_output_schema() {
        let schema = crate::server::describe::output_schema();
        let props = schema["properties"].as_object().expect("properties");
        for status in RunStatus::ALL {
            let mut o = outcome(status);
            o.stdout = "out".into();
            o.stderr = "err".into();
            o.error = Some("boom".into());
            o.servers = vec!["time".into()];
            o.notes = vec!["note".into()];
            o.timeout_secs = 30;
            o.rich = vec![RichOutput {
                mime_type: "image/png".into(),
                data: vec![1],
            }];
            o.shown = Some(Shown {
                text: "{'a': [1]}".into(),
                result: Some(json!({"a": [1]})),
            });
            let v = structured(&o);
            let fields = v.as_object().expect("object");
            for required in schema["required"].as_array().expect("required") {
                let key = required.as_str().unwrap_or_default();
                assert!(fields.contains_key(key), "{status:?} lacks {key}");
            }
            for (key, value) in fields {
                let declared = props.get(key);
                assert!(declared.is_some(), "{key} is not in the output schema");
                assert!(
                    declared.is_some_and(|d| conforms(value, d)),
                    "{key} = {value} does not fit {declared:?}"
                );
            }
        }
        assert_eq!(
            schema["properties"]["status"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(5)
        );
    }

    fn text(r: &CallToolResult) -> String {
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    #[test]
    fn success_with_output() {
        let mut o = outcome(RunStatus::Success);
        o.stdout = "Echo: hi\n".into();
        o.servers = vec!["everything".into()];
        let r = render(&o, OutputMode::Compact);
        assert_eq!(r.is_error, Some(false));
        insta::assert_snapshot!(text(&r), @"Echo: hi");
        insta::assert_json_snapshot!(r.structured_content, @r#"
        {
          "status": "success",
          "stdout": "Echo: hi\n",
          "servers": [
            "everything"
          ],
          "durationMs": 12
        }
        "#);
    }

    #[test]
    fn success_without_output_says_so() {
        let r = render(&outcome(RunStatus::Success), OutputMode::Compact);
        insta::assert_snapshot!(text(&r), @"success (no output)");
    }

    #[test]
    fn error_with_traceback_and_stderr() {
        let mut o = outcome(RunStatus::Error);
        o.stdout = "before\n".into();
        o.stderr = "warning: x\n".into();
        o.error = Some("Traceback (most recent call last):\n  File \"<cell-1>\", line 1, in <module>\nZeroDivisionError: division by zero".into());
        let r = render(&o, OutputMode::Compact);
        assert_eq!(r.is_error, Some(true));
        insta::assert_snapshot!(text(&r), @r#"
        status: error
        before
        stderr:
        warning: x
        error: Traceback (most recent call last):
          File "<cell-1>", line 1, in <module>
        ZeroDivisionError: division by zero
        "#);
    }

    #[test]
    fn timeout_with_a_note_and_an_image() {
        let mut o = outcome(RunStatus::Timeout);
        o.timeout_secs = 2;
        o.error = Some("execution exceeded 2s".into());
        o.notes = vec!["note: state was lost".into()];
        o.rich = vec![RichOutput {
            mime_type: "image/png".into(),
            data: vec![137, 80, 78, 71],
        }];
        let r = render(&o, OutputMode::Compact);
        assert_eq!(r.content.len(), 2, "text and image");
        insta::assert_snapshot!(text(&r), @r"
        status: timeout
        note: state was lost
        error: execution exceeded 2s
        ");
        insta::assert_json_snapshot!(r.content[1], @r#"
        {
          "type": "image",
          "data": "iVBORw==",
          "mimeType": "image/png"
        }
        "#);
    }

    #[test]
    fn toon_and_json_modes() {
        let mut o = outcome(RunStatus::ValidationError);
        o.error = Some("missing 'code'".into());
        insta::assert_snapshot!(text(&render(&o, OutputMode::Toon)), @r"
        ```toon
        status: validation_error
        error: missing 'code'
        durationMs: 12
        ```
        ");
        insta::assert_snapshot!(text(&render(&o, OutputMode::Json)), @r#"
        {
          "status": "validation_error",
          "error": "missing 'code'",
          "durationMs": 12
        }
        "#);
    }

    fn shown(text: &str, result: Option<Value>) -> Option<Shown> {
        Some(Shown {
            text: text.into(),
            result,
        })
    }

    #[test]
    fn a_shown_value_is_out_text_and_its_json_is_the_result() {
        let mut o = outcome(RunStatus::Success);
        o.shown = shown("{'answer': 42}", Some(json!({"answer": 42})));
        let r = render(&o, OutputMode::Compact);
        insta::assert_snapshot!(text(&r), @"Out: {'answer': 42}");
        insta::assert_json_snapshot!(r.structured_content, @r#"
        {
          "status": "success",
          "display": "{'answer': 42}",
          "result": {
            "answer": 42
          },
          "durationMs": 12
        }
        "#);
    }

    #[test]
    fn a_table_goes_below_out_after_the_printed_output() {
        let mut o = outcome(RunStatus::Success);
        o.stdout = "rows: 2\n".into();
        o.shown = shown("   x\n0  1\n1  2\n", None);
        let r = render(&o, OutputMode::Compact);
        insta::assert_snapshot!(text(&r), @r"
        rows: 2
        Out:
           x
        0  1
        1  2
        ");
        let payload = r.structured_content.expect("structured");
        assert_eq!(payload["display"], "   x\n0  1\n1  2\n");
        assert!(payload.get("result").is_none(), "{payload}");
    }

    #[test]
    fn a_result_without_text_and_falsy_results_are_kept() {
        for value in [json!(0), json!(""), json!(false), json!([])] {
            let mut o = outcome(RunStatus::Success);
            o.shown = shown("", Some(value.clone()));
            let payload = structured(&o);
            assert_eq!(payload["result"], value);
            assert!(payload.get("display").is_none(), "{payload}");
            assert_eq!(compact_text(&o), "success (no output)");
        }
        let mut o = outcome(RunStatus::Success);
        o.shown = shown("0", Some(json!(0)));
        assert_eq!(compact_text(&o), "Out: 0");
        let json_mode = text(&render(&o, OutputMode::Json));
        assert!(json_mode.contains("\"result\": 0"), "{json_mode}");
    }
}

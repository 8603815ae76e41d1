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

//! `run_python`'s arguments: one type that is both the input schema a
//! client sees (schemars, through rmcp) and the parser (serde), so the two
//! cannot drift. Each field's parser says what it expected.

use std::sync::Arc;

use rmcp::schemars::JsonSchema;
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::bridge::RunRequest;

/// Characters a session name may have at most.
const MAX_SESSION_CHARS: usize = 128;

/// The arguments of one `run_python` call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(crate = "rmcp::schemars", title = "run_python arguments")]
pub struct RunPythonArgs {
    /// Python to run. Top-level await works; state persists between calls.
    #[serde(deserialize_with = "code")]
    #[schemars(length(min = 1))]
    pub code: String,
    #[doc = "MCP servers to load as mcp_<alias> modules (names are in the instructions and runtime.discovered_servers())."]
    #[serde(default, deserialize_with = "servers")]
    pub servers: Vec<String>,
    /// Seconds before the cell is interrupted.
    #[serde(default, deserialize_with = "timeout")]
    #[schemars(range(min = 1))]
    pub timeout: Option<u64>,
    #[doc = "Session name; calls with the same name share state (default: one per connection)."]
    #[serde(default, deserialize_with = "session")]
    #[schemars(length(min = 1, max = 128))]
    pub session: Option<String>,
}

/// Why a call's arguments were refused (a `validation_error` result).
#[derive(Debug, thiserror::Error)]
#[error("invalid arguments: {0}")]
pub struct ArgumentError(String);

impl RunPythonArgs {
    /// Parses a call's arguments (absent arguments are an empty object).
    pub fn parse(args: Option<Map<String, Value>>) -> Result<Self, ArgumentError> {
        let value = Value::Object(args.unwrap_or_default());
        serde_json::from_value(value).map_err(|e| ArgumentError(e.to_string()))
    }

    /// The request the bridge runs, in `default_session` unless named.
    pub fn into_request(self, default_session: &str) -> RunRequest {
        RunRequest {
            code: self.code,
            servers: self.servers,
            timeout: self.timeout,
            session: self.session.unwrap_or_else(|| default_session.to_string()),
        }
    }

    /// The input schema, with this server's maximum and default timeout.
    pub fn schema(max_timeout: u64, default_timeout: u64) -> Arc<Map<String, Value>> {
        let mut schema = (*rmcp::handler::server::common::schema_for_type::<Self>()).clone();
        if let Some(Value::Object(timeout)) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("timeout"))
        {
            timeout.insert("maximum".into(), max_timeout.into());
            timeout.insert("default".into(), default_timeout.into());
        }
        Arc::new(schema)
    }
}

fn code<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) if !s.trim().is_empty() => Ok(s),
        Value::String(_) => Err(D::Error::custom(
            "'code' is empty: expected a non-empty string of Python",
        )),
        other => Err(D::Error::custom(format!(
            "'code' must be a string of Python, got {}",
            shown(&other)
        ))),
    }
}

fn servers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                other => Err(D::Error::custom(format!(
                    "'servers' must be a list of names, got item {}",
                    shown(&other)
                ))),
            })
            .collect(),
        // Comma-separated, as some clients send lists.
        Value::String(s) => Ok(s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()),
        other => Err(D::Error::custom(format!(
            "'servers' must be a list of names, got {}",
            shown(&other)
        ))),
    }
}

fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f >= 1.0 && f.is_finite() => Ok(Some(f.ceil() as u64)),
            _ => Err(D::Error::custom(format!(
                "'timeout' must be a number of seconds of at least 1, got {n}"
            ))),
        },
        other => Err(D::Error::custom(format!(
            "'timeout' must be a number of seconds, got {}",
            shown(&other)
        ))),
    }
}

fn session<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_SESSION_CHARS => Ok(Some(s)),
        other => Err(D::Error::custom(format!(
            "'session' must be a non-empty string of at most {MAX_SESSION_CHARS} characters, got {}",
            shown(&other)
        ))),
    }
}

/// A value as JSON, cut short: an error message must stay small.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<RunRequest, String> {
        let Value::Object(map) = v else { panic!() };
        RunPythonArgs::parse(Some(map))
            .map(|a| a.into_request("default"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn good_arguments_become_a_request() {
        let r = parse(json!({"code": "print(1)", "servers": "a, b", "timeout": 2.5})).unwrap();
        assert_eq!(r.servers, ["a", "b"]);
        assert_eq!(r.timeout, Some(3));
        assert_eq!(r.session, "default");
        let r = parse(json!({"code": "x", "servers": null, "session": "s"})).unwrap();
        assert!(r.servers.is_empty());
        assert_eq!(r.session, "s");
    }

    #[test]
    fn each_bad_argument_says_what_was_expected() {
        let cases = [
            (json!({}), "missing field `code`"),
            (json!({"code": "  "}), "'code' is empty"),
            (
                json!({"code": 5}),
                "'code' must be a string of Python, got 5",
            ),
            (json!({"code": "x", "servers": [1]}), "got item 1"),
            (
                json!({"code": "x", "timeout": "soon"}),
                "'timeout' must be a number of seconds, got \"soon\"",
            ),
            (json!({"code": "x", "timeout": 0}), "at least 1, got 0"),
            (
                json!({"code": "x", "session": ""}),
                "'session' must be a non-empty string",
            ),
            (
                json!({"code": "x", "extra": 1}),
                "unknown field `extra`, expected one of `code`, `servers`, `timeout`, `session`",
            ),
        ];
        for (args, expected) in cases {
            let err = parse(args.clone()).unwrap_err();
            assert!(err.contains(expected), "{args}: {err}");
        }
        let long = "x".repeat(10_000);
        let err = parse(json!({"code": [long]})).unwrap_err();
        assert!(err.len() < 200, "{err}");
    }

    #[test]
    fn the_schema_is_the_parser_s_type_with_this_server_s_limits() {
        let schema = RunPythonArgs::schema(600, 30);
        let props = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&String> = props.keys().collect();
        keys.sort();
        assert_eq!(keys, ["code", "servers", "session", "timeout"]);
        assert_eq!(schema["required"], json!(["code"]));
        assert_eq!(props["timeout"]["maximum"], 600);
        assert_eq!(props["timeout"]["default"], 30);
        assert_eq!(props["timeout"]["minimum"], 1);
        assert_eq!(props["servers"]["items"]["type"], "string");
        assert_eq!(schema["additionalProperties"], json!(false));
        assert!(props["code"]["description"]
            .as_str()
            .unwrap()
            .starts_with("Python to run."));
    }
}

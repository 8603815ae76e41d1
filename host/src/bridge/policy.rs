//! Which servers and tools cells may use: the operator's allow/deny lists.
//! The session's own list (servers requested by the client) is enforced in
//! the RPC handler; this holds the static rules from settings.

use std::collections::BTreeSet;

use crate::settings::Settings;

#[derive(Debug, Clone, Default)]
pub struct Policy {
    allow_servers: BTreeSet<String>,
    deny_servers: BTreeSet<String>,
    /// `server.tool` pairs, lowercased: the guest matches tool names
    /// without regard to case, so the policy must too. A pair may name a
    /// tool by its Python alias as well.
    deny_tools: BTreeSet<String>,
}

impl Policy {
    pub fn from_settings(s: &Settings) -> Self {
        let set = |v: &[String]| {
            v.iter()
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        };
        Self {
            allow_servers: set(&s.allow_servers),
            deny_servers: set(&s.deny_servers),
            deny_tools: set(&s.deny_tools)
                .into_iter()
                .map(|t: String| t.to_lowercase())
                .collect(),
        }
    }

    pub fn server_allowed(&self, server: &str) -> bool {
        !self.deny_servers.contains(server)
            && (self.allow_servers.is_empty() || self.allow_servers.contains(server))
    }

    /// `tool` is the server's own name for it (see the RPC handler).
    pub fn tool_allowed(&self, server: &str, tool: &str) -> bool {
        if self.deny_tools.is_empty() {
            return true;
        }
        let server = server.to_lowercase();
        let by_name = format!("{server}.{}", tool.to_lowercase());
        let by_alias = format!("{server}.{}", crate::proxy::sanitize(tool, "tool"));
        !self.deny_tools.contains(&by_name) && !self.deny_tools.contains(&by_alias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_beats_allow_and_empty_allow_means_all() {
        let p = Policy {
            allow_servers: BTreeSet::new(),
            deny_servers: ["bad".to_string()].into(),
            deny_tools: ["fs.write_file".to_string()].into(),
        };
        assert!(p.server_allowed("anything"));
        assert!(!p.server_allowed("bad"));
        assert!(!p.tool_allowed("fs", "write_file"));
        assert!(p.tool_allowed("fs", "read_file"));
        let p = Policy::from_settings(&{
            use clap::Parser;
            #[derive(clap::Parser)]
            struct T {
                #[command(flatten)]
                s: Settings,
            }
            T::parse_from(["t", "--deny-tools", "Time.Get-Current-Time,fs.write_file"]).s
        });
        assert!(!p.tool_allowed("time", "get-current-time"), "case differs");
        assert!(!p.tool_allowed("time", "GET-CURRENT-TIME"));
        assert!(!p.tool_allowed("FS", "Write_File"));
        assert!(p.tool_allowed("time", "convert_time"));
        let p = Policy {
            deny_tools: ["time.get_current_time".to_string()].into(),
            ..Policy::default()
        };
        assert!(
            !p.tool_allowed("time", "get-current-time"),
            "named by alias"
        );
        let p = Policy {
            allow_servers: ["time".to_string()].into(),
            ..Policy::default()
        };
        assert!(p.server_allowed("time"));
        assert!(!p.server_allowed("other"));
    }
}

//! Which servers and tools cells may use: the operator's allow/deny lists.
//! The session's own list (servers requested by the client) is enforced in
//! the RPC handler; this holds the static rules from settings.

use std::collections::BTreeSet;

use crate::settings::Settings;

#[derive(Debug, Clone, Default)]
pub struct Policy {
    allow_servers: BTreeSet<String>,
    deny_servers: BTreeSet<String>,
    /// `server.tool` pairs.
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
            deny_tools: set(&s.deny_tools),
        }
    }

    pub fn server_allowed(&self, server: &str) -> bool {
        !self.deny_servers.contains(server)
            && (self.allow_servers.is_empty() || self.allow_servers.contains(server))
    }

    pub fn tool_allowed(&self, server: &str, tool: &str) -> bool {
        !self.deny_tools.contains(&format!("{server}.{tool}"))
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
        let p = Policy {
            allow_servers: ["time".to_string()].into(),
            ..Policy::default()
        };
        assert!(p.server_allowed("time"));
        assert!(!p.server_allowed("other"));
    }
}

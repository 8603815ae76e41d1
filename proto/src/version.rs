//! Protocol versioning: peers of the same major version interoperate; a
//! minor version only adds fields that older peers ignore.

/// Bumped on any change an older peer cannot read.
pub const PROTOCOL_MAJOR: u32 = 1;
/// Bumped when fields or messages are added compatibly.
///
/// 1.1: `SaveTool`, `ListSavedTools`, `LoadSavedTool`; `Init.tools_dir`
/// deprecated (saved tools no longer live in a sandbox directory).
/// 1.2: `Finished.ended_processes`.
/// 1.3: `Finished.display` (a cell's last value, `Display`).
pub const PROTOCOL_MINOR: u32 = 3;

/// The peer speaks a protocol this build cannot talk to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "protocol version mismatch: this {local_role} speaks codemode protocol {local_major}.{local_minor}, \
     the {peer_role} speaks {peer_major}.{peer_minor}; rebuild the sandbox image so its guest matches \
     this codemode (`codemode image build`)"
)]
pub struct VersionMismatch {
    pub local_role: &'static str,
    pub local_major: u32,
    pub local_minor: u32,
    pub peer_role: &'static str,
    pub peer_major: u32,
    pub peer_minor: u32,
}

/// Accepts a peer of the same major version, refuses any other.
pub fn check_peer_version(
    local_role: &'static str,
    peer_role: &'static str,
    peer_major: u32,
    peer_minor: u32,
) -> Result<(), VersionMismatch> {
    if peer_major == PROTOCOL_MAJOR {
        return Ok(());
    }
    Err(VersionMismatch {
        local_role,
        local_major: PROTOCOL_MAJOR,
        local_minor: PROTOCOL_MINOR,
        peer_role,
        peer_major,
        peer_minor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_major_is_accepted_whatever_the_minor() {
        assert!(check_peer_version("host", "guest", PROTOCOL_MAJOR, PROTOCOL_MINOR + 7).is_ok());
    }

    #[test]
    fn other_major_is_refused_naming_both_versions_and_the_fix() {
        let err = check_peer_version("host", "guest", PROTOCOL_MAJOR + 1, 3).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("{PROTOCOL_MAJOR}.{PROTOCOL_MINOR}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{}.3", PROTOCOL_MAJOR + 1)),
            "{text}"
        );
        assert!(text.contains("codemode image build"), "{text}");
    }
}

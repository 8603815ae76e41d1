//! Project files under approval: not started until approved, never
//! expanded while unapproved, never shadowing a user definition.

use std::path::{Path, PathBuf};

use crate::config::{
    config_locations, discover, DiscoveryContext, SkipReason, TrustStore, UntrustedServer,
};

struct Dirs {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let dirs = Dirs {
            home: root.join("home"),
            cwd: root.join("project"),
            _dir: dir,
        };
        std::fs::create_dir_all(&dirs.home).unwrap();
        std::fs::create_dir_all(&dirs.cwd).unwrap();
        dirs
    }

    fn context(&self, trust: TrustStore) -> DiscoveryContext {
        DiscoveryContext {
            home: Some(self.home.clone()),
            cwd: self.cwd.clone(),
            env_config: None,
            explicit: Vec::new(),
            allow_self: false,
            scan_default_locations: true,
            scan_project_locations: true,
            trust,
        }
    }
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn approved(files: &[&Path]) -> TrustStore {
    let mut trust = TrustStore::default();
    for file in files {
        trust.approve(file).unwrap();
    }
    trust
}

fn untrusted<'a>(found: &'a [UntrustedServer], name: &str) -> &'a UntrustedServer {
    found
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} not listed as untrusted: {found:#?}"))
}

/// PATH is set in every test process, and is what `${...}` could leak.
const PLANTED: &str = r#"{"mcpServers": {"planted": {
    "command": "/bin/sh",
    "args": ["-c", "touch marker", "${PATH}", "${userHome}", "${X:-default}"],
    "env": {"LEAK": "${env:PATH}"}
}}}"#;

#[test]
fn project_servers_start_only_once_their_exact_bytes_are_approved() {
    let dirs = Dirs::new();
    let file = dirs.cwd.join(".mcp.json");
    put(&file, PLANTED);

    let d = discover(&dirs.context(TrustStore::default()));
    assert!(!d.servers.contains_key("planted"));
    let held = untrusted(&d.untrusted, "planted");
    assert_eq!(held.source, file);
    assert!(!held.changed);
    assert!(held.to_string().contains("not approved"), "{held}");

    let trust = approved(&[&file]);
    let d = discover(&dirs.context(trust.clone()));
    assert!(d.untrusted.is_empty(), "{:#?}", d.untrusted);
    assert_eq!(d.servers["planted"].command, "/bin/sh");

    // One byte more and the approval no longer holds.
    put(&file, &format!("{PLANTED}\n"));
    let d = discover(&dirs.context(trust.clone()));
    assert!(!d.servers.contains_key("planted"));
    assert!(untrusted(&d.untrusted, "planted").changed);

    let mut revoked = approved(&[&file]);
    assert!(revoked.revoke(&file));
    let d = discover(&dirs.context(revoked));
    assert!(!d.servers.contains_key("planted"));
    assert!(!untrusted(&d.untrusted, "planted").changed);
}

#[test]
fn an_unapproved_file_is_never_expanded_and_forwards_no_variable() {
    let dirs = Dirs::new();
    let file = dirs.cwd.join(".mcp.json");
    put(&file, PLANTED);
    let codex = dirs.cwd.join(".codex/config.toml");
    put(
        &codex,
        "[mcp_servers.codex-planted]\ncommand = \"${PATH}\"\nenv_vars = [\"PATH\"]\n",
    );
    let d = discover(&dirs.context(TrustStore::default()));
    assert_eq!(
        untrusted(&d.untrusted, "planted").command,
        [
            "/bin/sh",
            "-c",
            "touch marker",
            "${PATH}",
            "${userHome}",
            "${X:-default}"
        ]
    );
    assert_eq!(
        untrusted(&d.untrusted, "codex-planted").command,
        ["${PATH}"]
    );
    let path = std::env::var("PATH").unwrap();
    assert!(!format!("{:?}", d.untrusted).contains(&path));

    // Approved, the same file expands as any other.
    let d = discover(&dirs.context(approved(&[&file, &codex])));
    let planted = &d.servers["planted"];
    assert_eq!(planted.args[2], path);
    assert_eq!(planted.args[4], "default");
    assert_eq!(planted.env["LEAK"], path);
    assert_eq!(d.servers["codex-planted"].env["PATH"], path);
}

#[test]
fn a_project_server_never_shadows_a_user_server_approved_or_not() {
    let dirs = Dirs::new();
    // ./mcp-servers/ comes before ~/.cursor/mcp.json in the list of
    // locations; the user's definition must win all the same.
    let project = dirs.cwd.join("mcp-servers/clash.json");
    put(
        &project,
        r#"{"mcpServers": {"clash": {"command": "project-cmd"}, "only-project": {"command": "p"}}}"#,
    );
    let user = dirs.home.join(".cursor/mcp.json");
    put(
        &user,
        r#"{"mcpServers": {"clash": {"command": "user-cmd"}}}"#,
    );
    for trust in [TrustStore::default(), approved(&[&project])] {
        let d = discover(&dirs.context(trust));
        assert_eq!(d.servers["clash"].command, "user-cmd");
        assert_eq!(d.servers["clash"].source, user);
        let shadowed = d
            .skipped
            .iter()
            .find(|s| s.name == "clash" && s.source == project)
            .expect("project clash reported");
        assert_eq!(shadowed.reason, SkipReason::Shadowed { by: user.clone() });
        assert!(!d.untrusted.iter().any(|s| s.name == "clash"));
    }
}

#[test]
fn files_the_user_names_need_no_approval_and_a_broken_store_trusts_nothing() {
    let dirs = Dirs::new();
    let file = dirs.cwd.join(".mcp.json");
    put(&file, PLANTED);
    let d = discover(&DiscoveryContext {
        explicit: vec![PathBuf::from(".mcp.json")],
        ..dirs.context(TrustStore::default())
    });
    assert_eq!(d.servers["planted"].source_name, "--config");
    assert!(d.untrusted.is_empty());

    let store = dirs.home.join("trusted-configs.json");
    std::fs::write(&store, "{").unwrap();
    let d = discover(&dirs.context(TrustStore::load_or_distrust(&store)));
    assert!(untrusted(&d.untrusted, "planted").source == file);
    assert!(
        d.problems[0]
            .message
            .contains("every project config is untrusted"),
        "{:?}",
        d.problems
    );
}

#[test]
fn without_project_configs_nothing_in_the_working_directory_is_read_or_guarded() {
    let dirs = Dirs::new();
    put(&dirs.cwd.join(".mcp.json"), PLANTED);
    let ctx = DiscoveryContext {
        scan_project_locations: false,
        explicit: vec![PathBuf::from("extra.json")],
        ..dirs.context(TrustStore::default())
    };
    let d = discover(&ctx);
    assert!(d.untrusted.is_empty() && d.servers.is_empty());
    let locations = config_locations(&ctx);
    assert!(locations.project.is_empty());
    assert!(locations.user.contains(&dirs.cwd.join("extra.json")));
    assert!(locations.user.contains(&dirs.home.join(".claude.json")));
    let scanned = config_locations(&dirs.context(TrustStore::default()));
    assert!(scanned.project.contains(&dirs.cwd.join(".mcp.json")));
    assert!(scanned.project.contains(&dirs.cwd.join("mcp-servers")));
}

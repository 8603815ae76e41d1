//! The store against what an earlier sandbox could have planted (links,
//! FIFOs, odd names), its quotas, and ownership between sessions.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// A state dir with a tools dir prepared in it.
fn fresh() -> (tempfile::TempDir, SavedTools) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = Store::prepare(&state, state.join("tools")).unwrap();
    (dir, SavedTools::new(store))
}

fn def(name: &str, body: &str) -> String {
    format!("def {name}():\n    return {body:?}\n")
}

#[test]
fn prepare_creates_a_private_state_dir_and_a_0755_tools_dir() {
    let (dir, saved) = fresh();
    assert_eq!(mode(&dir.path().join("state")), 0o700);
    assert_eq!(mode(saved.store.dir()), 0o755);
}

#[test]
fn a_world_writable_tools_dir_is_tightened_but_the_state_dir_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tools = state.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::set_permissions(&tools, std::fs::Permissions::from_mode(0o777)).unwrap();
    Store::prepare(&state, tools.clone()).unwrap();
    assert_eq!(mode(&tools), 0o755);
    assert_eq!(mode(&state), 0o751);
}

#[test]
fn a_tools_path_that_is_a_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("tools"), "").unwrap();
    assert!(matches!(
        Store::prepare(&state, state.join("tools")),
        Err(SavedError::NotADirectory { .. })
    ));
}

#[test]
fn a_linked_tools_dir_is_used_but_its_target_is_never_chmodded() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o777)).unwrap();
    symlink(&elsewhere, state.join("tools")).unwrap();
    Store::prepare(&state, state.join("tools")).unwrap();
    assert_eq!(mode(&elsewhere), 0o777);
}

#[test]
fn planted_symlink_is_not_followed_chmodded_listed_or_read() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "root only").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let state = dir.path().join("state");
    let tools = state.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    symlink(&secret, tools.join("x.py")).unwrap();

    let saved = SavedTools::new(Store::prepare(&state, tools.clone()).unwrap());
    let scan = saved.store.scan().unwrap();
    assert!(scan.entries.is_empty(), "{scan:?}");
    assert_eq!(scan.ignored.len(), 1, "{scan:?}");
    assert!(matches!(saved.load("x"), Err(SavedError::NotFound { .. })));
    assert!(matches!(
        saved.store.read("x"),
        Err(SavedError::NotRegular { .. })
    ));
    // Saving over it is refused: the link holds the name.
    assert!(matches!(
        saved.save("a", "x", &def("x", "mine")),
        Err(SavedError::NotOwner { .. })
    ));
    assert_eq!(mode(&secret), 0o600, "the link's target keeps its mode");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only");
    assert!(std::fs::symlink_metadata(tools.join("x.py"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn planted_fifo_and_directory_are_ignored_without_blocking() {
    let (_dir, saved) = fresh();
    let tools = saved.store.dir().to_path_buf();
    let fifo = tools.join("fifo.py");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c_path is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    std::fs::create_dir(tools.join("adir.py")).unwrap();
    std::fs::write(tools.join("bad name.py"), "def x(): pass\n").unwrap();
    std::fs::write(tools.join("notes.txt"), "not a tool").unwrap();
    saved.save("a", "real", &def("real", "ok")).unwrap();

    let scan = saved.store.scan().unwrap();
    let names: Vec<&str> = scan.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["real"]);
    assert_eq!(scan.ignored.len(), 3, "{:?}", scan.ignored);
    for name in ["fifo", "adir"] {
        assert!(matches!(
            saved.store.read(name),
            Err(SavedError::NotRegular { .. })
        ));
        assert!(matches!(saved.load(name), Err(SavedError::NotFound { .. })));
    }
}

#[test]
fn saved_files_are_0644_and_no_temporary_is_left() {
    let (_dir, saved) = fresh();
    let done = saved.save("a", "helper", &def("helper", "v1")).unwrap();
    assert_eq!(
        done,
        Saved {
            name: "helper".into(),
            bytes: def("helper", "v1").len() as u64,
            replaced: false
        }
    );
    let file = saved.store.dir().join("helper.py");
    assert_eq!(mode(&file), 0o644);
    assert_eq!(saved.load("helper").unwrap(), def("helper", "v1"));
    let files: Vec<_> = std::fs::read_dir(saved.store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, ["helper.py"]);
}

#[test]
fn only_the_saving_session_replaces_a_tool() {
    let (_dir, saved) = fresh();
    saved.save("a", "helper", &def("helper", "v1")).unwrap();
    let err = saved
        .save("b", "helper", &def("helper", "evil"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("saved by another session"), "{err}");
    assert!(err.contains("codemode tools remove helper"), "{err}");
    assert_eq!(saved.load("helper").unwrap(), def("helper", "v1"));

    let again = saved.save("a", "helper", &def("helper", "v2")).unwrap();
    assert!(again.replaced);
    assert_eq!(saved.load("helper").unwrap(), def("helper", "v2"));
    // Another session may still save a new name.
    saved.save("b", "other", &def("other", "b")).unwrap();
}

#[test]
fn a_tool_from_before_this_bridge_belongs_to_no_session() {
    let (_dir, first) = fresh();
    first.save("a", "helper", &def("helper", "v1")).unwrap();
    let restarted = SavedTools::new(first.store.clone());
    assert!(matches!(
        restarted.save("a", "helper", &def("helper", "v2")),
        Err(SavedError::NotOwner { .. })
    ));
}

#[test]
fn a_file_changed_by_someone_else_is_no_longer_the_sessions() {
    let (_dir, saved) = fresh();
    saved.save("a", "helper", &def("helper", "v1")).unwrap();
    // The user removes it and another bridge saves the name again.
    saved.store.remove("helper").unwrap();
    let other_bridge = SavedTools::new(saved.store.clone());
    other_bridge
        .save("z", "helper", &def("helper", "theirs"))
        .unwrap();
    assert!(matches!(
        saved.save("a", "helper", &def("helper", "v2")),
        Err(SavedError::NotOwner { .. })
    ));
    // Once removed, the name is free for anyone.
    saved.store.remove("helper").unwrap();
    saved.save("b", "helper", &def("helper", "b")).unwrap();
}

#[test]
fn invalid_names_and_sources_never_reach_the_disk() {
    let (_dir, saved) = fresh();
    for name in ["../escape", "a/b", ".hidden", "class", ""] {
        assert!(
            matches!(
                saved.save("a", name, "def x(): pass\n"),
                Err(SavedError::BadName { .. })
            ),
            "{name}"
        );
        assert!(matches!(saved.load(name), Err(SavedError::BadName { .. })));
    }
    assert!(matches!(
        saved.save("a", "f", "def g(): pass\n"),
        Err(SavedError::BadSource { .. })
    ));
    assert!(saved.list().unwrap().is_empty());
    assert!(!saved.store.dir().join("..").join("escape.py").exists());
}

#[test]
fn the_count_quota_holds() {
    let (_dir, saved) = fresh();
    for i in 0..MAX_TOOLS {
        let name = format!("t{i}");
        saved.save("a", &name, &def(&name, "x")).unwrap();
    }
    let err = saved
        .save("a", "one_more", &def("one_more", "x"))
        .unwrap_err();
    assert!(matches!(err, SavedError::Quota { .. }), "{err}");
    assert!(err.to_string().contains("100 tools"), "{err}");
    // Replacing one of them is still allowed.
    saved.save("a", "t0", &def("t0", "y")).unwrap();
}

#[test]
fn the_size_quota_holds() {
    let (_dir, saved) = fresh();
    let big = |name: &str| format!("def {name}():\n    return '{}'\n", "x".repeat(60_000));
    let mut saved_bytes = 0;
    let mut i = 0;
    let err = loop {
        let name = format!("big{i}");
        match saved.save("a", &name, &big(&name)) {
            Ok(s) => saved_bytes += s.bytes,
            Err(e) => break e,
        }
        i += 1;
    };
    assert!(matches!(err, SavedError::Quota { .. }), "{err}");
    assert!(err.to_string().contains("1048576-byte limit"), "{err}");
    assert!(saved_bytes <= MAX_TOTAL_BYTES);
    assert!(saved_bytes + 60_000 > MAX_TOTAL_BYTES - 1000);
}

#[test]
fn remove_unlinks_a_planted_link_not_its_target() {
    let (dir, saved) = fresh();
    let target = dir.path().join("target");
    std::fs::write(&target, "keep").unwrap();
    symlink(&target, saved.store.dir().join("linked.py")).unwrap();
    saved.store.remove("linked").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(matches!(
        saved.store.remove("linked"),
        Err(SavedError::NotFound { .. })
    ));
}

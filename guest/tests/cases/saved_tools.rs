//! Saved tools: save_tool() writes a cell's function to the tools
//! directory; new sessions load every file there, and report broken ones at
//! the start of their first cell.

use codemode_proto::v1::Init;

use crate::common::*;

fn guest_with_tools_dir(dir: &str) -> Guest {
    let mut guest = Guest::spawn();
    guest.init(Init {
        tools_dir: dir.to_owned(),
        ..default_init()
    });
    guest
}

#[test]
fn a_saved_tool_is_loaded_by_the_next_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let mut first = guest_with_tools_dir(path);
    let out = first.run(
        "def triple(x):\n    '''Three times x.'''\n    return 3 * x\n\nprint(save_tool(triple))",
    );
    out.assert_success();
    assert!(out.stdout.contains("saved to"), "{}", out.stdout);
    let saved = std::fs::read_to_string(dir.path().join("triple.py")).unwrap();
    assert!(
        saved.contains("def triple(x):\n    '''Three times x.'''\n    return 3 * x\n"),
        "{saved}"
    );

    let mut second = guest_with_tools_dir(path);
    let out = second.run("print(triple(5), triple.__doc__)");
    out.assert_success();
    assert_eq!(out.stdout, "15 Three times x.\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn broken_saved_tools_are_reported_at_the_start_of_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a_good.py"),
        "def good():\n    return 'good'\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b_broken.py"), "def broken(:\n").unwrap();
    std::fs::write(
        dir.path().join("c_raises.py"),
        "import no_such_module_here\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not python").unwrap();
    let mut guest = guest_with_tools_dir(dir.path().to_str().unwrap());
    let out = guest.run("print(good())");
    out.assert_success();
    assert_eq!(out.stdout, "good\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(
        lines[0].contains("b_broken.py failed to load: SyntaxError"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("c_raises.py failed to load: ModuleNotFoundError"),
        "{}",
        lines[1]
    );
    // Only the first cell carries the report.
    assert_eq!(guest.run("print(1)").stderr, "");
}

#[test]
fn save_tool_refuses_what_it_cannot_save() {
    let dir = tempfile::tempdir().unwrap();
    let mut guest = guest_with_tools_dir(dir.path().to_str().unwrap());
    let out = guest.run(
        "for thing in (42, lambda: 1, print):\n    try:\n        save_tool(thing)\n    except ValueError as e:\n        print(e)",
    );
    out.assert_success();
    assert_eq!(
        out.stdout,
        "save_tool expects a function defined with def, not int\n\
         save_tool needs a function with a name (def name(...)), not '<lambda>'\n\
         save_tool expects a function defined with def, not builtin_function_or_method\n"
    );
}

#[test]
fn save_tool_without_a_usable_directory_says_saving_is_disabled() {
    let mut guest = Guest::started(vec![]);
    let out = guest.run("def f():\n    pass\ntry:\n    save_tool(f)\nexcept runtime.MCPError as e:\n    print(e.kind, e)");
    assert_eq!(
        out.stdout,
        "not_allowed saved tools are disabled: this session has no saved-tools directory\n"
    );

    let file = tempfile::NamedTempFile::new().unwrap();
    let below_a_file = file.path().join("tools");
    let mut guest = guest_with_tools_dir(below_a_file.to_str().unwrap());
    let out = guest.run(
        "def f():\n    pass\ntry:\n    save_tool(f)\nexcept runtime.MCPError as e:\n    print(e)",
    );
    assert!(
        out.stdout.starts_with("saved tools are disabled: "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("is not writable"), "{}", out.stdout);
}

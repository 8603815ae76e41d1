//! `guest/python/_codemode.pyi` against the native module it describes: the
//! type checker trusts the stub, so a name, attribute or parameter renamed on
//! the Rust side without the stub would pass mypy and fail in a sandbox.

use crate::common::*;

const STUB: &str = include_str!("../../python/_codemode.pyi");

/// Parses the stub inside the guest and prints every difference from the
/// live `_codemode`: public names, record attributes, parameter names.
const COMPARE: &str = r#"
import ast, inspect, _codemode
declared = {}
for node in ast.parse(STUB).body:
    if isinstance(node, ast.FunctionDef):
        declared[node.name] = [a.arg for a in node.args.args]
    elif isinstance(node, ast.ClassDef):
        declared[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
public = lambda obj: {n for n in dir(obj) if not n.startswith("_")}
problems = sorted(f"name {n}" for n in public(_codemode) ^ set(declared))
for name, shape in declared.items():
    real = getattr(_codemode, name, None)
    if real is None:
        continue
    if isinstance(shape, set):
        problems += [f"{name}.{a}" for a in sorted(public(real) ^ shape)]
    elif list(inspect.signature(real).parameters) != shape:
        problems.append(f"{name}{inspect.signature(real)} vs {shape}")
print(problems)
"#;

#[test]
fn the_stub_declares_exactly_what_the_native_module_exposes() {
    let mut guest = Guest::started(vec![]);
    let stub = serde_json::to_string(STUB).unwrap();
    let out = guest.run(&format!("STUB = {stub}\n{COMPARE}"));
    out.assert_success();
    assert_eq!(out.stdout, "[]\n");
}

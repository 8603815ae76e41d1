//! Link and embed settings for the interpreter. libpython itself comes from
//! pyo3 (`PYO3_CONFIG_FILE`, written by `images/cpython/build.sh`); here:
//! - the frozen standard library is located for `src/frozen.rs`;
//! - the dynamically linked flavour (no `crt-static`) exports its symbols so
//!   the C extension modules of wheels can resolve `Py*` against it. The
//!   static flavour cannot load extension modules at all.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=python");
    println!("cargo:rerun-if-env-changed=CODEMODE_PYTHON_DIR");
    let Some(dir) = env::var_os("CODEMODE_PYTHON_DIR").map(PathBuf::from) else {
        fail("CODEMODE_PYTHON_DIR is not set (.cargo/config.toml sets it)");
    };
    let frozen = dir.join("frozen");
    for file in ["stdlib.bin", "stdlib.idx", "tzdata.zip"] {
        let path = frozen.join(file);
        if !path.is_file() {
            fail(&format!(
                "{} is missing: build the guest's CPython first with images/cpython/build.sh \
                 (scripts/test.sh and scripts/demo.sh do)",
                path.display()
            ));
        }
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rustc-env=CODEMODE_FROZEN_DIR={}", frozen.display());
    let config = dir.join("pyo3-config.txt");
    println!("cargo:rerun-if-changed={}", config.display());
    let series = config_value(&config, "version");
    println!("cargo:rustc-env=CODEMODE_PYTHON_SERIES={series}");
    compile_guest_modules(Path::new(&config_value(&config, "executable")));
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if !features.split(',').any(|f| f == "crt-static") {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic");
    }
}

/// The value of `key=` in pyo3's interpreter description.
fn config_value(config: &Path, key: &str) -> String {
    let prefix = format!("{key}=");
    std::fs::read_to_string(config)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix(prefix.as_str()).map(str::to_owned))
        })
        .unwrap_or_else(|| fail(&format!("{} names no {key}", config.display())))
}

/// Compiles `python/**/*.py` with the embedded CPython's own build, so the
/// guest loads code objects instead of compiling its runtime at every start
/// (`src/embedded.rs` includes them; the sources stay in for tracebacks).
fn compile_guest_modules(python: &Path) {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default()).join("code");
    let script = r#"
import marshal, os, sys
src, out = sys.argv[1], sys.argv[2]
for root, dirs, files in os.walk(src):
    dirs.sort()
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        path = os.path.relpath(os.path.join(root, name), src)
        with open(os.path.join(src, path), encoding="utf-8") as f:
            code = compile(f.read(), "<codemode>/" + path, "exec", dont_inherit=True)
        dest = os.path.join(out, path + ".bin")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(marshal.dumps(code))
"#;
    let status = std::process::Command::new(python)
        .args(["-I", "-S", "-c", script, "python"])
        .arg(&out)
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!(
            "compiling guest/python with {} failed: {status}",
            python.display()
        )),
        Err(err) => fail(&format!("cannot run {}: {err}", python.display())),
    }
}

fn fail(message: &str) -> ! {
    // Cargo shows a failed build script's stderr.
    #[allow(clippy::print_stderr)]
    {
        eprintln!("error: {message}");
    }
    std::process::exit(1)
}

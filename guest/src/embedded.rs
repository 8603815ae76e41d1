//! The guest's Python code, compiled into the binary from `guest/python/`.
//! `_codemode_boot` is executed directly; it installs an import finder that
//! serves the other modules by name: their code objects, compiled at build
//! time by the embedded CPython's own build (`build.rs`), and their source
//! for tracebacks and `inspect.getsource`.

/// One embedded module.
pub struct Source {
    pub name: &'static str,
    /// Path under `guest/python/`; shown as `<codemode>/<path>` in tracebacks.
    pub path: &'static str,
    pub is_package: bool,
    pub text: &'static str,
    /// The marshalled code object of `text`.
    pub code: &'static [u8],
}

macro_rules! embed {
    ($name:literal, $path:literal, $package:literal) => {
        Source {
            name: $name,
            path: $path,
            is_package: $package,
            text: include_str!(concat!("../python/", $path)),
            code: include_bytes!(concat!(env!("OUT_DIR"), "/code/", $path, ".bin")),
        }
    };
}

pub const BOOT: Source = embed!("_codemode_boot", "_codemode_boot.py", false);

pub const MODULES: &[Source] = &[
    embed!("_codemode_start", "_codemode_start.py", false),
    embed!("_codemode_driver", "_codemode_driver.py", false),
    embed!("_codemode_cells", "_codemode_cells.py", false),
    embed!("_codemode_display", "_codemode_display.py", false),
    embed!("_codemode_stdio", "_codemode_stdio.py", false),
    embed!("_codemode_static", "_codemode_static.py", false),
    embed!("_codemode_tb", "_codemode_tb.py", false),
    embed!("mcp", "mcp/__init__.py", true),
    embed!("mcp.runtime", "mcp/runtime.py", false),
    embed!("mcp.servers", "mcp/servers/__init__.py", true),
    embed!("mcp._errors", "mcp/_errors.py", false),
    embed!("mcp._state", "mcp/_state.py", false),
    embed!("mcp._rpc", "mcp/_rpc.py", false),
    embed!("mcp._results", "mcp/_results.py", false),
    embed!("mcp._signature", "mcp/_signature.py", false),
    embed!("mcp._install", "mcp/_install.py", false),
    embed!("mcp._proxy", "mcp/_proxy.py", false),
    embed!("mcp._docs", "mcp/_docs.py", false),
    embed!("mcp._rich", "mcp/_rich.py", false),
    embed!("mcp._saved", "mcp/_saved.py", false),
    embed!("mcp.saved", "mcp/saved.py", false),
];

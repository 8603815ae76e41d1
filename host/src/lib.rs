//! codemode: an MCP server with one tool, `run_python`, that runs
//! model-written Python in a hardened sandbox where every configured MCP
//! server is a Python module.
//!
//! Layout: [`cli`] parses commands; [`server`] is the MCP face; [`bridge`]
//! owns sessions and runs requests; [`sandbox`] speaks frames with one
//! guest; [`runtime`] starts guests in podman/docker/bubblewrap; [`proxy`]
//! keeps the proxied MCP servers; [`index`] keeps and ranks their tools for
//! search; [`config`] finds their definitions;
//! [`image`] builds sandbox images; [`render`] shapes results; [`saved`]
//! keeps the tools cells save; [`terminal`] makes foreign text safe to print.
//!
//! The host runs on Linux only: its sandboxes are Linux namespaces
//! (bubblewrap, or podman/docker on the same kernel), and it uses Linux
//! interfaces throughout (prctl, cgroups, seccomp, `/proc`). A macOS or
//! Windows user runs it inside a Linux VM or container.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[cfg(not(target_os = "linux"))]
compile_error!(
    "codemode's host runs on Linux only (its sandboxes are Linux namespaces); \
     on macOS or Windows, run it inside a Linux VM"
);

pub(crate) mod bridge;
pub(crate) mod child;
pub mod cli;
pub(crate) mod config;
pub(crate) mod index;
pub(crate) mod proxy;
pub(crate) mod render;
pub(crate) mod runtime;
pub(crate) mod sandbox;
pub(crate) mod saved;
pub(crate) mod server;
pub(crate) mod settings;
pub(crate) mod terminal;

//! codemode: an MCP server with one tool, `run_python`, that runs
//! model-written Python in a hardened sandbox where every configured MCP
//! server is a Python module.
//!
//! Layout: [`cli`] parses commands; [`server`] is the MCP face; [`bridge`]
//! owns sessions and runs requests; [`sandbox`] speaks frames with one
//! guest; [`runtime`] starts guests in podman/docker/bubblewrap; [`proxy`]
//! keeps the proxied MCP servers; [`config`] finds their definitions;
//! [`image`] builds sandbox images; [`render`] shapes results; [`saved`]
//! keeps the tools cells save; [`terminal`] makes foreign text safe to print.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod bridge;
pub mod cli;
pub mod config;
pub mod image;
pub mod procgroup;
pub mod proxy;
pub mod render;
pub mod runtime;
pub mod sandbox;
pub mod saved;
pub mod server;
pub mod settings;
pub mod terminal;

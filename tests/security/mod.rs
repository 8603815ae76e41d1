//! The security suite: each test runs one attack from a real cell (or
//! plants what a cell could plant) on both backends, and asserts the safe
//! outcome. Run as root and as an unprivileged user by `scripts/test.sh`.
//! One file per trust boundary, one test per attack, named after it.

mod as_root;
mod host_root;
mod isolation;
mod kernel_surface;
mod policy;
mod project_config;
mod resources;
mod saved_tools;

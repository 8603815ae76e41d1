//! The `codemode-guest` binary: everything lives in the library so tests and
//! the binary share one code path.

fn main() {
    codemode_guest::run_main()
}

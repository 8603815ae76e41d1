//! The `codemode` binary: everything lives in the library.

fn main() -> std::process::ExitCode {
    codemode::cli::main()
}

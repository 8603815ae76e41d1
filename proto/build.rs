//! Compiles `proto/codemode.proto` with the pure-Rust `protox` front end, so
//! building needs no system `protoc`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let schema = manifest.join("proto/codemode.proto");
    println!("cargo:rerun-if-changed={}", schema.display());
    let descriptors = protox::compile([&schema], [manifest.join("proto")])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}

//! Link settings for the embedded interpreter. libpython itself comes from
//! pyo3 (see `pyo3-config.txt`); here the binary exports its symbols so the
//! C extension modules in `lib-dynload` can resolve `Py*` against it.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=pyo3-config.txt");
    println!("cargo:rerun-if-changed=python");
}

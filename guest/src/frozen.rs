//! The standard library, compiled into the guest binary.
//!
//! `images/cpython/build.sh` builds CPython and marshals its `Lib/` into one
//! blob plus an index (`images/cpython/freeze_stdlib.py`); `build.rs`
//! embeds both. Before the interpreter starts, [`install`] hands CPython a
//! `PyImport_FrozenModules` table pointing into the blob, so every stdlib
//! import (including `encodings`, which initialization itself needs) is
//! served from the binary's read-only data: no file, no `stat`, nothing of
//! the host's Python. The table is built once and lives for the process.

use std::ffi::{c_char, c_int, c_uchar, CString};
use std::sync::OnceLock;

use pyo3::ffi;

static BLOB: &[u8] = include_bytes!(concat!(env!("CODEMODE_FROZEN_DIR"), "/stdlib.bin"));
static INDEX: &str = include_str!(concat!(env!("CODEMODE_FROZEN_DIR"), "/stdlib.idx"));
/// The time-zone database as the `tzdata` package, zipped (empty when the
/// build host had none): `_codemode_driver` puts it on `sys.path`.
pub static TZDATA: &[u8] = include_bytes!(concat!(env!("CODEMODE_FROZEN_DIR"), "/tzdata.zip"));

/// The table and the names it points to; the names must outlive it.
struct Table {
    _names: Vec<CString>,
    entries: Vec<ffi::_frozen>,
}

// SAFETY: the table is written once, before the interpreter starts, and only
// read after; its pointers target `BLOB` (static) and `_names` (owned by the
// same value, never mutated).
unsafe impl Send for Table {}
// SAFETY: as above: immutable after construction.
unsafe impl Sync for Table {}

static TABLE: OnceLock<Result<Table, String>> = OnceLock::new();

/// One line of the index: `name<TAB>package|module<TAB>offset<TAB>size`.
fn parse_line(line: &str) -> Result<(CString, bool, &'static [u8]), String> {
    let bad = || format!("malformed frozen-module index line {line:?}");
    let mut fields = line.split('\t');
    let (Some(name), Some(kind), Some(offset), Some(size), None) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return Err(bad());
    };
    let is_package = match kind {
        "package" => true,
        "module" => false,
        _ => return Err(bad()),
    };
    let offset: usize = offset.parse().map_err(|_| bad())?;
    let size: usize = size.parse().map_err(|_| bad())?;
    let code = offset
        .checked_add(size)
        .and_then(|end| BLOB.get(offset..end))
        .ok_or_else(bad)?;
    let name = CString::new(name).map_err(|_| bad())?;
    Ok((name, is_package, code))
}

fn build() -> Result<Table, String> {
    let mut names = Vec::new();
    let mut entries = Vec::new();
    for line in INDEX.lines().filter(|line| !line.is_empty()) {
        let (name, is_package, code) = parse_line(line)?;
        let size =
            c_int::try_from(code.len()).map_err(|_| format!("module {name:?} is too large"))?;
        entries.push(ffi::_frozen {
            name: name.as_ptr(),
            code: code.as_ptr(),
            size,
            is_package: c_int::from(is_package),
        });
        names.push(name);
    }
    // The terminator CPython stops at.
    entries.push(ffi::_frozen {
        name: std::ptr::null::<c_char>(),
        code: std::ptr::null::<c_uchar>(),
        size: 0,
        is_package: 0,
    });
    Ok(Table {
        _names: names,
        entries,
    })
}

/// Points CPython's frozen-module table at the embedded stdlib. Must run
/// before the interpreter is initialized.
pub fn install() -> Result<(), String> {
    let table = TABLE.get_or_init(build).as_ref().map_err(Clone::clone)?;
    // SAFETY: called once on the main thread before Py_Initialize* (the
    // interpreter module guards that), when nothing reads the pointer; the
    // table is 'static, NULL-terminated and immutable from here on.
    unsafe {
        ffi::PyImport_FrozenModules = table.entries.as_ptr();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_covers_what_initialization_and_the_runtime_import() {
        let names: Vec<&str> = INDEX.lines().filter_map(|l| l.split('\t').next()).collect();
        for needed in [
            "encodings",
            "encodings.utf_8",
            "asyncio",
            "json",
            "os",
            "site",
        ] {
            assert!(names.contains(&needed), "{needed} is not frozen");
        }
        for line in INDEX.lines() {
            assert!(parse_line(line).is_ok(), "{line}");
        }
        assert!(build().is_ok());
    }

    #[test]
    fn a_malformed_line_is_an_error_not_a_panic() {
        for line in [
            "",
            "a\tpackage",
            "a\tfile\t0\t1",
            "a\tmodule\t0\tx",
            "a\tmodule\t18446744073709551615\t2",
        ] {
            assert!(parse_line(line).is_err(), "{line:?}");
        }
    }
}

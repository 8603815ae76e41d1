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

/// Python that defines `syscall(number, *args) -> (rc, errno)`: a raw
/// x86-64 system call from machine code in an executable mapping, called
/// through ctypes. The static guest has no `dlsym`, so `CDLL(None).syscall`
/// is not there; an attacker with arbitrary code is not held back by that,
/// and neither are these probes. Byte strings are passed as pointers.
pub const SYSCALL_PY: &str = r#"
import ctypes as _ct, mmap as _mm
_code = bytes([0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89, 0xca,
               0x4d, 0x89, 0xc2, 0x4d, 0x89, 0xc8, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05, 0xc3])
_page = _mm.mmap(-1, _mm.PAGESIZE, prot=_mm.PROT_READ | _mm.PROT_WRITE | _mm.PROT_EXEC)
_page.write(_code)
_raw = _ct.CFUNCTYPE(_ct.c_long, *[_ct.c_long] * 7)(_ct.addressof(_ct.c_char.from_buffer(_page)))
def syscall(number, *args):
    keep = []
    def word(a):
        if isinstance(a, bytes):
            buf = _ct.create_string_buffer(a)
            keep.append(buf)
            return _ct.addressof(buf)
        return 0 if a is None else a
    values = [word(a) for a in args] + [0] * (6 - len(args))
    rc = _raw(number, *values)
    return (-1, -rc) if -4096 < rc < 0 else (rc, 0)
"#;

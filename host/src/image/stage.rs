//! Staging an image's build context: `rootfs/` and a filled-in Containerfile.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::elf::{is_elf, library_closure};
use super::error::ImageError;
use super::rootfs::Rootfs;
use super::{datascience, Variant};

/// Debian's interpreter: the stdlib in the image must be the one the guest was built against.
pub(crate) const PYTHON: &str = "/usr/bin/python3.11";
/// Debian's Python 3.11 standard library.
pub const STDLIB: &str = "/usr/lib/python3.11";
/// Where the guest lives in the image; the Containerfile's ENTRYPOINT.
pub const GUEST_PATH: &str = "/usr/local/bin/codemode-guest";
const ZONEINFO: &str = "/usr/share/zoneinfo";
const CONTAINERFILE: &str = include_str!("../../../images/Containerfile");

/// Stdlib parts nobody imports in a headless sandbox, relative to [`STDLIB`]:
/// test suites, GUI toolkits, pip bootstrap, the 25 MB static libpython, and
/// the version-specific package dirs (python3-numpy puts a module there that
/// would drag BLAS into the default image).
const STDLIB_SKIP: [&str; 13] = [
    "dist-packages",
    "site-packages",
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "config-3.11-x86_64-linux-gnu",
    "lib2to3/tests",
    "distutils/tests",
    "unittest/test",
    "ctypes/test",
    "sqlite3/test",
];

/// The loader's built-in search path on Debian amd64; libraries elsewhere
/// need LD_LIBRARY_PATH in the image because it has no ld.so.cache.
const LOADER_DIRS: [&str; 6] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib",
    "/usr/lib",
    "/lib64",
    "/usr/lib64",
];

const PASSWD: &str = "root:x:0:0:root:/root:/usr/sbin/nologin\n\
    nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";

/// Writes `rootfs/` and `Containerfile` for `variant` into `dest` (created if
/// missing; meant to be empty). Returns the number of files and symlinks staged.
pub fn stage(
    variant: Variant,
    guest: &Path,
    dest: &Path,
    progress: &dyn Fn(&str),
) -> Result<usize, ImageError> {
    check_guest(guest)?;
    if !Path::new(STDLIB).join("os.py").is_file() {
        return Err(ImageError::MissingStdlib {
            path: STDLIB.into(),
        });
    }
    let mut rootfs = Rootfs::create(&dest.join("rootfs"))?;
    progress(&format!(
        "staging the guest {} as {GUEST_PATH}",
        guest.display()
    ));
    rootfs.copy_to(guest, Path::new(GUEST_PATH), 0o755)?;

    progress(&format!(
        "staging the Python 3.11 standard library from {STDLIB}"
    ));
    rootfs.stage_tree(Path::new(STDLIB), &skip_stdlib)?;
    // The stdlib's zoneinfo module reads the system tz database; the leap-second
    // "right/" copy doubles it for no use.
    let skip_right = |path: &Path, _: &fs::FileType| path == Path::new(ZONEINFO).join("right");
    rootfs.stage_tree(Path::new(ZONEINFO), &skip_right)?;

    if variant == Variant::Datascience {
        datascience::stage(&mut rootfs, dest, progress)?;
    }

    let elves: Vec<PathBuf> = rootfs.elves().iter().cloned().collect();
    progress(&format!(
        "resolving the shared libraries of {} ELF files with ldd",
        elves.len()
    ));
    let libraries = library_closure(&elves)?;
    let mut extra_dirs = BTreeSet::new();
    for library in &libraries {
        rootfs.stage_path(library)?;
        if let Some(dir) = library.parent() {
            if !LOADER_DIRS.iter().any(|known| dir == Path::new(known)) {
                extra_dirs.insert(dir.to_path_buf());
            }
        }
    }
    progress(&format!("staged {} shared libraries", libraries.len()));

    // Written last so nothing copied from the host's /etc can replace them.
    rootfs.write_file(Path::new("/etc/passwd"), PASSWD.as_bytes())?;
    rootfs.write_file(Path::new("/etc/group"), GROUP.as_bytes())?;
    // podman copies the image's /tmp mode onto a --tmpfs /tmp, so it must be 1777 here.
    rootfs.add_dir_with_mode(Path::new("/tmp"), 0o1777)?;
    rootfs.add_dir_with_mode(Path::new("/workspace"), 0o1777)?;

    let containerfile = render_containerfile(variant, &extra_dirs);
    let path = dest.join("Containerfile");
    fs::write(&path, containerfile).map_err(ImageError::io("write", path))?;
    Ok(rootfs.entries())
}

/// The Containerfile of `variant` with its fields filled in.
pub(crate) fn render_containerfile(variant: Variant, extra_lib_dirs: &BTreeSet<PathBuf>) -> String {
    let mut env = String::new();
    if variant == Variant::Datascience {
        // Headless: no display, and the read-only root leaves only /tmp for
        // matplotlib's font cache.
        env.push_str(" \\\n    MPLBACKEND=Agg \\\n    MPLCONFIGDIR=/tmp/matplotlib");
    }
    if !extra_lib_dirs.is_empty() {
        let dirs: Vec<String> = extra_lib_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        env.push_str(&format!(" \\\n    LD_LIBRARY_PATH={}", dirs.join(":")));
    }
    CONTAINERFILE
        .replace("@EXTRA_ENV@", &env)
        .replace("@VARIANT@", variant.name())
        .replace("@GUEST_VERSION@", env!("CARGO_PKG_VERSION"))
        .replace(
            "@PROTOCOL_MAJOR@",
            &codemode_proto::PROTOCOL_MAJOR.to_string(),
        )
        .replace(
            "@PROTOCOL_MINOR@",
            &codemode_proto::PROTOCOL_MINOR.to_string(),
        )
}

fn check_guest(guest: &Path) -> Result<(), ImageError> {
    let found = match fs::metadata(guest) {
        Err(err) => err.to_string(),
        Ok(meta) if !meta.is_file() => "something that is not a regular file".into(),
        Ok(_) if !is_elf(guest) => "a file that is not ELF".into(),
        Ok(_) => return Ok(()),
    };
    Err(ImageError::BadGuest {
        path: guest.to_path_buf(),
        found,
    })
}

fn skip_stdlib(path: &Path, _: &fs::FileType) -> bool {
    let Ok(relative) = path.strip_prefix(STDLIB) else {
        return false;
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    STDLIB_SKIP.iter().any(|skip| relative == Path::new(skip))
        // Tk needs X11 libraries the image does not have.
        || (relative.starts_with("lib-dynload") && name.starts_with("_tkinter"))
        || is_optimized_bytecode(path)
}

/// `-O`/`-OO` bytecode: the guest never runs optimized, so it is dead weight.
pub(crate) fn is_optimized_bytecode(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".pyc") && name.contains(".opt-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdlib_skips_tests_gui_and_optimized_bytecode_only() {
        let file = fs::metadata("/etc/passwd").unwrap().file_type();
        let skipped = |rel: &str| skip_stdlib(&Path::new(STDLIB).join(rel), &file);
        assert!(skipped("test"));
        assert!(skipped("unittest/test"));
        assert!(skipped("config-3.11-x86_64-linux-gnu"));
        assert!(skipped(
            "lib-dynload/_tkinter.cpython-311-x86_64-linux-gnu.so"
        ));
        assert!(skipped("json/__pycache__/decoder.cpython-311.opt-1.pyc"));
        assert!(!skipped("unittest"));
        assert!(!skipped("json/__pycache__/decoder.cpython-311.pyc"));
        assert!(!skipped(
            "lib-dynload/_json.cpython-311-x86_64-linux-gnu.so"
        ));
        assert!(!skipped("test_helpers.py"));
    }
}

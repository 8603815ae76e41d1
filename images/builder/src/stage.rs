//! Staging an image's build context: `rootfs/` and a filled-in Containerfile.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::elf::{is_elf, library_closure};
use super::error::ImageError;
use super::packages::{self, SITE_PACKAGES};
use super::rootfs::Rootfs;
use super::{Contents, Variant};
use crate::flavour::{flavour_of, Flavour};

/// Where the guest lives in the image; the Containerfile's ENTRYPOINT.
pub const GUEST_PATH: &str = "/usr/local/bin/codemode-guest";
const CONTAINERFILE: &str = include_str!("../../Containerfile");

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
    variant: &Variant,
    contents: &Contents,
    dest: &Path,
    progress: &dyn Fn(&str),
) -> Result<usize, ImageError> {
    let mut rootfs = Rootfs::create(&dest.join("rootfs"))?;
    let mut extra_dirs = BTreeSet::new();
    match contents {
        Contents::GuestOnly { guest } => {
            check_guest(guest, Flavour::Static)?;
            progress(&format!(
                "staging the static guest {} as {GUEST_PATH}: CPython and its standard library are inside it",
                guest.display()
            ));
            rootfs.copy_to(guest, Path::new(GUEST_PATH), 0o755)?;
        }
        Contents::Packages {
            guest,
            requirements,
            source,
        } => {
            check_guest(guest, Flavour::Dynamic)?;
            progress(&format!(
                "staging the dynamic guest {} as {GUEST_PATH}",
                guest.display()
            ));
            rootfs.copy_to(guest, Path::new(GUEST_PATH), 0o755)?;
            packages::stage(&mut rootfs, guest, requirements, source, dest, progress)?;
            extra_dirs = stage_libraries(&mut rootfs, progress)?;
        }
    }
    rootfs.write_file(Path::new("/etc/passwd"), PASSWD.as_bytes())?;
    rootfs.write_file(Path::new("/etc/group"), GROUP.as_bytes())?;
    // podman copies the image's /tmp mode onto a --tmpfs /tmp, so it must be 1777 here.
    rootfs.add_dir_with_mode(Path::new("/tmp"), 0o1777)?;
    rootfs.add_dir_with_mode(Path::new("/workspace"), 0o1777)?;

    let containerfile = render_containerfile(variant, contents, &extra_dirs);
    let path = dest.join("Containerfile");
    fs::write(&path, containerfile).map_err(ImageError::io("write", path))?;
    Ok(rootfs.entries())
}

/// Stages the `ldd` closure of every ELF file in the tree (the dynamic
/// guest, the packages' extension modules); returns the directories the
/// loader must be told about.
pub(crate) fn stage_libraries(
    rootfs: &mut Rootfs,
    progress: &dyn Fn(&str),
) -> Result<BTreeSet<PathBuf>, ImageError> {
    let elves: Vec<PathBuf> = rootfs.elves().iter().cloned().collect();
    progress(&format!(
        "resolving the shared libraries of {} ELF files with ldd",
        elves.len()
    ));
    let libraries = library_closure(&elves)?;
    let mut extra_dirs = BTreeSet::new();
    let mut staged = 0;
    for library in &libraries {
        // A wheel's own vendored libraries (numpy.libs/...) are in place.
        if rootfs.holds(library) {
            continue;
        }
        rootfs.stage_path(library)?;
        staged += 1;
        if let Some(dir) = library.parent() {
            if !LOADER_DIRS.iter().any(|known| dir == Path::new(known)) {
                extra_dirs.insert(dir.to_path_buf());
            }
        }
    }
    progress(&format!("staged {staged} shared libraries from the host"));
    Ok(extra_dirs)
}

/// The Containerfile of `variant` with its fields filled in.
pub(crate) fn render_containerfile(
    variant: &Variant,
    contents: &Contents,
    extra_lib_dirs: &BTreeSet<PathBuf>,
) -> String {
    let mut env = String::new();
    let flavour = match contents {
        Contents::GuestOnly { .. } => "static",
        Contents::Packages { .. } => {
            // Headless: no display, and the read-only root leaves only /tmp
            // for matplotlib's font cache.
            env.push_str(" \\\n    MPLBACKEND=Agg \\\n    MPLCONFIGDIR=/tmp/matplotlib");
            "dynamic"
        }
    };
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
        .replace("@FLAVOUR@", flavour)
        .replace("@SITE_PACKAGES@", SITE_PACKAGES)
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

fn check_guest(guest: &Path, wanted: Flavour) -> Result<(), ImageError> {
    let found = match fs::metadata(guest) {
        Err(err) => err.to_string(),
        Ok(meta) if !meta.is_file() => "something that is not a regular file".into(),
        Ok(_) if !is_elf(guest) => "a file that is not ELF".into(),
        Ok(_) => {
            return match flavour_of(guest) {
                Some(flavour) if flavour == wanted => Ok(()),
                Some(flavour) => Err(ImageError::WrongGuest {
                    path: guest.to_path_buf(),
                    found: flavour.describe(),
                    why: match wanted {
                        Flavour::Static => "the default image holds nothing but the guest, which must be statically linked",
                        Flavour::Dynamic => "an image with packages needs the dynamically linked guest to load their C extension modules",
                    },
                }),
                None => Err(ImageError::BadGuest {
                    path: guest.to_path_buf(),
                    found: "an ELF file that is not a 64-bit little-endian executable".into(),
                }),
            };
        }
    };
    Err(ImageError::BadGuest {
        path: guest.to_path_buf(),
        found,
    })
}

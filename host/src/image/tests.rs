//! Tag naming and staging against this host's real Debian files, with
//! /usr/bin/python3.11 standing in for the guest (any dynamic ELF will do).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use super::error::ImageError;
use super::stage::{stage, GUEST_PATH};
use super::*;

const STAND_IN_GUEST: &str = "/usr/bin/python3.11";

#[test]
fn tags_carry_variant_guest_version_and_protocol_major() {
    let version = env!("CARGO_PKG_VERSION");
    let major = codemode_proto::PROTOCOL_MAJOR;
    assert_eq!(
        image_tag(Variant::Default),
        format!("localhost/codemode-sandbox:{version}-p{major}")
    );
    assert_eq!(
        image_tag(Variant::Datascience),
        format!("localhost/codemode-sandbox-datascience:{version}-p{major}")
    );
    assert_eq!(Variant::Datascience.to_string(), "datascience");
}

#[test]
fn variants_parse_from_the_command_line_names() {
    use clap::ValueEnum;
    assert_eq!(Variant::from_str("default", false), Ok(Variant::Default));
    assert_eq!(
        Variant::from_str("datascience", false),
        Ok(Variant::Datascience)
    );
    assert!(Variant::from_str("gpu", false).is_err());
}

#[test]
fn containerfile_fields_are_all_filled() {
    let rendered = stage::render_containerfile(Variant::Datascience, &BTreeSet::new());
    assert!(!rendered.contains('@'), "unfilled field in:\n{rendered}");
    assert!(rendered.contains("MPLBACKEND=Agg"), "{rendered}");
    assert!(rendered.contains(&format!(
        "io.codemode.guest-version=\"{}\"",
        env!("CARGO_PKG_VERSION")
    )));
    assert!(rendered.contains("USER 65534:65534"));
    assert!(rendered.contains(&format!("ENTRYPOINT [\"{GUEST_PATH}\"]")));
    let default = stage::render_containerfile(Variant::Default, &BTreeSet::new());
    assert!(!default.contains("MPLBACKEND"), "{default}");
    let odd: BTreeSet<PathBuf> = [PathBuf::from("/opt/lib")].into();
    assert!(
        stage::render_containerfile(Variant::Default, &odd).contains("LD_LIBRARY_PATH=/opt/lib")
    );
}

#[test]
fn a_guest_that_is_not_elf_is_refused() {
    let dest = tempfile::tempdir().unwrap();
    let err = stage(
        Variant::Default,
        Path::new("/etc/passwd"),
        dest.path(),
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, ImageError::BadGuest { .. }), "{err}");
    assert!(err.to_string().contains("not ELF"), "{err}");
}

#[test]
fn default_variant_stages_a_runnable_tree() {
    let dest = tempfile::tempdir().unwrap();
    let messages = std::cell::RefCell::new(Vec::new());
    let count = stage(
        Variant::Default,
        Path::new(STAND_IN_GUEST),
        dest.path(),
        &|m| messages.borrow_mut().push(m.to_string()),
    )
    .unwrap();
    let root = dest.path().join("rootfs");
    assert!(count > 1000, "only {count} files staged");
    assert!(!messages.borrow().is_empty());

    let guest = root.join(GUEST_PATH.trim_start_matches('/'));
    assert_eq!(
        fs::metadata(&guest).unwrap().permissions().mode() & 0o777,
        0o755
    );

    // The stdlib is there, its test suite is not.
    assert!(root.join("usr/lib/python3.11/os.py").is_file());
    assert!(root
        .join("usr/lib/python3.11/asyncio/__init__.py")
        .is_file());
    assert!(root.join("usr/lib/python3.11/lib-dynload").is_dir());
    assert!(!root.join("usr/lib/python3.11/test").exists());
    assert!(!root
        .join("usr/lib/python3.11/config-3.11-x86_64-linux-gnu")
        .exists());
    assert!(root.join("usr/share/zoneinfo/Europe/Paris").exists());
    // Bytecode caches stay valid only if sources keep their mtimes.
    let mtime = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();
    let os_py = Path::new("/usr/lib/python3.11/asyncio/base_events.py");
    assert_eq!(
        mtime(&root.join("usr/lib/python3.11/asyncio/base_events.py")),
        mtime(os_py)
    );
    assert!(root
        .join("usr/lib/python3.11/asyncio/__pycache__/base_events.cpython-311.pyc")
        .is_file());

    // The loader and libc resolve inside the tree, through their symlinks.
    let interpreter = resolve_in(&root, Path::new("/lib64/ld-linux-x86-64.so.2"));
    assert!(interpreter.is_file(), "{}", interpreter.display());
    let libc = resolve_in(&root, Path::new("/lib/x86_64-linux-gnu/libc.so.6"));
    assert!(libc.is_file(), "{}", libc.display());
    // Every library any staged ELF file needs is in the tree too.
    for elf in collect_elves(&root) {
        for lib in needed_by(&root, &elf) {
            assert!(
                resolve_in(&root, &lib).is_file(),
                "{} needs {}",
                elf.display(),
                lib.display()
            );
        }
    }

    let tmp = fs::metadata(root.join("tmp")).unwrap().permissions().mode();
    assert_eq!(tmp & 0o7777, 0o1777);
    let workspace = fs::metadata(root.join("workspace"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(workspace & 0o7777, 0o1777);
    assert_eq!(
        fs::metadata(&root).unwrap().permissions().mode() & 0o777,
        0o755
    );

    // No shell and no package manager, under any name.
    assert!(fs::symlink_metadata(root.join("bin/sh")).is_err());
    for forbidden in [
        "sh", "bash", "dash", "apt", "apt-get", "dpkg", "pip", "pip3",
    ] {
        assert!(
            find_named(&root, forbidden).is_empty(),
            "{forbidden} is in the image"
        );
    }

    let passwd = fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("nobody:x:65534:65534:")),
        "{passwd}"
    );
    let containerfile = fs::read_to_string(dest.path().join("Containerfile")).unwrap();
    assert!(containerfile.contains("FROM scratch") && !containerfile.contains('@'));
}

#[test]
fn datascience_variant_stages_numpy_pandas_matplotlib_without_test_suites() {
    let dest = tempfile::tempdir().unwrap();
    stage(
        Variant::Datascience,
        Path::new(STAND_IN_GUEST),
        dest.path(),
        &|_| {},
    )
    .unwrap();
    let root = dest.path().join("rootfs");
    let dist = root.join("usr/lib/python3/dist-packages");
    for package in [
        "numpy",
        "pandas",
        "matplotlib",
        "PIL",
        "dateutil",
        "pytz",
        "contourpy",
    ] {
        assert!(
            dist.join(package).join("__init__.py").is_file(),
            "{package} missing"
        );
    }
    assert!(!dist.join("pandas/tests").exists());
    assert!(
        !dist.join("scipy").exists(),
        "scipy is not needed by the workload"
    );
    assert!(
        !dist.join("lxml").exists(),
        "lxml is an optional accelerator, left out"
    );
    assert!(fs::read_dir(&dist)
        .unwrap()
        .all(|e| { e.unwrap().path().extension().is_none_or(|ext| ext != "pth") }));
    // matplotlib's data directory and the fonts it opened came along.
    assert!(resolve_in(
        &root,
        Path::new("/usr/share/matplotlib/mpl-data/matplotlibrc")
    )
    .is_file());
    assert!(!find_named(&root, "DejaVuSans.ttf").is_empty());
    // numpy's BLAS goes through /etc/alternatives; it must resolve in the tree.
    for elf in collect_elves(&dist) {
        for lib in needed_by(&root, &elf) {
            assert!(
                resolve_in(&root, &lib).is_file(),
                "{} needs {}",
                elf.display(),
                lib.display()
            );
        }
    }
    assert!(
        !dest.path().join("probe-mplconfig").exists(),
        "probe scratch left behind"
    );
}

/// Follows `abs` inside `root` the way the image's loader would, treating
/// absolute symlink targets as relative to `root`.
fn resolve_in(root: &Path, abs: &Path) -> PathBuf {
    let mut pending: Vec<PathBuf> = vec![abs.to_path_buf()];
    let mut current = PathBuf::from("/");
    let mut hops = 0;
    while let Some(path) = pending.pop() {
        let mut parts: Vec<_> = path.components().collect();
        parts.reverse();
        if path.is_absolute() {
            current = PathBuf::from("/");
        }
        while let Some(part) = parts.pop() {
            match part {
                Component::Normal(name) => {
                    let next = current.join(name);
                    let inside = root.join(next.strip_prefix("/").unwrap());
                    match fs::read_link(&inside) {
                        Ok(target) => {
                            hops += 1;
                            assert!(hops < 40, "symlink loop at {}", next.display());
                            let rest: PathBuf = parts.iter().rev().collect();
                            pending.push(if rest.as_os_str().is_empty() {
                                target
                            } else {
                                target.join(rest)
                            });
                            break;
                        }
                        Err(_) => current = next,
                    }
                }
                Component::ParentDir => {
                    current.pop();
                }
                _ => {}
            }
        }
    }
    root.join(current.strip_prefix("/").unwrap())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else {
            out.push(entry.path());
        }
    }
}

fn find_named(root: &Path, name: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(root, &mut all);
    all.into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == name))
        .collect()
}

fn collect_elves(root: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(root, &mut all);
    all.into_iter()
        .filter(|p| !p.is_symlink() && elf::is_elf(p))
        .collect()
}

/// The absolute paths, as seen inside the image, that the loader resolves
/// for the staged `elf` (a `$ORIGIN` runpath resolves inside the tree).
fn needed_by(root: &Path, elf: &Path) -> Vec<PathBuf> {
    let output = std::process::Command::new("ldd").arg(elf).output().unwrap();
    elf::parse_ldd(&String::from_utf8_lossy(&output.stdout), elf)
        .into_iter()
        .map(|dependency| match dependency {
            elf::Dependency::Found(path) => match path.strip_prefix(root) {
                Ok(inside) => Path::new("/").join(inside),
                Err(_) => path,
            },
            elf::Dependency::Missing { elf, library } => {
                panic!("{} misses {library}", elf.display())
            }
        })
        .collect()
}

//! Tag naming and staging against this host's real files: `/sbin/ldconfig`
//! (glibc's, statically linked) stands in for the static guest and this
//! test binary for the dynamic one. Images with packages need pip and PyPI,
//! so the system suite builds those (tests/e2e.rs).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use super::error::ImageError;
use super::rootfs::Rootfs;
use super::stage::{stage, GUEST_PATH};
use super::*;

const STATIC_STAND_IN: &str = "/sbin/ldconfig";

fn guest_only(path: &str) -> Contents {
    Contents::GuestOnly {
        guest: PathBuf::from(path),
    }
}

fn variant(name: &str) -> Variant {
    name.parse().unwrap()
}

#[test]
fn tags_carry_variant_guest_version_and_protocol_major() {
    let version = env!("CARGO_PKG_VERSION");
    let major = codemode_proto::PROTOCOL_MAJOR;
    assert_eq!(
        image_tag(&Variant::default()),
        format!("localhost/codemode-sandbox:{version}-p{major}")
    );
    assert_eq!(
        image_tag(&variant("datascience")),
        format!("localhost/codemode-sandbox-datascience:{version}-p{major}")
    );
    assert_eq!(
        image_tag(&variant("ml-tools")),
        format!("localhost/codemode-sandbox-ml-tools:{version}-p{major}")
    );
}

#[test]
fn variant_names_are_checked() {
    for good in ["default", "datascience", "ml-tools", "a1"] {
        assert!(good.parse::<Variant>().is_ok(), "{good}");
    }
    for bad in ["", "GPU", "-x", "x-", "a b", "a/b", "a:b", &"x".repeat(41)] {
        let err = bad.parse::<Variant>().unwrap_err();
        assert!(err.contains("lowercase letters"), "{bad}: {err}");
    }
    assert!(variant("datascience").built_in_requirements().is_some());
    assert!(variant("ml-tools").built_in_requirements().is_none());
    assert!(Variant::default().built_in_requirements().is_none());
}

#[test]
fn the_datascience_list_pins_every_package() {
    let pinned: Vec<&str> = DATASCIENCE_REQUIREMENTS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for package in ["numpy", "pandas", "matplotlib", "scipy"] {
        assert!(
            pinned
                .iter()
                .any(|l| l.starts_with(&format!("{package}=="))),
            "{package} not pinned"
        );
    }
    assert!(pinned.iter().all(|l| l.contains("==")), "{pinned:?}");
}

#[test]
fn containerfile_fields_are_all_filled() {
    let packages = Contents::Packages {
        guest: PathBuf::from("/g"),
        requirements: String::new(),
        source: String::new(),
    };
    let rendered =
        stage::render_containerfile(&variant("datascience"), &packages, &BTreeSet::new());
    assert!(!rendered.contains('@'), "unfilled field in:\n{rendered}");
    assert!(rendered.contains("MPLBACKEND=Agg"), "{rendered}");
    assert!(rendered.contains("io.codemode.guest-flavour=\"dynamic\""));
    assert!(rendered.contains(&format!(
        "io.codemode.guest-version=\"{}\"",
        env!("CARGO_PKG_VERSION")
    )));
    assert!(rendered.contains("USER 65534:65534"));
    assert!(rendered.contains(&format!("ENTRYPOINT [\"{GUEST_PATH}\"]")));
    let default =
        stage::render_containerfile(&Variant::default(), &guest_only("/g"), &BTreeSet::new());
    assert!(!default.contains("MPLBACKEND"), "{default}");
    assert!(default.contains("io.codemode.guest-flavour=\"static\""));
    let odd: BTreeSet<PathBuf> = [PathBuf::from("/opt/lib")].into();
    assert!(
        stage::render_containerfile(&Variant::default(), &packages, &odd)
            .contains("LD_LIBRARY_PATH=/opt/lib")
    );
}

#[test]
fn a_guest_that_is_not_elf_is_refused() {
    let dest = tempfile::tempdir().unwrap();
    let err = stage(
        &Variant::default(),
        &guest_only("/etc/passwd"),
        dest.path(),
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, ImageError::BadGuest { .. }), "{err}");
    assert!(err.to_string().contains("not ELF"), "{err}");
}

#[test]
fn the_default_image_refuses_a_dynamic_guest() {
    let dest = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let err = stage(
        &Variant::default(),
        &guest_only(exe.to_str().unwrap()),
        dest.path(),
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, ImageError::WrongGuest { .. }), "{err}");
    assert!(err.to_string().contains("statically linked"), "{err}");
}

#[test]
fn the_default_image_is_the_static_guest_alone() {
    let dest = tempfile::tempdir().unwrap();
    let messages = std::cell::RefCell::new(Vec::new());
    let count = stage(
        &Variant::default(),
        &guest_only(STATIC_STAND_IN),
        dest.path(),
        &|m| messages.borrow_mut().push(m.to_string()),
    )
    .unwrap();
    let root = dest.path().join("rootfs");
    // The guest, /etc/passwd and /etc/group: nothing else of any host.
    assert_eq!(count, 3);
    assert!(!messages.borrow().is_empty());
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut names: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "etc/group",
            "etc/passwd",
            GUEST_PATH.trim_start_matches('/')
        ]
    );
    let guest = root.join(GUEST_PATH.trim_start_matches('/'));
    assert_eq!(
        fs::metadata(&guest).unwrap().permissions().mode() & 0o777,
        0o755
    );
    for dir in ["tmp", "workspace"] {
        let mode = fs::metadata(root.join(dir)).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o1777, "{dir}");
    }
    assert_eq!(
        fs::metadata(&root).unwrap().permissions().mode() & 0o777,
        0o755
    );
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
fn a_dynamic_guests_libraries_resolve_inside_the_tree() {
    let dest = tempfile::tempdir().unwrap();
    let mut rootfs = Rootfs::create(&dest.path().join("rootfs")).unwrap();
    let exe = std::env::current_exe().unwrap();
    rootfs.copy_to(&exe, Path::new(GUEST_PATH), 0o755).unwrap();
    stage::stage_libraries(&mut rootfs, &|_| {}).unwrap();
    let root = dest.path().join("rootfs");
    let interpreter = resolve_in(&root, Path::new("/lib64/ld-linux-x86-64.so.2"));
    assert!(interpreter.is_file(), "{}", interpreter.display());
    let libc = resolve_in(&root, Path::new("/lib/x86_64-linux-gnu/libc.so.6"));
    assert!(libc.is_file(), "{}", libc.display());
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
    // No shell and no package manager came along with the libraries.
    for forbidden in [
        "sh", "bash", "dash", "apt", "apt-get", "dpkg", "pip", "pip3",
    ] {
        assert!(
            find_named(&root, forbidden).is_empty(),
            "{forbidden} is in the image"
        );
    }
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

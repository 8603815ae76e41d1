//! Packages from wheels: what an image built with requirements carries.
//!
//! pip (the host's, `python3 -m pip`, or `CODEMODE_PIP`) downloads wheels
//! for the guest's CPython and this host's architecture and glibc, then
//! installs them straight into the staging tree at [`SITE_PACKAGES`], where
//! the guest puts them on `sys.path`. The guest itself compiles them
//! (`--compile-all`), so the bytecode is its own interpreter's and is used
//! without checking mtimes. Nothing of the host's Python packages is used,
//! and the sandbox never needs a network: everything is fetched here.

use std::path::Path;
use std::process::Command;

use super::error::ImageError;
use super::rootfs::Rootfs;

/// Where packages go in the image; the guest's `SITE_PACKAGES`.
pub const SITE_PACKAGES: &str = "/usr/lib/codemode/site-packages";
/// The oldest manylinux tag wheels are accepted for (manylinux2014).
const OLDEST_GLIBC_MINOR: u32 = 17;

/// Installs `requirements` for `guest` into `rootfs`; `scratch` holds the
/// downloads.
pub(crate) fn stage(
    rootfs: &mut Rootfs,
    guest: &Path,
    requirements: &str,
    source: &str,
    scratch: &Path,
    progress: &dyn Fn(&str),
) -> Result<(), ImageError> {
    let series = python_series(guest)?;
    let tags = wheel_tags(&series, glibc_minor()?);
    let file = scratch.join("requirements.txt");
    std::fs::write(&file, requirements).map_err(ImageError::io("write", file.clone()))?;
    let wheels = scratch.join("wheels");
    progress(&format!(
        "packages: downloading wheels for CPython {series} from {source}"
    ));
    let mut download = pip();
    download
        .args([
            "download",
            "--disable-pip-version-check",
            "--quiet",
            "--dest",
        ])
        .arg(&wheels)
        .args(&tags)
        .arg("--requirement")
        .arg(&file);
    run(download, "pip download")?;
    let site = rootfs.dest(Path::new(SITE_PACKAGES));
    progress(&format!("packages: installing them into {SITE_PACKAGES}"));
    // Exactly the wheels pip download resolved, without a second resolution
    // against whatever this pip's own interpreter has installed.
    let mut downloaded: Vec<_> = std::fs::read_dir(&wheels)
        .map_err(ImageError::io("list", wheels.clone()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    downloaded.sort();
    let mut install = pip();
    install
        .args([
            "install",
            "--disable-pip-version-check",
            "--quiet",
            "--no-index",
            "--no-compile",
        ])
        .arg("--no-deps")
        // The download chose wheels for the guest's Python; this pip's own
        // interpreter may be another version.
        .arg("--ignore-requires-python")
        .arg("--target")
        .arg(&site)
        .args(&tags)
        .args(&downloaded);
    run(install, "pip install")?;
    // Console scripts name an interpreter the image does not have.
    let scripts = site.join("bin");
    if scripts.is_dir() {
        std::fs::remove_dir_all(&scripts).map_err(ImageError::io("remove", scripts))?;
    }
    progress("packages: compiling them with the guest's CPython");
    let mut compile = Command::new(guest);
    compile.arg("--compile-all").arg(&site);
    run(compile, "codemode-guest --compile-all")?;
    rootfs.adopt_tree(Path::new(SITE_PACKAGES))
}

/// `python3 -m pip`, or the command in `CODEMODE_PIP`.
fn pip() -> Command {
    let mut command = pip_command();
    command.env("PIP_ROOT_USER_ACTION", "ignore");
    command
}

fn pip_command() -> Command {
    match std::env::var_os("CODEMODE_PIP") {
        Some(pip) => Command::new(pip),
        None => {
            let mut command = Command::new("python3");
            command.args(["-m", "pip"]);
            command
        }
    }
}

/// pip's flags selecting wheels the guest can load: its CPython series and
/// every manylinux tag this host's glibc satisfies (pip does not widen a
/// `manylinux_2_N` tag to older ones itself).
pub(crate) fn wheel_tags(series: &str, glibc_minor: u32) -> Vec<String> {
    let abi = format!("cp{}", series.replace('.', ""));
    let arch = std::env::consts::ARCH;
    let mut tags = vec![
        "--only-binary=:all:".to_owned(),
        "--implementation".to_owned(),
        "cp".to_owned(),
        "--python-version".to_owned(),
        series.to_owned(),
        "--abi".to_owned(),
        abi,
        "--abi".to_owned(),
        "abi3".to_owned(),
        "--abi".to_owned(),
        "none".to_owned(),
    ];
    for minor in (OLDEST_GLIBC_MINOR..=glibc_minor.max(OLDEST_GLIBC_MINOR)).rev() {
        tags.push("--platform".to_owned());
        tags.push(format!("manylinux_2_{minor}_{arch}"));
    }
    tags.extend(["--platform".to_owned(), format!("manylinux2014_{arch}")]);
    tags
}

/// The guest's CPython series ("3.13"), from `codemode-guest --version`.
fn python_series(guest: &Path) -> Result<String, ImageError> {
    let mut command = Command::new(guest);
    command.arg("--version");
    let out = run(command, "codemode-guest --version")?;
    parse_series(&out).ok_or(ImageError::UnexpectedOutput {
        command: "codemode-guest --version".into(),
        expected: "\"codemode-guest V (CPython X.Y, ...)\"",
        output: out.chars().take(200).collect(),
    })
}

pub(crate) fn parse_series(version: &str) -> Option<String> {
    let rest = version.split("(CPython ").nth(1)?;
    let series: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (series.split('.').count() == 2 && series.split('.').all(|part| !part.is_empty()))
        .then_some(series)
}

/// This host's glibc minor version: the image carries this glibc, so wheels
/// built for it or older load.
fn glibc_minor() -> Result<u32, ImageError> {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let text = version.to_string_lossy();
    text.split('.')
        .nth(1)
        .and_then(|minor| minor.parse().ok())
        .ok_or(ImageError::UnexpectedOutput {
            command: "gnu_get_libc_version()".to_owned(),
            expected: "a glibc version like 2.36",
            output: text.into_owned(),
        })
}

fn run(mut command: Command, shown: &str) -> Result<String, ImageError> {
    let out = command.output().map_err(|source| ImageError::Spawn {
        command: shown.to_owned(),
        source,
    })?;
    if !out.status.success() {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        return Err(ImageError::CommandFailed {
            command: shown.to_owned(),
            status: out.status.to_string(),
            output: tail(&text, 30),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The last `lines` lines of `text`.
pub(crate) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_comes_from_the_guests_version_line() {
        assert_eq!(
            parse_series("codemode-guest 0.1.0 (CPython 3.13, dynamic)\n").as_deref(),
            Some("3.13")
        );
        assert_eq!(parse_series("codemode-guest 0.1.0\n"), None);
        assert_eq!(
            parse_series("codemode-guest 0.1.0 (CPython 3, static)"),
            None
        );
    }

    #[test]
    fn wheel_tags_cover_every_manylinux_up_to_this_glibc() {
        let tags = wheel_tags("3.13", 36);
        let arch = std::env::consts::ARCH;
        assert!(tags.contains(&"cp313".to_owned()));
        assert!(tags.contains(&format!("manylinux_2_36_{arch}")));
        assert!(tags.contains(&format!("manylinux_2_17_{arch}")));
        assert!(!tags.contains(&format!("manylinux_2_37_{arch}")));
        assert!(tags.contains(&format!("manylinux2014_{arch}")));
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}

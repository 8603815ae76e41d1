//! The datascience variant: numpy, pandas and matplotlib from Debian's packages.
//!
//! Debian's dependency closure of these three drags in scipy and sympy
//! (through fonttools), far more than the model's data work needs. So the
//! contents are found by use: `images/probe_datascience.py` runs a typical
//! workload on the host, and the image gets every Debian package that owns a
//! module it loaded (whole, minus test suites), the data directories it
//! names and the data files it opened. The `.so` closure follows from `ldd`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::ImageError;
use super::rootfs::Rootfs;
use super::stage::{is_optimized_bytecode, PYTHON};

/// The Debian packages the variant is made from.
pub const PACKAGES: [&str; 3] = ["python3-numpy", "python3-pandas", "python3-matplotlib"];
/// Where Debian installs Python packages.
pub(crate) const DIST_PACKAGES: &str = "/usr/lib/python3/dist-packages";
/// Data the libraries open lazily lives here (fonts, tz data, rc files).
const DATA_PREFIXES: [&str; 2] = ["/usr/share/", "/etc/"];
const PROBE: &str = include_str!("../../../images/probe_datascience.py");
/// Modules the workload loads only as optional accelerators. fontTools uses
/// lxml when present and falls back to xml.etree; lxml pulls in libxml2,
/// libxslt and ICU, about 40 MB.
const LEFT_OUT: [&str; 1] = ["lxml"];

/// What the probe reported.
#[derive(Debug, serde::Deserialize)]
struct Probe {
    modules: Vec<PathBuf>,
    opened: Vec<PathBuf>,
    data_dirs: Vec<PathBuf>,
}

/// Stages numpy, pandas, matplotlib and what they load into `rootfs`
/// (shared libraries excepted: the caller resolves those for every ELF file).
pub(crate) fn stage(
    rootfs: &mut Rootfs,
    scratch: &Path,
    progress: &dyn Fn(&str),
) -> Result<(), ImageError> {
    ensure_installed(progress)?;
    progress("datascience: running a numpy/pandas/matplotlib workload to see what it loads");
    let probe = run_probe(scratch)?;
    let dist = Path::new(DIST_PACKAGES);
    let loaded: Vec<&PathBuf> = probe
        .modules
        .iter()
        .filter(|m| m.starts_with(dist))
        .collect();
    let mut entries: BTreeSet<PathBuf> = loaded
        .iter()
        .filter_map(|m| top_level(m))
        .filter(|entry| {
            !LEFT_OUT
                .iter()
                .any(|name| entry.file_name().is_some_and(|n| n == *name))
        })
        .collect();
    let owners = owning_packages(&entries)?;
    entries.extend(package_entries(&owners)?);
    progress(&format!(
        "datascience: staging {} dist-packages entries from {} Debian packages",
        entries.len(),
        owners.len()
    ));
    // Test suites are large (pandas/tests alone is 36 MB) and never imported,
    // unless the workload did import from one.
    let skip = |path: &Path, kind: &fs::FileType| {
        let name = path.file_name().unwrap_or_default();
        (kind.is_dir() && name == "tests" && !loaded.iter().any(|m| m.starts_with(path)))
            || is_optimized_bytecode(path)
    };
    for entry in &entries {
        rootfs.stage_tree(entry, &skip)?;
    }
    let keep_all = |_: &Path, _: &fs::FileType| false;
    for dir in &probe.data_dirs {
        rootfs.stage_tree(dir, &keep_all)?;
    }
    for file in &probe.opened {
        let is_data = DATA_PREFIXES.iter().any(|prefix| file.starts_with(prefix));
        if is_data && file.is_file() {
            rootfs.stage_path(file)?;
        }
    }
    Ok(())
}

/// Installs the missing packages with apt-get when running as root.
fn ensure_installed(progress: &dyn Fn(&str)) -> Result<(), ImageError> {
    let missing = missing_packages()?;
    if missing.is_empty() {
        return Ok(());
    }
    let packages = missing.join(" ");
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Err(ImageError::PackagesMissing {
            variant: "datascience",
            packages,
        });
    }
    progress(&format!(
        "datascience: installing {packages} with apt-get (missing on this host)"
    ));
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive");
    if run(install, "apt-get install").is_err() {
        // Stale package lists are the usual cause; refresh once and retry.
        let mut update = Command::new("apt-get");
        update.arg("update");
        run(update, "apt-get update")?;
        let mut retry = Command::new("apt-get");
        retry
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive");
        run(
            retry,
            &format!("apt-get install -y --no-install-recommends {packages}"),
        )?;
    }
    Ok(())
}

/// The packages of [`PACKAGES`] dpkg does not report as installed.
pub fn missing_packages() -> Result<Vec<&'static str>, ImageError> {
    let mut query = Command::new("dpkg-query");
    query
        .args(["-W", "-f", "${Package} ${db:Status-Abbrev}\n"])
        .args(PACKAGES);
    let shown = "dpkg-query -W python3-numpy python3-pandas python3-matplotlib";
    // dpkg-query exits 1 when a package is unknown; its stdout still lists the rest.
    let output = query.output().map_err(|source| ImageError::Spawn {
        command: shown.into(),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let installed: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(_, status)| status.starts_with("ii"))
        .map(|(name, _)| name.split(':').next().unwrap_or(name))
        .collect();
    Ok(PACKAGES
        .into_iter()
        .filter(|p| !installed.contains(p))
        .collect())
}

fn run_probe(scratch: &Path) -> Result<Probe, ImageError> {
    // matplotlib writes its font cache here; the image gets its own at run time.
    let config = scratch.join("probe-mplconfig");
    fs::create_dir_all(&config).map_err(ImageError::io("create", config.clone()))?;
    let mut command = Command::new(PYTHON);
    command
        .args(["-I", "-S", "-c", PROBE])
        .current_dir(scratch)
        .env("MPLCONFIGDIR", &config)
        .env("MPLBACKEND", "Agg");
    let shown = format!("{PYTHON} -I -S images/probe_datascience.py");
    let stdout = run(command, &shown)?;
    fs::remove_dir_all(&config).map_err(ImageError::io("remove", config))?;
    serde_json::from_str(&stdout).map_err(|_| ImageError::UnexpectedOutput {
        command: shown,
        expected: "the probe's JSON report",
        output: stdout.chars().take(400).collect(),
    })
}

/// The dist-packages entry (package dir or module file) holding `module`.
fn top_level(module: &Path) -> Option<PathBuf> {
    let rest = module.strip_prefix(DIST_PACKAGES).ok()?;
    let first = rest.components().next()?;
    Some(Path::new(DIST_PACKAGES).join(first))
}

/// The Debian packages owning the given paths (unowned paths are skipped).
fn owning_packages(paths: &BTreeSet<PathBuf>) -> Result<BTreeSet<String>, ImageError> {
    let mut command = Command::new("dpkg");
    command.arg("-S").args(paths);
    // Exit status 1 only means some path belongs to no package (pip-installed).
    let output = command.output().map_err(|source| ImageError::Spawn {
        command: "dpkg -S".into(),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout
        .lines()
        .filter(|line| !line.starts_with("diversion "))
        .filter_map(|line| line.split_once(": "))
        .flat_map(|(packages, _)| packages.split(", "))
        .map(|package| package.trim().to_string())
        .collect())
}

/// The dist-packages entries the given packages install, `.pth` files excepted
/// (they run code at every interpreter start).
fn package_entries(packages: &BTreeSet<String>) -> Result<BTreeSet<PathBuf>, ImageError> {
    if packages.is_empty() {
        return Ok(BTreeSet::new());
    }
    let mut command = Command::new("dpkg");
    command.arg("-L").args(packages);
    let listing = run(command, "dpkg -L")?;
    Ok(listing
        .lines()
        .filter_map(|line| top_level(Path::new(line)))
        .filter(|entry| entry.extension().is_none_or(|ext| ext != "pth"))
        .collect())
}

/// Runs a command to completion; its stdout on success, else an error with its output.
fn run(mut command: Command, shown: &str) -> Result<String, ImageError> {
    let output = command.output().map_err(|source| ImageError::Spawn {
        command: shown.into(),
        source,
    })?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        return Err(ImageError::CommandFailed {
            command: shown.into(),
            status: output.status.to_string(),
            output: tail(&text, 40),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
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
    fn top_level_entries_are_the_first_component_under_dist_packages() {
        let module = Path::new("/usr/lib/python3/dist-packages/numpy/core/_multiarray.so");
        assert_eq!(
            top_level(module),
            Some(PathBuf::from("/usr/lib/python3/dist-packages/numpy"))
        );
        let single = Path::new("/usr/lib/python3/dist-packages/six.py");
        assert_eq!(top_level(single), Some(single.to_path_buf()));
        assert_eq!(top_level(Path::new("/usr/lib/python3.11/os.py")), None);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}

//! Shared-library closure of ELF files, as the host's dynamic loader resolves it.
//!
//! `ldd` is the loader itself in trace mode, so its answer matches what the
//! loader inside the image will look for, including the ELF interpreter.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::ImageError;

/// How many files one `ldd` call gets: fewer processes, bounded command lines.
const LDD_BATCH: usize = 64;

/// Whether `path` starts with the ELF magic. Unreadable files are not ELF.
pub(crate) fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .map(|()| magic == *b"\x7fELF")
        .unwrap_or(false)
}

/// Every shared library (and the ELF interpreter) the given ELF files load,
/// as absolute host paths the way the loader names them (often symlinks).
pub(crate) fn library_closure(elves: &[PathBuf]) -> Result<BTreeSet<PathBuf>, ImageError> {
    let mut libraries = BTreeSet::new();
    for batch in elves.chunks(LDD_BATCH) {
        let mut command = Command::new("ldd");
        command
            .args(batch)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LD_PRELOAD");
        let shown = format!("ldd {} ({} files)", batch[0].display(), batch.len());
        let output = command.output().map_err(|source| ImageError::Spawn {
            command: shown.clone(),
            source,
        })?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        // A static binary makes ldd exit 1 with "not a dynamic executable": it
        // simply has no libraries. Anything else on stderr is a real failure.
        let real_errors: Vec<&str> = stderr
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.ends_with("not a dynamic executable"))
            .collect();
        if !output.status.success() && !real_errors.is_empty() {
            return Err(ImageError::CommandFailed {
                command: shown,
                status: output.status.to_string(),
                output: real_errors.join("\n"),
            });
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        for dependency in parse_ldd(&stdout, &batch[0]) {
            match dependency {
                Dependency::Found(path) => {
                    libraries.insert(path);
                }
                Dependency::Missing { elf, library } => {
                    return Err(ImageError::MissingLibrary { elf, library });
                }
            }
        }
    }
    Ok(libraries)
}

/// One line of `ldd` output that matters.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dependency {
    /// A library or interpreter resolved to this path.
    Found(PathBuf),
    /// `elf` needs `library` and the loader found nothing.
    Missing { elf: PathBuf, library: String },
}

/// Parses `ldd` output. With one file ldd prints no `path:` header, so the
/// first file of the batch is the current one until a header says otherwise.
pub(crate) fn parse_ldd(stdout: &str, first: &Path) -> Vec<Dependency> {
    let mut current = first.to_path_buf();
    let mut found = Vec::new();
    for line in stdout.lines() {
        if !line.starts_with(char::is_whitespace) {
            if let Some(header) = line.strip_suffix(':') {
                current = PathBuf::from(header);
            }
            continue;
        }
        let entry = line.trim();
        if let Some((name, target)) = entry.split_once(" => ") {
            let target = strip_address(target);
            if target == "not found" {
                found.push(Dependency::Missing {
                    elf: current.clone(),
                    library: name.to_string(),
                });
            } else if target.starts_with('/') {
                found.push(Dependency::Found(PathBuf::from(target)));
            }
        } else {
            // "linux-vdso.so.1 (0x..)" lives in the kernel; the interpreter line
            // is the only other form without "=>" and is an absolute path.
            let target = strip_address(entry);
            if target.starts_with('/') {
                found.push(Dependency::Found(PathBuf::from(target)));
            }
        }
    }
    found
}

fn strip_address(text: &str) -> &str {
    match text.rfind(" (0x") {
        Some(at) => &text[..at],
        None => text,
    }
    .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BATCH: &str = "/usr/bin/python3.11:\n\
        \tlinux-vdso.so.1 (0x00007f2de5f4a000)\n\
        \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f2de5e59000)\n\
        \t/lib64/ld-linux-x86-64.so.2 (0x00007f2de5f4c000)\n\
        /opt/x.so:\n\
        \tlibgone.so.3 => not found\n\
        /opt/static.so:\n\
        \tstatically linked\n";

    #[test]
    fn parses_batched_output_with_headers() {
        let parsed = parse_ldd(BATCH, Path::new("/ignored"));
        assert_eq!(
            parsed,
            vec![
                Dependency::Found("/lib/x86_64-linux-gnu/libm.so.6".into()),
                Dependency::Found("/lib64/ld-linux-x86-64.so.2".into()),
                Dependency::Missing {
                    elf: "/opt/x.so".into(),
                    library: "libgone.so.3".into()
                },
            ]
        );
    }

    #[test]
    fn single_file_output_is_attributed_to_the_first_file() {
        let parsed = parse_ldd("\tlibq.so.1 => not found\n", Path::new("/a/b.so"));
        assert_eq!(
            parsed,
            vec![Dependency::Missing {
                elf: "/a/b.so".into(),
                library: "libq.so.1".into()
            }]
        );
    }

    #[test]
    fn real_ldd_finds_libc_and_the_interpreter() {
        let closure = library_closure(&["/usr/bin/python3.11".into()]).unwrap();
        let names: Vec<String> = closure
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(names.iter().any(|n| n == "libc.so.6"), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("ld-linux")), "{names:?}");
    }

    #[test]
    fn elf_magic_is_detected() {
        assert!(is_elf(Path::new("/usr/bin/python3.11")));
        assert!(!is_elf(Path::new("/etc/passwd")));
        assert!(!is_elf(Path::new("/does/not/exist")));
    }
}

//! The two flavours of the guest and telling them apart.
//!
//! One crate, two builds: the **static** guest (`crt-static`: one file with
//! CPython and its standard library inside; bubblewrap and the default
//! image run it, and it needs nothing of the host) and the **dynamic** guest
//! (glibc's loader, so it can load the C extension modules of wheels;
//! images built with packages run it).

use std::io::Read;
use std::path::Path;

/// Which build of the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Static,
    Dynamic,
}

impl Flavour {
    pub fn describe(self) -> &'static str {
        match self {
            Flavour::Static => "statically linked",
            Flavour::Dynamic => "dynamically linked",
        }
    }
}

/// The flavour of the ELF executable at `path`: dynamic when it names an
/// ELF interpreter (`PT_INTERP`). `None` when it is not a readable 64-bit
/// little-endian ELF file.
pub fn flavour_of(path: &Path) -> Option<Flavour> {
    let mut header = [0u8; 64];
    let mut file = std::fs::File::open(path).ok()?;
    file.read_exact(&mut header).ok()?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let phoff = u64::from_le_bytes(header[32..40].try_into().ok()?);
    let phentsize = u16::from_le_bytes(header[54..56].try_into().ok()?);
    let phnum = u16::from_le_bytes(header[56..58].try_into().ok()?);
    if phentsize < 4 || phnum == 0 {
        return Some(Flavour::Static);
    }
    let mut table = vec![0u8; usize::from(phentsize) * usize::from(phnum)];
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    const PT_INTERP: u32 = 3;
    let interp = table
        .chunks_exact(usize::from(phentsize))
        .any(|entry| entry[..4] == PT_INTERP.to_le_bytes());
    Some(if interp {
        Flavour::Dynamic
    } else {
        Flavour::Static
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_executable_names_its_interpreter() {
        // The test binary itself is linked the default (dynamic) way.
        let exe = std::env::current_exe().unwrap();
        assert_eq!(flavour_of(&exe), Some(Flavour::Dynamic));
    }

    #[test]
    fn non_elf_files_have_no_flavour() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script");
        std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(flavour_of(&file), None);
        assert_eq!(flavour_of(&dir.path().join("missing")), None);
        std::fs::write(&file, b"\x7fELF\x02\x01").unwrap();
        assert_eq!(flavour_of(&file), None);
    }
}

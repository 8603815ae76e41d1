//! Finding the guest binary, in its two flavours
//! ([`codemode_images::flavour`]). Installed side by side with
//! `codemode` they are `codemode-guest-static` (or a static
//! `codemode-guest`) and `codemode-guest` (or `codemode-guest-dynamic`):
//! cargo writes its own build of the crate to `codemode-guest`, so the
//! static build, made with `--target`, is copied beside it under the
//! other name (scripts/lib.sh does).

use std::path::PathBuf;

pub use codemode_images::flavour::{flavour_of, Flavour};

/// File names of `flavour` next to `codemode`, in the order they are tried.
fn names(flavour: Flavour) -> [&'static str; 2] {
    match flavour {
        Flavour::Static => ["codemode-guest-static", "codemode-guest"],
        Flavour::Dynamic => ["codemode-guest-dynamic", "codemode-guest"],
    }
}

/// The guest of `flavour` next to this executable, if one is there.
pub fn beside_codemode(flavour: Flavour) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    names(flavour)
        .into_iter()
        .map(|name| dir.join(name))
        .find(|candidate| flavour_of(candidate) == Some(flavour))
}

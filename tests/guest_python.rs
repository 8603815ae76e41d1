//! The sandbox's Python: one static guest file with CPython and its
//! standard library inside, nothing of the host in a bubblewrap sandbox,
//! and images with packages installed from wheels for the dynamic guest.

use std::process::Command;

use serde_json::json;

use crate::common::{codemode_bin, target_dir, Fixture};
use crate::per_runtime;

#[test]
fn the_guest_is_one_statically_linked_file() {
    let guest = target_dir().join("codemode-guest-static");
    assert!(
        guest.is_file(),
        "{} missing: scripts/lib.sh build_release makes it",
        guest.display()
    );
    let file = Command::new("file").arg(&guest).output().expect("file");
    let file = String::from_utf8_lossy(&file.stdout);
    // static-pie: statically linked and still randomised by ASLR.
    assert!(
        file.contains("static-pie linked") || file.contains("statically linked"),
        "{file}"
    );
    let ldd = Command::new("ldd").arg(&guest).output().expect("ldd");
    let ldd = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    assert!(
        ldd.contains("statically linked") || ldd.contains("not a dynamic executable"),
        "{ldd}"
    );
    assert!(!ldd.contains("=>"), "no shared library: {ldd}");
    let version = Command::new(&guest)
        .arg("--version")
        .output()
        .expect("guest --version");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!(
            "codemode-guest {} (CPython 3.13, static)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// The interpreter is current and the stdlib's extension modules are
/// compiled in; what a static guest cannot do fails with a message that
/// says why and what to use instead.
async fn the_default_sandbox_has_current_python_and_its_extension_modules(runtime: &str) {
    let fx = Fixture::new();
    let c = fx.client(runtime, &[]).await;
    let code = r#"
import sys
print(sys.version_info >= (3, 13))
import asyncio, json, decimal, ctypes, sqlite3, zlib, bz2, lzma, hashlib, ssl, uuid, zoneinfo, csv, pickle, unicodedata, select, mmap, socket, array, math
builtin = set(sys.builtin_module_names)
needed = ["_asyncio", "_json", "_decimal", "_ctypes", "_sqlite3", "zlib", "_bz2", "_lzma", "_hashlib", "_ssl", "_uuid", "_zoneinfo", "_socket", "unicodedata", "pyexpat"]
print("not built in:", [m for m in needed if m not in builtin])
print(sqlite3.connect(":memory:").execute("select 1 + 1").fetchone()[0], hashlib.sha256(b"").hexdigest()[:8], ssl.OPENSSL_VERSION.split()[0])
print(decimal.Decimal("1.10") + decimal.Decimal("2.20"), lzma.decompress(lzma.compress(b"x")), bz2.decompress(bz2.compress(b"y")))
import os
os.makedirs("/tmp/ext", exist_ok=True)
open("/tmp/ext/fake.cpython-313-x86_64-linux-gnu.so", "wb").write(b"\x7fELF")
sys.path.insert(0, "/tmp/ext")
try:
    import fake
except ImportError as e:
    print("extension:", e)
try:
    ctypes.CDLL("libm.so.6")
except OSError as e:
    print("ctypes:", e)
print(ctypes.sizeof(ctypes.c_long))
from datetime import datetime
from zoneinfo import ZoneInfo, available_timezones
print(datetime(2026, 7, 1, tzinfo=ZoneInfo("Europe/Paris")).utcoffset(), "America/New_York" in available_timezones())
"#;
    let r = c.run(code).await;
    assert_eq!(r.status(), "success", "{r:?}");
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "True", "{out}");
    assert_eq!(lines[1], "not built in: []", "{out}");
    assert_eq!(lines[2], "2 e3b0c442 OpenSSL", "{out}");
    assert_eq!(lines[3], "3.30 b'x' b'y'", "{out}");
    assert!(
        lines[4].starts_with("extension: codemode's default sandbox runs a fully static Python, which cannot load the C extension module 'fake'"),
        "{out}"
    );
    assert!(
        lines[4].contains("codemode image build --requirements"),
        "{out}"
    );
    assert!(
        lines[5].starts_with("ctypes: codemode's default sandbox runs a fully static Python, which cannot load the shared library 'libm.so.6'"),
        "{out}"
    );
    assert_eq!(lines[6], "8", "{out}");
    // The time-zone database travels in the guest: no sandbox has one.
    assert_eq!(lines[7], "2:00:00 True", "{out}");
    c.close().await;
}
per_runtime!(the_default_sandbox_has_current_python_and_its_extension_modules);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_datascience_variant_runs_numpy_pandas_scipy_and_shows_a_figure() {
    let fx = Fixture::new();
    let c = fx
        .client("podman", &["--variant", "datascience", "--memory", "1g"])
        .await;
    let code = r#"
import sys
import numpy as np, pandas as pd, scipy.stats
import matplotlib.pyplot as plt
print(sys.version_info[:2] >= (3, 13), np.__version__.split(".")[0] >= "2")
df = pd.DataFrame({"x": np.arange(5), "y": np.arange(5) ** 2})
print(df["y"].sum(), round(float(scipy.stats.norm.cdf(0)), 2))
fig, ax = plt.subplots()
ax.plot(df["x"], df["y"])
runtime.show(fig)
"#;
    let r = c.call(json!({"code": code, "timeout": 120})).await;
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "True True\n30 0.5\n");
    assert_eq!(r.structured["images"], 1, "{r:?}");
    // A notebook's display: a DataFrame as its table, a figure as an image.
    let r = c.run("df").await;
    assert_eq!(r.status(), "success", "{r:?}");
    let table = r.structured["display"].as_str().unwrap_or_default();
    assert!(
        table.starts_with("   x   y\n0  0   0\n") && table.ends_with("[5 rows x 2 columns]"),
        "{r:?}"
    );
    assert!(r.structured.get("result").is_none(), "{r:?}");
    let r = c.run("fig").await;
    assert_eq!(r.structured["images"], 1, "{r:?}");
    assert!(r.structured.get("display").is_none(), "{r:?}");
    c.close().await;
}

/// A user's own image: `--requirements FILE --variant NAME` installs the
/// packages from wheels (here markupsafe, which has a C extension the
/// dynamic guest loads), and `--variant NAME` runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_built_from_requirements_has_its_packages() {
    let fx = Fixture::new();
    let requirements = fx.dir.path().join("requirements.txt");
    std::fs::write(&requirements, "markupsafe==3.0.4\n").unwrap();
    let variant = format!("test-req-{}", std::process::id());
    let build = Command::new(codemode_bin())
        .args([
            "--runtime",
            "podman",
            "image",
            "build",
            "--variant",
            &variant,
            "--requirements",
        ])
        .arg(&requirements)
        .output()
        .expect("codemode image build");
    assert!(
        build.status.success(),
        "{}{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let tag = String::from_utf8_lossy(
        &Command::new(codemode_bin())
            .args(["image", "tag", "--variant", &variant])
            .output()
            .expect("codemode image tag")
            .stdout,
    )
    .trim()
    .to_owned();
    let c = fx.client("podman", &["--variant", &variant]).await;
    let r = c
        .run("import markupsafe, markupsafe._speedups\nprint(markupsafe.escape('<b>'), markupsafe.__file__.startswith('/usr/lib/codemode/site-packages/'))")
        .await;
    c.close().await;
    let _ = Command::new("podman")
        .args(["rmi", "--force", &tag])
        .output();
    assert_eq!(r.status(), "success", "{r:?}");
    assert_eq!(r.stdout(), "&lt;b&gt; True\n");
}

/// Runs codemode with `args`, expects it to fail, returns its stderr.
fn codemode_fails(args: &[&str]) -> String {
    let out = Command::new(codemode_bin())
        .args(args)
        .output()
        .expect("run codemode");
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_variant_needs_an_engine_and_an_unknown_one_needs_requirements() {
    let err = codemode_fails(&[
        "--runtime",
        "podman",
        "image",
        "build",
        "--variant",
        "nosuch",
    ]);
    assert!(
        err.contains("give its packages with --requirements FILE"),
        "{err}"
    );
    let err = codemode_fails(&[
        "--runtime",
        "bubblewrap",
        "--variant",
        "datascience",
        "run",
        "print(1)",
    ]);
    assert!(err.contains("runs in podman or docker"), "{err}");
}

//! `codemode doctor`: checks each thing codemode depends on and says how to
//! fix what fails.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;
use std::sync::Arc;

use crate::bridge::{Bridge, RunRequest, RunStatus};
use crate::settings::Settings;

fn report(ok: bool, what: &str, detail: &str) {
    let mark = if ok { "ok  " } else { "FAIL" };
    println!("[{mark}] {what}: {detail}");
}

pub async fn run(settings: &Settings) -> ExitCode {
    let mut healthy = true;
    let choice = match crate::runtime::select_backend(settings) {
        Ok(c) => {
            report(
                true,
                "runtime",
                &format!("{} ({})", c.backend.name(), c.reason),
            );
            c
        }
        Err(e) => {
            report(
                false,
                "runtime",
                &format!("{e}. Fix: apt-get install podman runc bubblewrap, or set --runtime"),
            );
            return ExitCode::from(1);
        }
    };
    if let crate::runtime::Backend::Oci(oci) = &choice.backend {
        let exists = crate::image::image_exists(&oci.binary, &oci.image).await;
        report(
            exists,
            "image",
            &if exists {
                oci.image.clone()
            } else {
                format!(
                    "{} is missing. Fix: `codemode image build` (or run with --runtime bubblewrap)",
                    oci.image
                )
            },
        );
        healthy &= exists;
        if rootless_on_cgroup_v1() {
            healthy = false;
            report(
                false,
                "limits",
                "rootless podman on a cgroup v1 host ignores --memory and --pids-limit. \
                 Fix: boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1), run codemode as root, \
                 or use --runtime bubblewrap (rlimits apply)",
            );
        }
        if let Some(rt) = &oci.oci_runtime {
            report(
                true,
                "oci runtime",
                &format!("{rt} (override with --oci-runtime)"),
            );
        }
    }
    let mut s = settings.clone();
    s.warm_pool = 0;
    let bridge: Arc<Bridge> = match Bridge::new(s).await {
        Ok(b) => b,
        Err(e) => {
            report(false, "bridge", &e.to_string());
            return ExitCode::from(1);
        }
    };
    for p in &bridge.discovery.problems {
        report(false, "config", &p.to_string());
    }
    let req = RunRequest {
        code: "import sys; print(sys.version.split()[0])".into(),
        servers: vec![],
        timeout: Some(30),
        session: "doctor".into(),
    };
    let out = bridge
        .run(req, &mut crate::sandbox::NoListener, Default::default())
        .await;
    let ok = out.status == RunStatus::Success;
    report(
        ok,
        "sandbox",
        &if ok {
            format!(
                "guest answered, Python {} in {:.0} ms",
                out.stdout.trim(),
                out.duration.as_secs_f64() * 1000.0
            )
        } else {
            format!(
                "{}. Fix: see the log above; for a stale image run `codemode image build`",
                out.error.clone().unwrap_or_default()
            )
        },
    );
    healthy &= ok;
    for name in bridge.pool.configs().keys() {
        match bridge.pool.tools(name).await {
            Ok(t) => report(
                true,
                &format!("server {name}"),
                &format!("{} tools", t.len()),
            ),
            Err(e) => {
                healthy = false;
                report(
                    false,
                    &format!("server {name}"),
                    &format!("{e}. Fix: run its command by hand to see why it fails"),
                );
            }
        }
    }
    // Not started, not a failure: approving a project file is the user's call.
    for s in &bridge.discovery.untrusted {
        let state = if s.changed {
            "changed since it was approved"
        } else {
            "not approved"
        };
        let line = format!(
            "[skip] server {}: project file {} is {state}, so it is not started. \
             Approve it with `{}`",
            s.name,
            s.source.display(),
            settings.trust_command(&s.source)
        );
        println!("{}", super::human::printable(&line));
    }
    bridge.shutdown().await;
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Rootless container engines cannot set cgroup limits on cgroup v1.
fn rootless_on_cgroup_v1() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    !root && !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

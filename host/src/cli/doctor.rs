//! `codemode doctor`: checks each thing codemode depends on and says how to
//! fix what fails.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;
use std::sync::Arc;

use crate::bridge::{Bridge, RunRequest, RunStatus};
use crate::settings::Settings;

/// One line; its text can hold a server's stderr or a config's names, so
/// it goes to the terminal escaped.
fn report(ok: bool, what: &str, detail: &str) {
    let mark = if ok { "ok  " } else { "FAIL" };
    let line = format!("[{mark}] {what}: {detail}");
    println!("{}", super::human::printable(&line));
}

pub async fn run(settings: &Settings) -> ExitCode {
    let mut healthy = true;
    let choice = match crate::runtime::select_backend(settings).await {
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
        let exists = codemode_images::image_exists(
            &crate::runtime::client::ImageEngine(oci.binary.clone()),
            &oci.image,
        )
        .await;
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
        if let Some(rt) = &oci.oci_runtime {
            report(
                true,
                "oci runtime",
                &format!("{rt} (override with --oci-runtime)"),
            );
        }
    }
    healthy &= report_limits(settings, &choice.backend);
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

/// One line per limit, as this host enforces it; false when sessions
/// are not isolated from one another in some resource.
fn report_limits(settings: &Settings, backend: &crate::runtime::Backend) -> bool {
    use crate::runtime::enforcement::{report as enforced, Level};
    let limits = match crate::bridge::sandbox_limits(settings) {
        Ok(l) => l,
        Err(e) => {
            report(false, "limits", &e.to_string());
            return false;
        }
    };
    let mut isolated = true;
    for l in enforced(backend, &limits) {
        let mark = match l.level {
            Level::Enforced => "ok  ",
            Level::Partial => "warn",
            Level::Missing => {
                isolated = false;
                "FAIL"
            }
        };
        println!("[{mark}] limit {}: {}", l.what, l.detail);
    }
    isolated
}

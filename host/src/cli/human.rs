//! Output for people at a terminal: the one place (with `doctor`) that
//! prints to stdout outside the MCP wire.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::borrow::Cow;
use std::io::Write;
use std::process::ExitCode;

use codemode_proto::v1::Stream;

use super::ToolsAction;
use crate::bridge::{RunOutcome, RunStatus};
use crate::sandbox::OutputListener;
use crate::settings::Settings;

pub fn fail(message: &str) -> ExitCode {
    eprintln!("codemode: {message}");
    ExitCode::from(2)
}

/// A path for the terminal, see [`printable`].
pub fn printable_path(path: &std::path::Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

/// `text` with control characters escaped: names and commands from a
/// project file are chosen by whoever wrote it, and must not drive the
/// terminal they are printed on.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// Streams a cell's output to this process's stdout/stderr as it arrives.
pub struct Echo;

impl OutputListener for Echo {
    fn chunk(&mut self, stream: Stream, data: &[u8]) {
        if stream == Stream::Stderr {
            let _ = std::io::stderr().write_all(data);
        } else {
            let mut out = std::io::stdout();
            let _ = out.write_all(data);
            let _ = out.flush();
        }
    }
}

pub fn finish_run(out: &RunOutcome) -> ExitCode {
    for note in &out.notes {
        eprintln!("codemode: {note}");
    }
    for image in &out.rich {
        eprintln!(
            "codemode: the cell returned an image ({}, {} bytes)",
            image.mime_type,
            image.data.len()
        );
    }
    if let Some(e) = &out.error {
        eprintln!("{}", e.trim_end());
    }
    match out.status {
        RunStatus::Success => ExitCode::SUCCESS,
        RunStatus::Error => ExitCode::from(1),
        RunStatus::ValidationError => ExitCode::from(2),
        RunStatus::Timeout => {
            eprintln!("codemode: status timeout");
            ExitCode::from(124)
        }
        RunStatus::Cancelled => {
            eprintln!("codemode: status cancelled");
            ExitCode::from(130)
        }
    }
}

pub async fn servers(settings: &Settings, with_tools: bool) -> ExitCode {
    let ctx = settings.discovery_context();
    let found = crate::config::discover(&ctx);
    for p in &found.problems {
        eprintln!("warning: {p}");
    }
    if found.servers.is_empty() && found.untrusted.is_empty() {
        println!("no MCP servers found; add one with --config FILE or see `codemode --help`");
        return ExitCode::SUCCESS;
    }
    let pool = crate::proxy::ServerPool::new(
        found.servers.clone(),
        std::time::Duration::from_secs(settings.call_timeout.max(1)),
    );
    let mut failed = false;
    for (name, cfg) in &found.servers {
        let mut line = format!(
            "{name}\t{}\t{} ({})",
            pool.alias(name),
            cfg.source.display(),
            cfg.source_name
        );
        if with_tools {
            match pool.tools(name).await {
                Ok(tools) => line.push_str(&format!("\t{} tools", tools.len())),
                Err(e) => {
                    failed = true;
                    line.push_str(&format!("\tERROR: {e}"));
                }
            }
        }
        if !cfg.description.is_empty() {
            line.push_str(&format!("\t{}", cfg.description));
        }
        println!("{line}");
    }
    // Listed, never started: approving the file is the user's decision.
    for s in &found.untrusted {
        let state = if s.changed {
            "changed since approved"
        } else {
            "not approved"
        };
        let mut line = format!(
            "{}\t-\t{} ({})\tUNTRUSTED ({state}; not started): approve with `{}`",
            printable(&s.name),
            printable_path(&s.source),
            s.source_name,
            settings.trust_command(&s.source)
        );
        if !s.description.is_empty() {
            line.push_str(&format!("\t{}", printable(&s.description)));
        }
        println!("{line}");
    }
    for s in &found.skipped {
        eprintln!("skipped: {}", printable(&s.to_string()));
    }
    pool.shutdown_all().await;
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn print_line(text: &str) -> ExitCode {
    println!("{text}");
    ExitCode::SUCCESS
}

pub async fn image_build(
    settings: &Settings,
    variant: crate::image::Variant,
    tag: Option<String>,
    force: bool,
) -> ExitCode {
    let engine = match crate::runtime::select_backend(settings) {
        Ok(choice) => match choice.backend {
            crate::runtime::Backend::Oci(oci) => oci.binary,
            crate::runtime::Backend::Bubblewrap(_) => return fail(
                "building an image needs podman or docker; the bubblewrap runtime needs no image",
            ),
        },
        Err(_) => match crate::runtime::which_engine() {
            Some(p) => p,
            None => return fail("building an image needs podman or docker on PATH"),
        },
    };
    let Some(guest) = crate::runtime::guest_path(settings).filter(|p| p.exists()) else {
        return fail("codemode-guest not found next to codemode; build it (`cargo build --release -p codemode-guest`) or pass --guest PATH");
    };
    let opts = crate::image::BuildOptions {
        variant,
        guest,
        engine,
        tag,
        force,
    };
    let progress = |msg: &str| eprintln!("  {msg}");
    match crate::image::build(&opts, &progress).await {
        Ok(built) if built.up_to_date => {
            println!(
                "{} is up to date ({:.1} MB)",
                built.tag,
                built.size_bytes as f64 / 1e6
            );
            ExitCode::SUCCESS
        }
        Ok(built) => {
            println!(
                "built {} ({:.1} MB, {} files)",
                built.tag,
                built.size_bytes as f64 / 1e6,
                built.staged_files
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e.to_string()),
    }
}

pub fn tools(settings: &Settings, action: ToolsAction) -> ExitCode {
    let dir = settings.tools_dir();
    match action {
        ToolsAction::List => {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                println!("no saved tools ({} does not exist yet)", dir.display());
                return ExitCode::SUCCESS;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".py"))
                        .map(str::to_string)
                })
                .collect();
            names.sort();
            if names.is_empty() {
                println!("no saved tools in {}", dir.display());
            }
            for n in names {
                println!("{n}\t{}", dir.join(format!("{n}.py")).display());
            }
            ExitCode::SUCCESS
        }
        ToolsAction::Remove { name } => {
            if name.contains('/') || name.starts_with('.') {
                return fail(&format!("{name:?} is not a tool name"));
            }
            let path = dir.join(format!("{name}.py"));
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    println!("removed {}", path.display());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&format!("cannot remove {}: {e}", path.display())),
            }
        }
    }
}

//! Output for people at a terminal: the one place (with `doctor`) that
//! prints to stdout outside the MCP wire.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::process::ExitCode;

use codemode_proto::v1::Stream;

use super::ToolsAction;
use crate::bridge::{RunOutcome, RunStatus};
use crate::sandbox::OutputListener;
use crate::saved::{check_name, SavedError, Store};
use crate::settings::Settings;
use crate::terminal::sanitize_for_terminal;

pub fn fail(message: &str) -> ExitCode {
    eprintln!("codemode: {message}");
    ExitCode::from(2)
}

/// A path for the terminal, see [`printable`].
pub fn printable_path(path: &std::path::Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

/// Text chosen by whoever wrote a project file, made inert for a terminal.
pub use crate::terminal::sanitize_for_terminal as printable;

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
        eprintln!("warning: {}", printable(&p.to_string()));
    }
    if found.servers.is_empty() && found.untrusted.is_empty() {
        println!("no MCP servers found; add one with --config FILE or see `codemode --help`");
        return ExitCode::SUCCESS;
    }
    // Listing tools fills the tool index that search in cells ranks.
    let pool = crate::proxy::ServerPool::new(
        found.servers.clone(),
        std::time::Duration::from_secs(settings.call_timeout.max(1)),
        std::sync::Arc::new(crate::index::ToolIndex::open(&settings.state_dir())),
    );
    let mut failed = false;
    for (name, cfg) in &found.servers {
        // Names, descriptions and a server's own error text come from
        // config files and programs: each field goes out escaped, between
        // the tabs that separate them.
        let mut line = format!(
            "{}\t{}\t{} ({})",
            printable(name),
            printable(&pool.alias(name)),
            printable_path(&cfg.source),
            printable(&cfg.source_name)
        );
        if with_tools {
            match pool.tools(name).await {
                Ok(tools) => line.push_str(&format!("\t{} tools", tools.len())),
                Err(e) => {
                    failed = true;
                    line.push_str(&format!("\tERROR: {}", printable(&e.to_string())));
                }
            }
        }
        if !cfg.description.is_empty() {
            line.push_str(&format!("\t{}", printable(&cfg.description)));
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
    variant: codemode_images::Variant,
    requirements: Option<std::path::PathBuf>,
    tag: Option<String>,
    force: bool,
) -> ExitCode {
    use crate::runtime::guest::{beside_codemode, Flavour};
    use codemode_images::Contents;
    let engine = match crate::runtime::select_backend(settings).await {
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
    let requirements = match (requirements, variant.built_in_requirements()) {
        (Some(file), _) => match std::fs::read_to_string(&file) {
            Ok(text) => Some((text, file.display().to_string())),
            Err(e) => return fail(&format!("cannot read the requirements file {}: {e}", file.display())),
        },
        (None, Some(text)) => Some((text.to_owned(), format!("the {variant} variant's pinned list"))),
        (None, None) if variant.is_default() => None,
        (None, None) => {
            return fail(&format!(
                "variant {variant:?} is not built in (`default`, `datascience`): give its packages with --requirements FILE"
            ))
        }
    };
    let contents = match requirements {
        None => {
            let Some(guest) = crate::runtime::guest_path(settings).filter(|p| p.exists()) else {
                return fail("the static codemode-guest was not found next to codemode (as codemode-guest-static or a static codemode-guest); build it (scripts/lib.sh build_release, see the README) or pass --guest PATH");
            };
            Contents::GuestOnly { guest }
        }
        Some((requirements, source)) => {
            let Some(guest) = beside_codemode(Flavour::Dynamic) else {
                return fail("the dynamically linked codemode-guest was not found next to codemode (as codemode-guest or codemode-guest-dynamic); build it with `cargo build --release -p codemode-guest`");
            };
            Contents::Packages {
                guest,
                requirements,
                source,
            }
        }
    };
    let opts = codemode_images::BuildOptions {
        variant,
        contents,
        tag,
        force,
    };
    let engine = crate::runtime::client::ImageEngine(engine);
    let progress = |msg: &str| eprintln!("  {msg}");
    match codemode_images::build(&opts, &engine, &progress).await {
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

/// `codemode tools`: everything printed here was chosen inside a sandbox
/// (names, sources), so it goes through `sanitize_for_terminal`.
pub fn tools(settings: &Settings, action: ToolsAction) -> ExitCode {
    let store = Store::new(settings.tools_dir());
    let failed = |e: SavedError| fail(&sanitize_for_terminal(&e.to_string()));
    match action {
        ToolsAction::List => {
            let scan = match store.scan() {
                Ok(scan) => scan,
                Err(e) => return failed(e),
            };
            let dir = store.dir().display().to_string();
            for (name, why) in &scan.ignored {
                eprintln!(
                    "codemode: ignoring {}/{}: {why}",
                    sanitize_for_terminal(&dir),
                    sanitize_for_terminal(&name.to_string_lossy())
                );
            }
            if scan.entries.is_empty() {
                println!("no saved tools in {}", sanitize_for_terminal(&dir));
            }
            for entry in &scan.entries {
                println!(
                    "{}\t{} bytes",
                    sanitize_for_terminal(&entry.name),
                    entry.bytes
                );
            }
            ExitCode::SUCCESS
        }
        ToolsAction::Show { name } => {
            let source = match check_name(&name).and_then(|()| store.read(&name)) {
                Ok(source) => source,
                Err(e) => return failed(e),
            };
            // Split on LF only: a CR before it must show, not vanish.
            let body = source.strip_suffix('\n').unwrap_or(&source);
            for line in body.split('\n') {
                println!("{}", sanitize_for_terminal(line));
            }
            ExitCode::SUCCESS
        }
        ToolsAction::Remove { name } => match store.remove(&name) {
            Ok(()) => {
                println!("removed {name}");
                ExitCode::SUCCESS
            }
            Err(e) => failed(e),
        },
    }
}

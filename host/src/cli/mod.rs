//! Command-line interface: `serve` for MCP clients, and `run`, `servers`,
//! `trust`, `doctor`, `image`, `tools` for people. Human output goes to stdout only
//! in these commands; `serve` keeps stdout for the MCP wire.

mod doctor;
mod human;
mod trust;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rmcp::ServiceExt;

use crate::settings::Settings;

#[derive(Debug, Parser)]
#[command(
    name = "codemode",
    version,
    about = "An MCP server whose one tool, run_python, runs Python in a sandbox where your MCP servers are modules."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub settings: Settings,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (what MCP clients launch; the default).
    Serve,
    /// Run Python once and print its output; exit status follows the cell's status.
    Run {
        /// Servers to load, comma-separated.
        #[arg(long, value_delimiter = ',')]
        servers: Vec<String>,
        /// Timeout in seconds.
        #[arg(long = "cell-timeout")]
        cell_timeout: Option<u64>,
        /// Python code, or - to read it from stdin.
        code: String,
    },
    /// List discovered MCP servers and where they were found.
    Servers {
        /// Start each server and count its tools.
        #[arg(long)]
        tools: bool,
    },
    /// Approve project config files (./.mcp.json, ./mcp-servers/*.json, ...)
    /// so their servers may start; with no FILE, list this directory's
    /// project configs and whether each is approved.
    Trust {
        /// Remove the approval of the FILEs instead.
        #[arg(long)]
        revoke: bool,
        /// Config files to approve (their current bytes; a change needs a new approval).
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Check the runtime, the image and every server, with a fix for each failure.
    Doctor,
    /// Build sandbox images.
    Image {
        #[command(subcommand)]
        action: ImageAction,
    },
    /// Saved tools (functions kept with save_tool).
    Tools {
        #[command(subcommand)]
        action: Option<ToolsAction>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ImageAction {
    /// Build a sandbox image offline: the static guest alone (default), or
    /// the dynamic guest with packages installed from wheels.
    Build {
        /// `default`, `datascience` (numpy, pandas, matplotlib, scipy), or a
        /// name for an image built with --requirements; `--variant NAME`
        /// then selects it at run time.
        #[arg(long, default_value = "default")]
        variant: codemode_images::Variant,
        /// A pip requirements file whose packages the image carries
        /// (downloaded here as wheels; the sandbox has no network).
        #[arg(long, value_name = "FILE")]
        requirements: Option<std::path::PathBuf>,
        /// Image tag (default: the variant's tag, `codemode image tag`).
        #[arg(long)]
        tag: Option<String>,
        /// Rebuild even if the image already holds this guest.
        #[arg(long)]
        force: bool,
    },
    /// Print the tag of the image this build of codemode runs.
    Tag {
        #[arg(long, default_value = "default")]
        variant: codemode_images::Variant,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsAction {
    /// List saved tools (name and size).
    List,
    /// Print a saved tool's source, control characters escaped.
    Show { name: String },
    /// Remove a saved tool (frees its name for any session).
    Remove { name: String },
}

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .or_else(|_| tracing_subscriber::EnvFilter::try_new("warn"))
        .unwrap_or_default();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.settings.log_level);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return human::fail(&format!("cannot start the async runtime: {e}")),
    };
    let code = rt.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Serve => serve(cli.settings).await,
            Command::Run {
                servers,
                cell_timeout,
                code,
            } => run_once(cli.settings, servers, cell_timeout, code).await,
            Command::Servers { tools } => human::servers(&cli.settings, tools).await,
            Command::Trust { revoke, files } => trust::run(&cli.settings, &files, revoke),
            Command::Doctor => doctor::run(&cli.settings).await,
            Command::Image {
                action:
                    ImageAction::Build {
                        variant,
                        requirements,
                        tag,
                        force,
                    },
            } => human::image_build(&cli.settings, variant, requirements, tag, force).await,
            Command::Image {
                action: ImageAction::Tag { variant },
            } => human::print_line(&codemode_images::image_tag(&variant)),
            Command::Tools { action } => {
                human::tools(&cli.settings, action.unwrap_or(ToolsAction::List))
            }
        }
    });
    // tokio's stdin reader sits in a blocking read that never returns once
    // the client is gone; without a bound, dropping the runtime waits on it.
    rt.shutdown_timeout(SHUTDOWN_WAIT);
    code
}

/// How long exiting waits for blocking work (a stdin read) to finish.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

async fn serve(settings: Settings) -> ExitCode {
    let bridge = match crate::bridge::Bridge::new(settings).await {
        Ok(b) => b,
        Err(e) => return human::fail(&e.to_string()),
    };
    let server = crate::server::CodemodeServer::new(bridge.clone());
    let running = match server.serve(rmcp::transport::stdio()).await {
        Ok(r) => r,
        Err(e) => {
            bridge.shutdown().await;
            return human::fail(&format!("MCP initialization failed: {e}"));
        }
    };
    let mut sigterm =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term = async {
        match sigterm.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        r = running.waiting() => { if let Err(e) = r { tracing::warn!("MCP service ended with an error: {e}"); } }
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; shutting down"),
        _ = term => tracing::info!("terminated; shutting down"),
    }
    bridge.shutdown().await;
    ExitCode::SUCCESS
}

async fn run_once(
    settings: Settings,
    servers: Vec<String>,
    timeout: Option<u64>,
    code: String,
) -> ExitCode {
    let code = if code == "-" {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            return human::fail(&format!("cannot read code from stdin: {e}"));
        }
        s
    } else {
        code
    };
    let mut settings = settings;
    // A one-shot run needs no spare sandbox.
    settings.warm_pool = 0;
    let bridge = match crate::bridge::Bridge::new(settings).await {
        Ok(b) => b,
        Err(e) => return human::fail(&e.to_string()),
    };
    let req = crate::bridge::RunRequest {
        code,
        servers,
        timeout,
        session: "cli".into(),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c2.cancel();
        }
    });
    let out = bridge.run(req, &mut human::Echo, cancel).await;
    bridge.shutdown().await;
    human::finish_run(&out)
}

/// Where saved tools are kept (for `codemode tools`).
pub fn tools_dir(settings: &Settings) -> PathBuf {
    settings.tools_dir()
}

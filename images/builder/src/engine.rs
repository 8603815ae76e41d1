//! Running the container engine (podman or docker) on a staged context.
//! How an engine command is started (its environment, its process group,
//! the bound on a short one) is the caller's: [`EngineRunner`].

use std::collections::VecDeque;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::error::ImageError;
use super::stage::stage;
use super::{image_tag, BuildOptions, BuiltImage, Contents};

/// The bound on a short engine command (inspect, rm).
const SHORT: Duration = Duration::from_secs(30);

/// Starts the container engine's commands the way the caller runs every
/// child process (codemode: an allowlisted environment, its own process
/// group, a parent-death signal, a bound that kills the group).
pub trait EngineRunner: Send + Sync {
    /// The engine binary (`podman` or `docker`), for messages.
    fn binary(&self) -> &Path;
    /// A command running the engine, environment and working directory set.
    fn command(&self) -> Command;
    /// Runs a short `command` to completion within `limit`.
    fn output<'a>(
        &'a self,
        command: Command,
        limit: Duration,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Output>> + Send + 'a>>;
}

/// Engine output lines kept for the error message when a build fails.
const KEPT_LINES: usize = 40;

/// Stages `opts.variant` into a fresh temporary directory, builds it with
/// `opts.engine` and reports the tag, size and file count. Staging runs on
/// the calling thread (seconds of file copying); the engine runs as a child.
pub async fn build(
    opts: &BuildOptions,
    engine: &dyn EngineRunner,
    progress: &dyn Fn(&str),
) -> Result<BuiltImage, ImageError> {
    let tag = opts.tag.clone().unwrap_or_else(|| image_tag(&opts.variant));
    let fingerprint = fingerprint(opts)?;
    if !opts.force {
        let format = format!("{{{{index .Labels \"{FINGERPRINT_LABEL}\"}}}}");
        if let Ok((_, label)) = inspect(engine, &tag, &format).await {
            if label == fingerprint {
                progress(&format!(
                    "{tag} already holds this guest; nothing to build (--force rebuilds)"
                ));
                return Ok(BuiltImage {
                    size_bytes: image_size(engine, &tag).await?,
                    tag,
                    staged_files: 0,
                    up_to_date: true,
                });
            }
        }
    }
    let scratch = ScratchDir::create()?;
    let staged_files = stage(&opts.variant, &opts.contents, scratch.path(), progress)?;
    let shown_engine = engine.binary().display().to_string();
    progress(&format!("{shown_engine} build -t {tag}"));
    let containerfile = scratch.path().join("Containerfile");
    let mut command = engine.command();
    // The engines' COPY cache keys ignore mtimes, so a cached layer could
    // carry stale source mtimes that invalidate every __pycache__ entry.
    command
        .arg("build")
        .arg("--no-cache")
        .arg("--tag")
        .arg(&tag)
        .arg("--label")
        .arg(format!("{FINGERPRINT_LABEL}={fingerprint}"))
        .arg("--file")
        .arg(&containerfile)
        .arg(scratch.path());
    let shown = format!(
        "{shown_engine} build --tag {tag} --file {}",
        containerfile.display()
    );
    let previous = inspect(engine, &tag, "{{.Id}}")
        .await
        .ok()
        .map(|(_, id)| id);
    run_streaming(command, &shown, progress).await?;
    remove_replaced(engine, previous, &tag, progress).await;
    let size_bytes = image_size(engine, &tag).await?;
    Ok(BuiltImage {
        tag,
        size_bytes,
        staged_files,
        up_to_date: false,
    })
}

/// Label holding [`fingerprint`] of what an image was built from.
pub const FINGERPRINT_LABEL: &str = "io.codemode.guest-fingerprint";

/// Identifies a guest binary, variant and requirements, so a rebuild can be
/// skipped when the image already holds exactly these. Not a security hash:
/// a mismatch only costs a rebuild.
fn fingerprint(opts: &BuildOptions) -> Result<String, ImageError> {
    use std::hash::{Hash, Hasher};
    let (guest, requirements) = match &opts.contents {
        Contents::GuestOnly { guest } => (guest, ""),
        Contents::Packages {
            guest,
            requirements,
            ..
        } => (guest, requirements.as_str()),
    };
    let bytes = std::fs::read(guest).map_err(|source| ImageError::Io {
        action: "read the guest binary",
        path: guest.to_path_buf(),
        source,
    })?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    opts.variant.name().hash(&mut h);
    requirements.hash(&mut h);
    env!("CARGO_PKG_VERSION").hash(&mut h);
    Ok(format!("{:016x}-{}", h.finish(), bytes.len()))
}

/// Whether the engine has an image called `tag` locally.
pub async fn image_exists(engine: &dyn EngineRunner, tag: &str) -> bool {
    let mut cmd = engine.command();
    cmd.args(["image", "inspect", tag]);
    engine
        .output(cmd, SHORT)
        .await
        .is_ok_and(|out| out.status.success())
}

/// The image's size in bytes as the engine reports it.
pub async fn image_size(engine: &dyn EngineRunner, tag: &str) -> Result<u64, ImageError> {
    let (shown, text) = inspect(engine, tag, "{{.Size}}").await?;
    text.trim()
        .parse()
        .map_err(|_| ImageError::UnexpectedOutput {
            command: shown,
            expected: "a size in bytes",
            output: text.chars().take(200).collect(),
        })
}

/// `<engine> image inspect --format FORMAT TAG`: the command shown in errors and its stdout.
async fn inspect(
    engine: &dyn EngineRunner,
    tag: &str,
    format: &str,
) -> Result<(String, String), ImageError> {
    let shown = format!(
        "{} image inspect --format {format} {tag}",
        engine.binary().display()
    );
    let mut cmd = engine.command();
    cmd.args(["image", "inspect", "--format", format, tag]);
    let output = engine
        .output(cmd, SHORT)
        .await
        .map_err(|source| ImageError::Spawn {
            command: shown.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(ImageError::CommandFailed {
            command: shown,
            status: output.status.to_string(),
            output: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok((
        shown,
        String::from_utf8_lossy(&output.stdout).trim().to_string(),
    ))
}

/// Removes the image `tag` pointed at before a rebuild, so repeated builds do
/// not pile up untagged 50-250 MB images. Best effort: an image still used by
/// a container stays, which is what the engine should decide.
async fn remove_replaced(
    engine: &dyn EngineRunner,
    previous: Option<String>,
    tag: &str,
    progress: &dyn Fn(&str),
) {
    let Some(previous) = previous else { return };
    let current = inspect(engine, tag, "{{.Id}}").await.ok().map(|(_, id)| id);
    if current.as_deref() == Some(previous.as_str()) {
        return;
    }
    let mut cmd = engine.command();
    cmd.args(["image", "rm", &previous]);
    let removed = engine
        .output(cmd, SHORT)
        .await
        .is_ok_and(|out| out.status.success());
    if removed {
        progress(&format!("removed the previous {tag} image ({previous})"));
    }
}

/// Runs `command`, passing its step lines to `progress` and keeping the tail
/// of all its output for the error. Nothing reaches this process's stdout.
async fn run_streaming(
    mut command: Command,
    shown: &str,
    progress: &dyn Fn(&str),
) -> Result<(), ImageError> {
    let spawn_error = |source| ImageError::Spawn {
        command: shown.to_string(),
        source,
    };
    // A build runs for minutes from the CLI only, streaming its output:
    // its own group and a kill on drop, no timeout.
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_error)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(spawn_error(std::io::Error::other(
            "stdout or stderr was not piped",
        )));
    };
    let mut out_lines = BufReader::new(stdout).lines();
    let mut err_lines = BufReader::new(stderr).lines();
    let mut kept = VecDeque::with_capacity(KEPT_LINES);
    let (mut out_open, mut err_open) = (true, true);
    loop {
        // next_line is cancel-safe, so losing a select race drops no output.
        let (from_stdout, line) = tokio::select! {
            line = out_lines.next_line(), if out_open => (true, line),
            line = err_lines.next_line(), if err_open => (false, line),
            else => break,
        };
        match line {
            Ok(Some(line)) => {
                if is_step(&line) {
                    progress(line.trim());
                }
                if kept.len() == KEPT_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
            // End of that stream, or an unreadable one: stop reading it.
            Ok(None) | Err(_) if from_stdout => out_open = false,
            Ok(None) | Err(_) => err_open = false,
        }
    }
    let status: ExitStatus = child.wait().await.map_err(spawn_error)?;
    if status.success() {
        return Ok(());
    }
    Err(ImageError::CommandFailed {
        command: shown.to_string(),
        status: status.to_string(),
        output: Vec::from(kept).join("\n"),
    })
}

/// Lines of `podman build`/`docker build` output worth showing as progress.
fn is_step(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("STEP ")
        || line.starts_with("Step ")
        || line.starts_with("#")
        || line.starts_with("COMMIT")
        || line.starts_with("Successfully")
}

/// A temporary directory removed on drop (tempfile is a dev-dependency only).
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn create() -> Result<Self, ImageError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let path =
            std::env::temp_dir().join(format!("codemode-image-{}-{nanos:09}", std::process::id()));
        std::fs::create_dir(&path).map_err(ImageError::io("create", path.clone()))?;
        Ok(Self(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!(path = %self.0.display(), %err, "could not remove the image staging directory");
        }
    }
}

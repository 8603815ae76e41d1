//! Commands of a container engine's client (podman, docker). Each one gets:
//! - an explicit environment: what a client needs to find its engine and
//!   storage, and none of codemode's other variables (tokens meant for
//!   proxied servers, say);
//! - a working directory of codemode's own, because conmon writes files
//!   such as `oom` into it;
//! - no stdin, and the supervision of [`crate::child`]: its own process
//!   group, a parent-death signal, a kill when dropped, reaping.
//!
//! Short commands get a timeout, so a hung engine cannot hang codemode.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

/// How long a short engine command (`ps`, `rm`, `info`) may take.
pub const SHORT: Duration = Duration::from_secs(30);

/// Variables passed to engine clients, by exact name.
const KEEP: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TMPDIR",
    "TZ",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "REGISTRY_AUTH_FILE",
];
/// Variables passed to engine clients, by prefix: the XDG base
/// directories, locale, and the engines' own settings.
const KEEP_PREFIXES: &[&str] = &[
    "XDG_",
    "LC_",
    "CONTAINER",
    "_CONTAINERS_",
    "PODMAN_",
    "DOCKER_",
    "STORAGE_",
    "BUILDAH_",
];

/// Whether an engine client sees the variable `name`.
pub fn passes(name: &str) -> bool {
    KEEP.contains(&name) || KEEP_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A directory only this user can write, for engine clients to run in:
/// `$XDG_RUNTIME_DIR/codemode`, else `<tmp>/codemode-<uid>`; `/` when
/// neither can be made safely (conmon then writes nothing).
pub fn work_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        let dir = match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(run) if !run.is_empty() => PathBuf::from(run).join("codemode"),
            _ => std::env::temp_dir().join(format!("codemode-{uid}")),
        };
        if own_private_dir(&dir, uid) {
            dir
        } else {
            PathBuf::from("/")
        }
    })
}

/// Creates `dir` 0700, or accepts it if it is already a real directory
/// (not a link) of `uid` that no one else can write.
fn own_private_dir(dir: &Path, uid: u32) -> bool {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
}

/// The variables of this process an engine client gets.
fn kept_env() -> Vec<(String, std::ffi::OsString)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok().filter(|n| passes(n))?;
            Some((name, value))
        })
        .collect()
}

/// An engine client command (see the module docs), for [`output`] or a
/// supervised [`crate::child::Child`].
pub fn command(binary: &Path) -> tokio::process::Command {
    let mut cmd = crate::child::command(binary, kept_env());
    cmd.current_dir(work_dir());
    cmd
}

/// `rm -f -t 0 NAME` after the engine's global flags.
fn remove_args(global: &[String], name: &str) -> Vec<String> {
    let mut args = global.to_vec();
    args.extend(["rm", "-f", "-t", "0", name].map(String::from));
    args
}

/// Removes container `name`, waiting at most [`SHORT`]; whether it worked.
pub async fn remove(binary: &Path, global: &[String], name: &str) -> bool {
    let mut cmd = command(binary);
    cmd.args(remove_args(global, name));
    output(cmd, SHORT).await.is_ok_and(|o| o.status.success())
}

/// The image builder's engine (`codemode image build`, doctor's image
/// check): its commands start like every other engine command here.
pub struct ImageEngine(pub PathBuf);

impl codemode_images::EngineRunner for ImageEngine {
    fn binary(&self) -> &Path {
        &self.0
    }

    fn command(&self) -> tokio::process::Command {
        command(&self.0)
    }

    fn output<'a>(
        &'a self,
        command: tokio::process::Command,
        limit: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Output>> + Send + 'a>>
    {
        Box::pin(output(command, limit))
    }
}

/// Runs `cmd` for its output, killing its group after `limit`.
pub async fn output(cmd: tokio::process::Command, limit: Duration) -> std::io::Result<Output> {
    let label = Path::new(cmd.as_std().get_program())
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "the engine".into());
    crate::child::output(cmd, &label, limit).await
}

/// Removes container `name` without waiting for it: on the runtime when
/// there is one, else on a thread of its own; the `rm` is reaped either way.
pub fn remove_detached(binary: PathBuf, name: String) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move { remove(&binary, &[], &name).await });
        }
        Err(_) => {
            let _ = std::thread::Builder::new()
                .name("container-rm".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    if let Ok(runtime) = runtime {
                        runtime.block_on(remove(&binary, &[], &name));
                    }
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_clients_get_what_they_need_and_no_secrets() {
        for kept in [
            "PATH",
            "HOME",
            "XDG_RUNTIME_DIR",
            "CONTAINER_HOST",
            "CONTAINERS_CONF",
            "DOCKER_HOST",
            "DBUS_SESSION_BUS_ADDRESS",
        ] {
            assert!(passes(kept), "{kept}");
        }
        for dropped in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "MCP_BRIDGE_MEMORY",
        ] {
            assert!(!passes(dropped), "{dropped}");
        }
    }

    #[tokio::test]
    async fn a_command_that_overruns_is_killed_and_named() {
        let mut cmd = command(Path::new("sleep"));
        cmd.arg("5");
        let started = std::time::Instant::now();
        let err = output(cmd, Duration::from_millis(100)).await.unwrap_err();
        assert!(
            err.to_string().starts_with("sleep did not finish within"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

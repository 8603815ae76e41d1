//! `codemode trust`: approving project config files, revoking approvals,
//! and listing the working directory's project configs with their status.
//! What a file defines is shown as written, never expanded.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::ExitCode;

use super::human::{fail, printable, printable_path};
use crate::config::{TrustStatus, TrustStore};
use crate::settings::Settings;

pub fn run(settings: &Settings, files: &[std::path::PathBuf], revoke: bool) -> ExitCode {
    if files.is_empty() {
        if revoke {
            return fail("--revoke needs the config files whose approval to remove");
        }
        return list(settings);
    }
    let store_file = settings.trust_file();
    // A store that cannot be read is not overwritten: that would silently
    // drop every other approval.
    let mut store = match TrustStore::load(&store_file) {
        Ok(store) => store,
        Err(e) => return fail(&e.to_string()),
    };
    let mut lines = Vec::new();
    for file in files {
        if revoke {
            let verb = if store.revoke(file) {
                "revoked"
            } else {
                "was not approved:"
            };
            lines.push(format!("{verb} {}", printable_path(file)));
            continue;
        }
        match store.approve(file) {
            Ok((path, digest)) => {
                let what = defines(&path);
                let shown = printable_path(&path);
                let short = digest.get(..12).unwrap_or(&digest);
                lines.push(format!("approved {shown} (sha256 {short}…){what}"));
            }
            Err(e) => return fail(&e.to_string()),
        }
    }
    if let Err(e) = store.save(&store_file) {
        return fail(&e.to_string());
    }
    for line in lines {
        println!("{line}");
    }
    ExitCode::SUCCESS
}

/// The working directory's project configs and whether each is approved.
fn list(settings: &Settings) -> ExitCode {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let files = crate::config::project_files(&cwd);
    if files.is_empty() {
        println!(
            "no project config files in {}",
            printable(&cwd.display().to_string())
        );
        return ExitCode::SUCCESS;
    }
    let store = TrustStore::load_or_distrust(&settings.trust_file());
    if let Some(problem) = store.problem() {
        eprintln!("warning: {problem}");
    }
    let mut pending = false;
    for file in &files {
        let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
        let status = match std::fs::read(&canonical) {
            Ok(bytes) => store.status(&canonical, &bytes),
            Err(_) => TrustStatus::Untrusted,
        };
        let label = match status {
            TrustStatus::Trusted => "trusted  ",
            TrustStatus::Untrusted => "untrusted",
            TrustStatus::Changed => "changed  ",
        };
        pending |= status != TrustStatus::Trusted;
        let shown = printable_path(file);
        println!("{label}  {shown}{}", defines(file));
        if status != TrustStatus::Trusted {
            println!("           approve: {}", settings.trust_command(&canonical));
        }
    }
    if settings.no_project_configs {
        println!("(--no-project-configs is set: none of these is read)");
    } else if pending {
        println!("review a file before approving it: approval lets codemode start its commands");
    }
    ExitCode::SUCCESS
}

/// `": name (command args...), ..."` for a file's servers as written.
fn defines(path: &Path) -> String {
    let servers = match crate::config::load_file_report_as_written(path) {
        Ok(report) => report.servers,
        Err(_) => return " (not a readable server config)".to_owned(),
    };
    if servers.is_empty() {
        return " (defines no stdio servers)".to_owned();
    }
    let list: Vec<String> = servers
        .iter()
        .map(|s| {
            let mut command = vec![s.command.as_str()];
            command.extend(s.args.iter().map(String::as_str));
            format!("{} ({})", s.name, command.join(" "))
        })
        .collect();
    printable(&format!(": {}", list.join(", "))).into_owned()
}

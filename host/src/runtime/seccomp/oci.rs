//! The deny list as an OCI seccomp profile (the JSON podman and docker read
//! with `--security-opt seccomp=FILE`). A profile given there replaces the
//! engine's default, so the default is read and tightened: every denied
//! syscall is taken out of its allow rules and answered with EPERM, clone
//! may not create namespaces, and sockets are limited to Unix and IP. When
//! no default profile file can be found (docker compiles its own in), the
//! profile allows by default and denies the same list, like the
//! bubblewrap filter.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{ALLOWED_SOCKET_FAMILIES, CLONE_NAMESPACE_FLAGS, DENIED, REFUSED_SOCKET_FAMILIES};

/// Where podman (containers-common) keeps its default profile; the first
/// that exists wins, as in podman itself.
const DEFAULT_PROFILE_PATHS: &[&str] = &[
    "/etc/containers/seccomp.json",
    "/usr/share/containers/seccomp.json",
];

/// Syscalls whose rules this profile writes itself (removed from the
/// engine's rules, whatever their action).
const OWN_RULES: &[&str] = &["clone", "clone3", "socket"];

/// The engine's default profile, if one is installed where podman keeps it.
pub fn engine_default_profile() -> Option<(PathBuf, Value)> {
    DEFAULT_PROFILE_PATHS.iter().find_map(|p| {
        let text = std::fs::read_to_string(Path::new(p)).ok()?;
        let value: Value = serde_json::from_str(&text).ok()?;
        value.get("syscalls")?.as_array()?;
        Some((PathBuf::from(p), value))
    })
}

/// The profile: `base` tightened, or an allow-by-default profile.
pub fn profile(base: Option<Value>) -> Value {
    let denied: Vec<&str> = DENIED.iter().map(|(name, _)| *name).collect();
    match base {
        Some(mut base) => {
            let rules = tightened_rules(&base, &denied);
            if let Some(obj) = base.as_object_mut() {
                obj.insert("syscalls".into(), Value::Array(rules));
            }
            base
        }
        None => allow_by_default(&denied),
    }
}

fn errno(names: &[&str], errno: i32, args: Value) -> Value {
    json!({"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno, "args": args})
}

fn allow(names: &[&str], args: Value) -> Value {
    json!({"names": names, "action": "SCMP_ACT_ALLOW", "args": args})
}

fn arg0(op: &str, value: u32, value_two: u32) -> Value {
    json!([{"index": 0, "value": value, "valueTwo": value_two, "op": op}])
}

/// The base's rules without the denied and own-rule syscalls, then ours.
fn tightened_rules(base: &Value, denied: &[&str]) -> Vec<Value> {
    let mut rules: Vec<Value> = Vec::new();
    let empty = Vec::new();
    let base_rules = base
        .get("syscalls")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for rule in base_rules {
        let allows = rule.get("action").and_then(Value::as_str) == Some("SCMP_ACT_ALLOW");
        let Some(names) = rule.get("names").and_then(Value::as_array) else {
            continue;
        };
        let kept: Vec<Value> = names
            .iter()
            .filter(|n| {
                let n = n.as_str().unwrap_or("");
                let ours = OWN_RULES.contains(&n);
                let denied_here = allows && denied.contains(&n);
                !(ours || denied_here)
            })
            .cloned()
            .collect();
        if kept.is_empty() {
            continue;
        }
        let mut rule = rule.clone();
        if let Some(obj) = rule.as_object_mut() {
            obj.insert("names".into(), Value::Array(kept));
        }
        rules.push(rule);
    }
    rules.push(errno(denied, libc::EPERM, Value::Null));
    // clone without namespace flags; the base's default action (an errno)
    // answers the rest.
    rules.push(allow(
        &["clone"],
        arg0("SCMP_CMP_MASKED_EQ", CLONE_NAMESPACE_FLAGS, 0),
    ));
    rules.push(errno(&["clone3"], libc::ENOSYS, Value::Null));
    for family in ALLOWED_SOCKET_FAMILIES {
        rules.push(allow(&["socket"], arg0("SCMP_CMP_EQ", *family, 0)));
    }
    for family in REFUSED_SOCKET_FAMILIES {
        rules.push(errno(
            &["socket"],
            libc::EAFNOSUPPORT,
            arg0("SCMP_CMP_EQ", *family, 0),
        ));
    }
    rules
}

/// Used when the engine's default cannot be read: everything the deny
/// list names is refused, the rest allowed.
fn allow_by_default(denied: &[&str]) -> Value {
    let mut rules = vec![errno(denied, libc::EPERM, Value::Null)];
    for bit in 0..32 {
        let flag = 1u32 << bit;
        if CLONE_NAMESPACE_FLAGS & flag != 0 {
            rules.push(errno(
                &["clone"],
                libc::EPERM,
                arg0("SCMP_CMP_MASKED_EQ", flag, flag),
            ));
        }
    }
    rules.push(errno(&["clone3"], libc::ENOSYS, Value::Null));
    // AF_MAX is below 64 on every kernel codemode runs on.
    for family in 0..64u32 {
        if !ALLOWED_SOCKET_FAMILIES.contains(&family) {
            rules.push(errno(
                &["socket"],
                libc::EAFNOSUPPORT,
                arg0("SCMP_CMP_EQ", family, 0),
            ));
        }
    }
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
        "syscalls": rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_with_action(p: &Value, action: &str) -> Vec<String> {
        p["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                let unconditional =
                    r["args"].is_null() || r["args"].as_array().is_some_and(Vec::is_empty);
                r["action"] == action && unconditional
            })
            .flat_map(|r| r["names"].as_array().unwrap().clone())
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn tightens_the_engines_default() {
        let base = json!({
            "defaultAction": "SCMP_ACT_ERRNO",
            "defaultErrnoRet": 38,
            "syscalls": [
                {"names": ["read", "unshare", "mount", "keyctl", "clone", "socket"], "action": "SCMP_ACT_ALLOW", "args": []},
                {"names": ["setns"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "args": []},
                {"names": ["socket"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 16, "op": "SCMP_CMP_NE"}]}
            ]
        });
        let p = profile(Some(base));
        assert_eq!(
            p["defaultAction"], "SCMP_ACT_ERRNO",
            "the base's default stays"
        );
        let allowed = names_with_action(&p, "SCMP_ACT_ALLOW");
        assert!(allowed.contains(&"read".to_string()));
        for gone in ["unshare", "mount", "keyctl", "clone", "socket"] {
            assert!(!allowed.contains(&gone.to_string()), "{gone} still allowed");
        }
        let denied = names_with_action(&p, "SCMP_ACT_ERRNO");
        for name in ["unshare", "mount", "keyctl", "setns", "bpf"] {
            assert!(denied.contains(&name.to_string()), "{name} not denied");
        }
        let socket_rules: Vec<&Value> = p["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["names"][0] == "socket")
            .collect();
        assert!(
            socket_rules.iter().all(|r| !r["args"].is_null()),
            "no unconditional socket rule"
        );
        assert!(socket_rules.iter().any(|r| r["action"] == "SCMP_ACT_ERRNO"
            && r["args"][0]["value"] == libc::AF_NETLINK
            && r["errnoRet"] == libc::EAFNOSUPPORT));
    }

    #[test]
    fn allows_by_default_without_a_base() {
        let p = profile(None);
        assert_eq!(p["defaultAction"], "SCMP_ACT_ALLOW");
        let denied = names_with_action(&p, "SCMP_ACT_ERRNO");
        assert!(denied.contains(&"unshare".to_string()));
        let refused_families: Vec<u64> = p["syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["names"][0] == "socket")
            .map(|r| r["args"][0]["value"].as_u64().unwrap())
            .collect();
        assert!(refused_families.contains(&(libc::AF_VSOCK as u64)));
        assert!(!refused_families.contains(&(libc::AF_UNIX as u64)));
    }
}

//! A prompt's working directory (E2A §11.6): a request's `params.workspace_dir`, made on demand
//! (`mkdir -p`) and used as the ACP session's `cwd` for that prompt, else its `params.cwd`,
//! else the agent's default — each confined to the configured workspace root
//! ([`AcpProcessConfig::workspace_root`]): a caller cannot name a directory of the host outside
//! it, by `..`, by an absolute path or through a symlink.
//!
//! Unlike the Python reference (which resolves a relative `workspace_dir` against its own
//! working directory and takes any absolute path), a relative path is taken from the root, and
//! without a root a request names no directory (logged): a gateway's callers are not the
//! host's users.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::AcpProcessConfig;

/// The working directory of each ACP session whose directory is not the agent's default (what
/// its `fs/*` requests are confined to).
pub(super) type SessionDirs = Arc<parking_lot::Mutex<HashMap<String, PathBuf>>>;

/// `asked` as a directory inside `root`, both with symlinks resolved: made (its missing parts,
/// one by one, never through a symlink out of the root) when `make`, else it must exist. Why
/// not, otherwise.
pub(super) fn confined_dir(root: &Path, asked: &Path, make: bool) -> Result<PathBuf, String> {
    if make {
        std::fs::create_dir_all(root).map_err(|e| format!("cannot make the workspace root: {e}"))?;
    }
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("the workspace root {} is unusable: {e}", root.display()))?;
    let relative = if asked.is_absolute() {
        asked
            .strip_prefix(&real_root)
            .or_else(|_| asked.strip_prefix(root))
            .map_err(|_| format!("{} is outside the workspace root", asked.display()))?
    } else {
        asked
    };
    let mut at = real_root.clone();
    for part in relative.components() {
        match part {
            Component::Normal(name) => at.push(name),
            Component::CurDir => continue,
            _ => return Err(format!("{} leaves the workspace root (`..`)", asked.display())),
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                let real = at.canonicalize().map_err(|e| format!("{}: {e}", at.display()))?;
                if !real.starts_with(&real_root) || !real.is_dir() {
                    return Err(format!("{} is a link out of the workspace root", at.display()));
                }
                at = real;
            }
            Ok(_) => return Err(format!("{} is not a directory", at.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && make => {
                std::fs::create_dir(&at).map_err(|e| format!("cannot make {}: {e}", at.display()))?;
            }
            Err(e) => return Err(format!("{}: {e}", at.display())),
        }
    }
    let real = at.canonicalize().map_err(|e| format!("{}: {e}", at.display()))?;
    if real.starts_with(&real_root) {
        Ok(real)
    } else {
        Err(format!("{} is outside the workspace root", asked.display()))
    }
}

/// The working directory of a prompt whose request has `params`: its `workspace_dir` (made),
/// else its `cwd` (an existing directory), each inside the workspace root; else `None`, the
/// agent's default. A directory asked for and not used is logged, with why.
pub(super) fn prompt_cwd(config: &AcpProcessConfig, params: &Map<String, Value>) -> Option<PathBuf> {
    let asked = |key: &str| params.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    for (key, make) in [("workspace_dir", true), ("cwd", false)] {
        let Some(dir) = asked(key) else { continue };
        let Some(root) = &config.workspace_root else {
            tracing::warn!(
                key,
                "a request names a working directory, but no workspace root is configured: the agent's default is used"
            );
            break;
        };
        match confined_dir(root, Path::new(dir), make) {
            Ok(real) => return Some(real),
            Err(why) => tracing::warn!(key, reason = %why, "a request's working directory cannot be used"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_made_inside_the_root_and_nowhere_else() {
        let root = tempfile::tempdir().expect("root");
        let outside = tempfile::tempdir().expect("outside");
        let real_root = root.path().canonicalize().expect("real");
        // relative, made on demand
        let made = confined_dir(root.path(), Path::new("eval/task-42"), true).expect("made");
        assert_eq!(made, real_root.join("eval/task-42"));
        assert!(made.is_dir());
        // absolute inside: as asked
        let inside = real_root.join("abs/x");
        assert_eq!(confined_dir(root.path(), &inside, true).ok(), Some(inside.clone()));
        // refused: `..`, an absolute path outside, a link out of the root (nothing made there)
        for asked in ["../escape", "eval/../../escape"] {
            assert!(confined_dir(root.path(), Path::new(asked), true).is_err(), "{asked}");
        }
        assert!(confined_dir(root.path(), &outside.path().join("x"), true).is_err());
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).expect("symlink");
        let through = confined_dir(root.path(), Path::new("link/made-outside"), true);
        assert!(through.is_err(), "{through:?}");
        assert!(!outside.path().join("made-outside").exists(), "made through the link");
        // a link that stays inside is followed
        std::os::unix::fs::symlink(&made, root.path().join("inner")).expect("symlink");
        assert_eq!(
            confined_dir(root.path(), Path::new("inner"), false).ok(),
            Some(made.clone())
        );
        // without `make`, it must exist
        assert!(confined_dir(root.path(), Path::new("nope"), false).is_err());
    }

    #[test]
    fn a_prompt_takes_its_workspace_then_its_cwd_then_the_default() {
        let root = tempfile::tempdir().expect("root");
        let real_root = root.path().canonicalize().expect("real");
        std::fs::create_dir(root.path().join("kept")).expect("dir");
        let mut config = AcpProcessConfig::new(vec!["agent".into()]);
        let params = |v: Value| v.as_object().cloned().unwrap_or_default();
        // no root: the default whatever is asked
        let asked = params(serde_json::json!({"workspace_dir": "w", "cwd": "kept"}));
        assert_eq!(prompt_cwd(&config, &asked), None);
        config.workspace_root = Some(root.path().to_path_buf());
        assert_eq!(prompt_cwd(&config, &asked), Some(real_root.join("w")));
        // a workspace that cannot be: the cwd
        let bad = params(serde_json::json!({"workspace_dir": "../w", "cwd": "kept"}));
        assert_eq!(prompt_cwd(&config, &bad), Some(real_root.join("kept")));
        // neither: the default
        let neither = params(serde_json::json!({"workspace_dir": "/etc", "cwd": "/"}));
        assert_eq!(prompt_cwd(&config, &neither), None);
    }
}

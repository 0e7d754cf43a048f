//! The gateway's configuration file (`e2a serve --config FILE`): TOML, described by the
//! `GatewayFile` definition of the E2A schema (`schema/config.json`; the types are
//! [`e2a::types::GatewayFile`] and the rest, generated from it).
//!
//! Loading is three steps, each reporting every problem with the file, line and key:
//! the TOML syntax; the schema (unknown keys, wrong types, out-of-range values, missing keys),
//! with `e2a serve` flags laid over the file first ([`Override`]); then what the schema cannot
//! say — names, references between sections, and secrets, which are read from the files and
//! environment variables the file names (a secret is never written in the file itself).
//!
//! ```
//! use e2a_gateway::config_file::ConfigFile;
//!
//! let text = "[a2a]\nenabled = true\n\n[agents.writer]\nagent = \"echo\"\n";
//! let file = ConfigFile::parse(text, "e2a.toml", ".".as_ref(), &[]).unwrap();
//! assert!(file.settings.a2a.enabled);
//! assert_eq!(file.settings.agents["writer"].agent.as_deref(), Some("echo"));
//!
//! let errors = ConfigFile::parse("[server]\nbogus = 1\n", "e2a.toml", ".".as_ref(), &[]).unwrap_err();
//! assert_eq!(errors[0].to_string(), "e2a.toml:2: server.bogus: unknown key");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use e2a::types::GatewayFile;
use serde_json::{Map, Value};

/// The name a caller's allow-list uses for the agent at the root routes.
pub use crate::web::auth::ROOT_AGENT;
pub use reload::{Reloaded, Running};

mod build;
mod callers;
mod checks;
mod groups;
mod reload;
mod toml;

use toml::{table_json, Lines};

/// Names no agent may have: the first segments of the gateway's own routes.
pub const RESERVED_NAMES: &[&str] = &["a2a", "agents", "api", "tasks", "v1", "healthz", "metrics", "agui"];

/// One problem with a configuration: where (file and line, or the flag) and which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, or `flag --NAME` when a flag set the key.
    pub origin: String,
    /// The line of the key (1-based), when the file has it.
    pub line: Option<usize>,
    /// The key, dotted (`callers.bob.api_key_file`); empty for the whole file.
    pub key: String,
    /// What is wrong (never a secret's value).
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// A value a flag sets, laid over the file: the key's JSON pointer (`/server/bind`), the value
/// and the flag's name for messages.
#[derive(Debug, Clone)]
pub struct Override {
    /// JSON pointer of the key.
    pub pointer: String,
    /// Its value.
    pub value: Value,
    /// The flag (`--bind`).
    pub flag: String,
}

/// A loaded, checked configuration.
#[derive(Clone)]
pub struct ConfigFile {
    /// The settings, every default filled in.
    pub settings: GatewayFile,
    /// Where relative `*_file` paths start: the file's directory.
    pub dir: PathBuf,
    origin: String,
    lines: HashMap<String, usize>,
    flags: HashMap<String, String>,
}

impl fmt::Debug for ConfigFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigFile")
            .field("origin", &self.origin)
            .field("settings", &self.settings)
            .finish()
    }
}

impl ConfigFile {
    /// Reads and checks `path`, with `overrides` laid over it.
    pub fn load(path: &Path, overrides: &[Override]) -> Result<Self, Vec<ConfigError>> {
        let (text, origin, dir) = Self::read(path)?;
        Self::parse(&text, &origin, &dir, overrides)
    }

    /// The text of `path`, its name in errors, and the directory its relative paths start at.
    fn read(path: &Path) -> Result<(String, String, PathBuf), Vec<ConfigError>> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                origin: origin.clone(),
                line: None,
                key: String::new(),
                reason: format!("cannot read: {e}"),
            }]
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok((text, origin, dir))
    }

    /// The configuration of the flags alone (no file; relative paths from the working directory).
    pub fn from_flags(overrides: &[Override]) -> Result<Self, Vec<ConfigError>> {
        Self::parse("", "flags", Path::new(""), overrides)
    }

    /// Checks TOML `text` read from `origin`, relative paths starting at `dir`.
    pub fn parse(text: &str, origin: &str, dir: &Path, overrides: &[Override]) -> Result<Self, Vec<ConfigError>> {
        let (file, errors) = Self::parse_all(text, origin, dir, overrides)?;
        if errors.is_empty() {
            Ok(file)
        } else {
            Err(errors)
        }
    }

    /// [`ConfigFile::parse`], going on past what the schema refuses: the file without it (its
    /// defaults taken) and every problem found — the schema's and the references' (`Err`: not
    /// even that could be read).
    fn parse_all(
        text: &str,
        origin: &str,
        dir: &Path,
        overrides: &[Override],
    ) -> Result<(Self, Vec<ConfigError>), Vec<ConfigError>> {
        let doc = toml_edit::Document::parse(text).map_err(|e| {
            vec![ConfigError {
                origin: origin.to_string(),
                line: e.span().map(|s| Lines::of(text).line(s.start)),
                key: String::new(),
                reason: e.message().trim().to_string(),
            }]
        })?;
        let mut lines = HashMap::new();
        let mut value = table_json(doc.as_table(), &Lines::of(text), "", &mut lines);
        let mut flags = HashMap::new();
        for o in overrides {
            set_pointer(&mut value, &o.pointer, o.value.clone());
            flags.insert(o.pointer.clone(), o.flag.clone());
        }
        let mut file = ConfigFile {
            settings: GatewayFile::default(),
            dir: dir.to_path_buf(),
            origin: origin.to_string(),
            lines,
            flags,
        };
        let violations =
            e2a::schema_violations("GatewayFile", &value).map_err(|e| vec![file.error("", e.to_string())])?;
        let mut errors: Vec<ConfigError> = violations
            .iter()
            .map(|v| file.error(&v.pointer, v.reason.clone()))
            .collect();
        // what the schema refuses is left out (its default taken), so that what the rest of
        // the file says is checked in the same pass
        for v in &violations {
            remove_pointer(&mut value, &v.pointer);
        }
        match serde_json::from_value(value) {
            Ok(settings) => file.settings = settings,
            Err(e) if errors.is_empty() => return Err(vec![file.error("", e.to_string())]),
            Err(_) => return Err(errors),
        }
        errors.extend(checks::semantic_errors(&file));
        Ok((file, errors))
    }

    /// [`ConfigFile::load`] and [`ConfigFile::check`] in one pass: every problem of the file —
    /// its schema, its references, its secrets, its agents — each once, or the file, ready for
    /// [`ConfigFile::gateway`]. What `e2a config check` and `e2a serve` run first. `path`
    /// `None`: the overrides alone ([`ConfigFile::from_flags`]).
    pub fn load_checked(path: Option<&Path>, overrides: &[Override]) -> Result<Self, Vec<ConfigError>> {
        let (text, origin, dir) = match path {
            Some(path) => Self::read(path)?,
            None => (String::new(), "flags".to_string(), PathBuf::new()),
        };
        let (file, mut errors) = Self::parse_all(&text, &origin, &dir, overrides)?;
        errors.extend(file.check().err().unwrap_or_default());
        let mut seen = std::collections::HashSet::new();
        errors.retain(|e| seen.insert(e.to_string()));
        if errors.is_empty() {
            Ok(file)
        } else {
            Err(errors)
        }
    }

    /// An error at the key of `pointer`, located at its line (or its nearest table's line).
    pub fn error(&self, pointer: &str, reason: impl Into<String>) -> ConfigError {
        let flag = self
            .flags
            .iter()
            .find(|(p, _)| pointer == *p || pointer.starts_with(&format!("{p}/")));
        let (origin, line) = match flag {
            Some((_, flag)) => (format!("flag {flag}"), None),
            None => {
                let mut p = pointer;
                let line = loop {
                    if let Some(l) = self.lines.get(p) {
                        break Some(*l);
                    }
                    match p.rfind('/') {
                        Some(i) => p = &p[..i],
                        None => break None,
                    }
                };
                (self.origin.clone(), line)
            }
        };
        ConfigError {
            origin,
            line,
            key: dotted(pointer),
            reason: shortened(reason.into()),
        }
    }

    /// `path` as the file means it: relative paths start at the file's directory.
    pub fn path(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// A secret the file names: the trimmed, non-empty contents of the file `path` (relative
    /// to the file) or of the environment variable `var`; the error names `pointer`'s key.
    pub fn secret(
        &self,
        pointer: &str,
        file: Option<&str>,
        var: Option<&str>,
    ) -> Result<Option<e2a::SecretString>, ConfigError> {
        let (text, what) = match (file, var) {
            (Some(f), _) => {
                let path = self.path(f);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| self.error(pointer, format!("cannot read {}: {e}", path.display())))?;
                (text, path.display().to_string())
            }
            (None, Some(v)) => {
                let text = std::env::var(v)
                    .map_err(|_| self.error(pointer, format!("environment variable {v} is not set")))?;
                (text, format!("environment variable {v}"))
            }
            (None, None) => return Ok(None),
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(self.error(pointer, format!("{what} is empty")));
        }
        Ok(Some(text.into()))
    }

    /// The frame log `log.frames` names, opened (its directory made), if any.
    pub fn frame_log(&self) -> Result<Option<crate::frame_log::FrameLog>, ConfigError> {
        let log = &self.settings.log;
        let Some(f) = &log.frames else { return Ok(None) };
        let config = crate::frame_log::FrameLogConfig {
            path: self.path(f),
            max_bytes: u64::try_from(log.frames_max_bytes).unwrap_or(u64::MAX),
            keep: u32::try_from(log.frames_keep).unwrap_or(u32::MAX),
            max_line_bytes: usize::try_from(log.frames_line_bytes).unwrap_or(usize::MAX),
        };
        crate::frame_log::FrameLog::open(&config)
            .map(Some)
            .map_err(|e| self.error("/log/frames", format!("cannot open {}: {e}", config.path.display())))
    }
}

/// Most bytes of an error's reason: a reason quoting a huge value (a schema error quotes the
/// value it refuses) keeps its start and its end, which says what is wrong with it.
const MAX_REASON: usize = 400;

/// `reason` within [`MAX_REASON`] bytes: its first and last part around `…`.
fn shortened(reason: String) -> String {
    if reason.len() <= MAX_REASON {
        return reason;
    }
    let floor = |mut i: usize| {
        while !reason.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head = floor(MAX_REASON / 2);
    let tail = floor(reason.len() - MAX_REASON / 3);
    format!("{} … {}", &reason[..head], &reason[tail..])
}

/// `key` escaped for a JSON pointer.
pub(crate) fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `/callers/bob/agents/0` as `callers.bob.agents[0]`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// Sets the value at `pointer`, making the objects on the way.
/// Removes what is at `pointer` from `root` (nothing when nothing is there; the root itself is
/// emptied).
fn remove_pointer(root: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        *root = Value::Object(Map::new());
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match root.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

fn set_pointer(root: &mut Value, pointer: &str, value: Value) {
    let mut at = root;
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, seg) in segs.iter().enumerate() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let Some(map) = at.as_object_mut() else { return };
        if i + 1 == segs.len() {
            map.insert((*seg).to_string(), value);
            return;
        }
        at = map
            .entry((*seg).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        ConfigFile::parse(text, "c.toml", Path::new("."), &[])
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn names_line_and_key_of_each_problem() {
        assert_eq!(errors("[server]\nbogus = 1\n"), ["c.toml:2: server.bogus: unknown key"]);
        assert_eq!(
            errors("[server]\nbind = \"127.0.0.1:1\"\nmax_streams = \"many\"\n"),
            ["c.toml:3: server.max_streams: expected integer"]
        );
        assert_eq!(
            errors("[agents.w]\ntoken_file = \"t\"\n"),
            ["c.toml:1: agents.w.agent: missing required key (or give `group`: the agents that answer together)"]
        );
        assert_eq!(errors("[server\n").len(), 1);
        assert!(errors("[server\n")[0].starts_with("c.toml:1: "));
        let e = errors("[callers.a]\napi_key_env = \"X\"\nagents = [\"nobody\"]\n");
        assert_eq!(e, ["c.toml:3: callers.a.agents[0]: no agent `nobody` in [agents]"]);
    }

    #[test]
    fn an_error_quotes_a_huge_value_cut() {
        let huge = "q".repeat(1 << 20);
        let text = format!("agent = \"{huge}\"\n[server]\nbind = \"{huge}\"\n");
        let file = ConfigFile::parse(&text, "c.toml", Path::new("."), &[]);
        let errors: Vec<String> = match file {
            Ok(f) => f.check().unwrap_err().iter().map(ToString::to_string).collect(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        };
        assert!(!errors.is_empty());
        for e in &errors {
            assert!(e.len() < 2 * MAX_REASON, "{} bytes: {}…", e.len(), &e[..200]);
            assert!(e.contains(" … "), "{e}");
        }
    }

    #[test]
    fn errors_are_safe_by_default_off_loopback() {
        use e2a::types::ErrorExposure;
        let errors = |text: &str| {
            ConfigFile::parse(text, "c.toml", Path::new("."), &[])
                .expect("config")
                .errors()
        };
        assert_eq!(errors(""), ErrorExposure::Detail, "127.0.0.1 by default");
        assert_eq!(errors("[server]\nbind = \"[::1]:8080\"\n"), ErrorExposure::Detail);
        assert_eq!(errors("[server]\nbind = \"localhost:8080\"\n"), ErrorExposure::Detail);
        assert_eq!(errors("[server]\nbind = \"0.0.0.0:8080\"\n"), ErrorExposure::Safe);
        assert_eq!(errors("[server]\nbind = \"gw.example:8080\"\n"), ErrorExposure::Safe);
        let chosen = "[server]\nbind = \"0.0.0.0:8080\"\n[errors]\nexpose = \"detail\"\n";
        assert_eq!(errors(chosen), ErrorExposure::Detail, "what the file says wins");
        assert_eq!(errors("[errors]\nexpose = \"safe\"\n"), ErrorExposure::Safe);
    }

    #[test]
    fn lines_are_found_as_counted() {
        let text = "a\n\nbc\nd";
        let lines = Lines::of(text);
        for offset in 0..=text.len() + 2 {
            let counted = text.as_bytes()[..offset.min(text.len())]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            assert_eq!(lines.line(offset), counted, "{offset}");
        }
    }

    /// The first ```toml block of a README.
    fn toml_block(readme: &str) -> &str {
        let start = readme.find("```toml\n").map(|i| i + 8).unwrap_or_default();
        let end = readme[start..].find("```").map_or(readme.len(), |e| start + e);
        &readme[start..end]
    }

    #[test]
    fn the_readme_examples_load() {
        for readme in [include_str!("../../README.md"), include_str!("../../../README.md")] {
            let text = toml_block(readme);
            assert!(text.contains("[agents."), "{text}");
            if let Err(e) = ConfigFile::parse(text, "README", Path::new("."), &[]) {
                panic!("{e:?}");
            }
        }
    }

    #[test]
    fn flags_override_the_file_and_are_named_in_errors() {
        let flag = |pointer: &str, value: Value| Override {
            pointer: pointer.into(),
            value,
            flag: "--max-streams".into(),
        };
        let f = ConfigFile::parse(
            "[server]\nmax_streams = 5\n",
            "c.toml",
            Path::new("."),
            &[flag("/server/max_streams", 7.into())],
        )
        .unwrap();
        assert_eq!(f.settings.server.max_streams.get(), 7);
        assert_eq!(
            f.settings.server.bind, "127.0.0.1:8080",
            "defaults come from the schema"
        );
        assert_eq!(f.settings.routes.a2a, "/a2a/agents/{name}");
        let e = ConfigFile::parse("", "c.toml", Path::new("."), &[flag("/server/max_streams", 0.into())]).unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "flag --max-streams: server.max_streams: less than minimum 1"
        );
    }
}

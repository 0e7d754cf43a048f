//! How `e2a acp` presents itself and what its turns are held to: [`AcpServerConfig`], and the
//! modes and config options an operator declares ([`ModeDecl`], [`ConfigOptionDecl`]).

use agent_client_protocol_schema::v1 as acp;

use super::session::{HistoryLimits, Session};
use crate::config::GatewayConfig;

/// How `e2a acp` presents itself.
#[derive(Debug, Clone)]
pub struct AcpServerConfig {
    /// `agentInfo.name`.
    pub name: String,
    /// `agentInfo.title`.
    pub title: String,
    /// `agentInfo.version`.
    pub version: String,
    /// What every turn's run is held to, as on the other bindings: the boundary's deadlines,
    /// the stream permits (`max_streams`: turns running at once), the run deadline
    /// (`max_run`, none by default: a turn lasts as long as the editor waits), the frame log,
    /// how much of an agent's error text the editor is told.
    pub gateway: GatewayConfig,
    /// The session modes offered (the first is every new session's); none: `session/set_mode`
    /// is refused.
    pub modes: Vec<ModeDecl>,
    /// The session config options offered (each a select; its first value is the default).
    pub config_options: Vec<ConfigOptionDecl>,
    /// How much of a session `session/load` replays.
    pub history: HistoryLimits,
    /// The `params.workspace_dir` of every prompt that names none (E2A §11.6; `e2a acp
    /// --workspace-dir`): the directory an `acp:` agent behind works in for it.
    pub workspace_dir: Option<String>,
}

impl Default for AcpServerConfig {
    fn default() -> Self {
        AcpServerConfig {
            name: "e2a".into(),
            title: "E2A gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            gateway: GatewayConfig {
                max_run: None,
                ..GatewayConfig::default()
            },
            modes: Vec::new(),
            config_options: Vec::new(),
            history: HistoryLimits::default(),
            workspace_dir: None,
        }
    }
}

/// A session mode declared by the operator: `ID` or `ID=NAME` (`--mode`).
///
/// ```
/// use e2a_gateway::bindings::acp::ModeDecl;
/// let m: ModeDecl = "plan=Plan first".parse().unwrap();
/// assert_eq!((m.id.as_str(), m.name.as_str()), ("plan", "Plan first"));
/// assert_eq!("code".parse::<ModeDecl>().unwrap().name, "code");
/// assert!("=x".parse::<ModeDecl>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeDecl {
    /// `id` of the ACP `SessionMode`.
    pub id: String,
    /// Its `name`.
    pub name: String,
}

impl std::str::FromStr for ModeDecl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, name) = s.split_once('=').unwrap_or((s, s));
        let (id, name) = (id.trim(), name.trim());
        if id.is_empty() || name.is_empty() {
            return Err(format!("a mode is ID or ID=NAME, not {s:?}"));
        }
        Ok(ModeDecl {
            id: id.into(),
            name: name.into(),
        })
    }
}

/// A select config option declared by the operator: `ID=VALUE,VALUE…` (`--config-option`);
/// its first value is the default.
///
/// ```
/// use e2a_gateway::bindings::acp::ConfigOptionDecl;
/// let o: ConfigOptionDecl = "model=fast,smart".parse().unwrap();
/// assert_eq!((o.id.as_str(), o.values.len()), ("model", 2));
/// assert!("model=".parse::<ConfigOptionDecl>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOptionDecl {
    /// `id` (and `name`) of the ACP `SessionConfigOption`.
    pub id: String,
    /// Its values, the first the default.
    pub values: Vec<String>,
}

impl std::str::FromStr for ConfigOptionDecl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("a config option is ID=VALUE,VALUE…, not {s:?}");
        let (id, values) = s.split_once('=').ok_or_else(bad)?;
        let values: Vec<String> = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect();
        if id.trim().is_empty() || values.is_empty() {
            return Err(bad());
        }
        Ok(ConfigOptionDecl {
            id: id.trim().into(),
            values,
        })
    }
}

/// What the declarations make of a session.
impl AcpServerConfig {
    /// The declared modes' default and config options' defaults.
    pub(super) fn defaults(&self) -> (Option<String>, Vec<(String, String)>) {
        let mode = self.modes.first().map(|m| m.id.clone());
        // (a declaration without values, made in code, defaults to the empty value)
        let config = self
            .config_options
            .iter()
            .map(|o| (o.id.clone(), o.values.first().cloned().unwrap_or_default()))
            .collect();
        (mode, config)
    }

    /// The session's `modes`, `None` when no modes are declared.
    pub(super) fn modes_of(&self, session: &Session) -> Option<acp::SessionModeState> {
        let current = session.mode.lock().clone()?;
        let available = self
            .modes
            .iter()
            .map(|m| acp::SessionMode::new(m.id.clone(), m.name.clone()))
            .collect();
        Some(acp::SessionModeState::new(current, available))
    }

    /// The session's `configOptions`, each a select.
    pub(super) fn options_of(&self, session: &Session) -> Vec<acp::SessionConfigOption> {
        let current = session.config.lock().clone();
        self.config_options
            .iter()
            .zip(current)
            .map(|(decl, (_, value))| {
                let values: Vec<acp::SessionConfigSelectOption> = decl
                    .values
                    .iter()
                    .map(|v| acp::SessionConfigSelectOption::new(v.clone(), v.clone()))
                    .collect();
                acp::SessionConfigOption::new(
                    decl.id.clone(),
                    decl.id.clone(),
                    acp::SessionConfigKind::Select(acp::SessionConfigSelect::new(value, values)),
                )
            })
            .collect()
    }
}

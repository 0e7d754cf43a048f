//! Agent groups of a config file (`[agents.NAME] group = { members, mode, quorum }`): checked
//! (each named agent has `agent` or `group`; members are other agents of the file, not groups;
//! a quorum fits) and built from their members ([`crate::backends::GroupAgent`]).

use std::sync::Arc;

use e2a::types::{AgentEntry, GroupMode};

use super::{pointer_key, ConfigError, ConfigFile};
use crate::agent::Agent;
use crate::backends::{GroupAgent, GroupMode as Mode};

/// What serves named agent `name`: its `agent` spec, `None` for a group; an error when it
/// has both or neither.
pub(super) fn spec_of<'a>(
    file: &ConfigFile,
    name: &str,
    entry: &'a AgentEntry,
) -> Result<Option<&'a str>, ConfigError> {
    match (&entry.agent, &entry.group) {
        (Some(spec), None) => Ok(Some(spec)),
        (None, Some(_)) => Ok(None),
        (None, None) => Err(file.error(
            &format!("/agents/{}/agent", pointer_key(name)),
            "missing required key (or give `group`: the agents that answer together)",
        )),
        (Some(_), Some(_)) => Err(file.error(
            &format!("/agents/{}", pointer_key(name)),
            "give `agent` (what serves it) or `group` (the agents that answer together), not both",
        )),
    }
}

/// The errors of the file's groups: unknown members, members that are groups, a quorum that
/// does not fit.
pub(super) fn check(file: &ConfigFile) -> Vec<ConfigError> {
    let agents = &file.settings.agents;
    let mut errors = Vec::new();
    for (name, entry) in agents {
        let Some(group) = &entry.group else { continue };
        let at = |key: &str| format!("/agents/{}/group/{key}", pointer_key(name));
        for (i, member) in group.members.iter().enumerate() {
            match agents.get(member) {
                None => {
                    errors.push(file.error(&at(&format!("members/{i}")), format!("no agent {member:?} in [agents]")))
                }
                Some(m) if m.group.is_some() => errors.push(file.error(
                    &at(&format!("members/{i}")),
                    format!("{member:?} is a group: a group's members are agents"),
                )),
                Some(_) => {}
            }
        }
        if let Err(e) = mode(group.mode, group.quorum.map(|q| q.get()), group.members.len()) {
            errors.push(file.error(&at("quorum"), e));
        }
    }
    errors
}

/// The mode of a group of `members` members, `quorum` read.
fn mode(mode: GroupMode, quorum: Option<u64>, members: usize) -> Result<Mode, String> {
    let quorum = quorum.map(|q| usize::try_from(q).unwrap_or(usize::MAX));
    match (mode, quorum) {
        (GroupMode::All, None) => Ok(Mode::All),
        (GroupMode::Any, None) => Ok(Mode::Any),
        (GroupMode::Quorum, Some(n)) if n <= members => Ok(Mode::Quorum(n)),
        (GroupMode::Quorum, Some(n)) => Err(format!("quorum {n} is more than the group's {members} members")),
        (GroupMode::Quorum, None) => Err("mode = \"quorum\" needs `quorum`: how many members must answer".into()),
        (_, Some(_)) => Err("`quorum` goes with mode = \"quorum\"".into()),
    }
}

/// Agents by name.
type Named = Vec<(String, Arc<dyn Agent>)>;

/// The groups of the file, built from `built` (the other named agents, by name); the errors
/// of those that cannot be (a parsed file's groups passed [`check`]).
pub(super) fn build(file: &ConfigFile, built: &[(&String, Arc<dyn Agent>)]) -> (Named, Vec<ConfigError>) {
    let mut groups = Vec::new();
    let mut errors = Vec::new();
    for (name, entry) in &file.settings.agents {
        let Some(group) = &entry.group else { continue };
        let members: Named = group
            .members
            .iter()
            .filter_map(|m| {
                built
                    .iter()
                    .find(|(n, _)| *n == m)
                    .map(|(n, a)| (n.to_string(), a.clone()))
            })
            .collect();
        let at = format!("/agents/{}/group", pointer_key(name));
        // (a member that could not be built has its own error already)
        if members.len() < group.members.len() {
            continue;
        }
        let made = mode(group.mode, group.quorum.map(|q| q.get()), members.len())
            .and_then(|m| GroupAgent::new(members, m).map_err(|e| e.to_string()));
        match made {
            Ok(g) => groups.push((name.clone(), Arc::new(g) as Arc<dyn Agent>)),
            Err(e) => errors.push(file.error(&at, e)),
        }
    }
    (groups, errors)
}

impl ConfigFile {
    /// The named agent `name` when it is a group, for a front other than the HTTP gateway
    /// (`e2a acp --config FILE --agent NAME`): each member built as
    /// [`ConfigFile::named_agent_spec`] gives it. `None` when the file has no group `name`.
    pub fn named_group(&self, name: &str) -> Option<Result<Arc<dyn Agent>, ConfigError>> {
        let group = self.settings.agents.get(name)?.group.as_ref()?;
        let at = format!("/agents/{}/group", pointer_key(name));
        let mut members: Named = Vec::new();
        for m in &group.members {
            let built = match self.named_agent_spec(m) {
                Some(Ok((spec, options))) => spec
                    .build(&options)
                    .map_err(|e| self.error(&format!("/agents/{}/agent", pointer_key(m)), e.to_string())),
                Some(Err(e)) => Err(e),
                None => Err(self.error(&at, format!("no agent {m:?} in [agents]"))),
            };
            match built {
                Ok(agent) => members.push((m.clone(), agent)),
                Err(e) => return Some(Err(e)),
            }
        }
        let made = mode(group.mode, group.quorum.map(|q| q.get()), members.len())
            .and_then(|m| GroupAgent::new(members, m).map_err(|e| e.to_string()));
        Some(
            made.map(|g| Arc::new(g) as Arc<dyn Agent>)
                .map_err(|e| self.error(&at, e)),
        )
    }
}

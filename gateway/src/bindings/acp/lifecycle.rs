//! The session requests of `e2a acp`: `session/new`, `load`, `resume`, `close`, `delete`,
//! `list`, `set_mode` and `set_config_option`, each taking its official ACP request and
//! answering its official response; the sessions kept in the server's [`SessionStore`].
//!
//! [`SessionStore`]: crate::store::SessionStore

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use parking_lot::Mutex;
use serde_json::Value;

use super::answer::{answer, store_error, Answer};
use super::config::AcpServerConfig;
use super::session::Session;
use crate::protocol::acp::{codes, Peer, RpcError};
use crate::store::{SessionQuery, SessionStore};

/// Most sessions one `session/list` page holds (`nextCursor` leads to the next).
pub const LIST_PAGE: usize = 100;

/// The sessions of one `e2a acp`: the live ones by id, the store that keeps them (and brings
/// them back after a restart), what the operator declared for them.
pub(super) struct Sessions {
    live: Mutex<HashMap<String, Arc<Session>>>,
    store: Arc<dyn SessionStore>,
    config: Arc<AcpServerConfig>,
}

/// A `session/update` notification of `sid` carrying `update`, as sent and recorded.
pub(super) fn session_update(sid: &str, update: acp::SessionUpdate) -> Value {
    e2a::acp::stream::session_update(sid, serde_json::to_value(update).unwrap_or_default())
}

/// Text shown to the editor as the agent's message.
pub(super) fn agent_text(text: String) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text.into()))
}

/// The MCP servers of `session/new`: (passed to the agent, names of those refused). Stdio
/// servers are passed; `http` and `sse` ones are refused (this agent declares neither).
fn split_mcp_servers(servers: Vec<acp::McpServer>) -> (Vec<Value>, Vec<String>) {
    let (mut passed, mut refused) = (Vec::new(), Vec::new());
    for server in servers {
        match &server {
            acp::McpServer::Http(s) => refused.push(format!("{} (http)", s.name)),
            acp::McpServer::Sse(s) => refused.push(format!("{} (sse)", s.name)),
            _ => passed.extend(serde_json::to_value(&server).ok()),
        }
    }
    (passed, refused)
}

impl Sessions {
    /// The sessions of a server configured with `config`, kept in `store`.
    pub(super) fn new(config: Arc<AcpServerConfig>, store: Arc<dyn SessionStore>) -> Self {
        Sessions {
            live: Mutex::new(HashMap::new()),
            store,
            config,
        }
    }

    /// The live session `id`.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.live.lock().get(id).cloned()
    }

    /// Cancels the turn of every live session (the client is gone).
    pub(super) fn cancel_all(&self) {
        self.live.lock().values().for_each(|s| s.cancel());
    }

    fn add_session(&self, id: &str, cwd: String, mcp_servers: Vec<Value>) -> Arc<Session> {
        let (mode, config) = self.config.defaults();
        let s = Session::new(cwd, mcp_servers, mode, config, self.config.history);
        self.live.lock().insert(id.to_string(), s.clone());
        s
    }

    /// The session `sid`: the live one, else the stored one brought back (after a restart).
    async fn known_session(&self, sid: &str) -> Result<Arc<Session>, RpcError> {
        if let Some(s) = self.get(sid) {
            return Ok(s);
        }
        let unknown = || RpcError::new(codes::RESOURCE_NOT_FOUND, format!("unknown session {sid}"));
        let record = self
            .store
            .get_session(sid)
            .await
            .map_err(store_error)?
            .ok_or_else(unknown)?;
        let history = self.store.history(sid).await.map_err(store_error)?;
        let history = history.iter().filter_map(|e| serde_json::from_str(e).ok()).collect();
        // the stored mode and config values, where they are still declared; the defaults else
        let stored = Session::stored_state(&record);
        let (default_mode, defaults) = self.config.defaults();
        let mode = stored
            .mode_id
            .filter(|m| self.config.modes.iter().any(|d| d.id == *m))
            .or(default_mode);
        let config = self
            .config
            .config_options
            .iter()
            .zip(defaults)
            .map(|(decl, (id, default))| {
                let value = stored
                    .config_options
                    .get(&id)
                    .filter(|v| decl.values.contains(v))
                    .map_or(default, Clone::clone);
                (id, value)
            })
            .collect();
        let s = Session::restored(&record, history, mode, config, self.config.history);
        // a request that raced this one may have brought it back first
        Ok(self.live.lock().entry(sid.to_string()).or_insert(s).clone())
    }

    /// Writes the session and the history it has not stored yet.
    pub(super) async fn persist(&self, sid: &str, session: &Session) -> Result<(), RpcError> {
        let entries = session.history.lock().take_unsaved();
        if !entries.is_empty() {
            let keep = self.config.history.messages;
            self.store
                .append_history(sid, entries, keep)
                .await
                .map_err(store_error)?;
        }
        self.store
            .put_session(session.record_of(sid))
            .await
            .map_err(store_error)
    }

    /// A session that is open (not closed) or a resource-not-found error.
    pub(super) fn open_session(&self, sid: &str) -> Result<Arc<Session>, RpcError> {
        match self.get(sid) {
            Some(s) if !s.closed.load(Ordering::SeqCst) => Ok(s),
            Some(_) => Err(RpcError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("session {sid} is closed: load or resume it first"),
            )),
            None => Err(RpcError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("unknown session {sid}"),
            )),
        }
    }

    /// `session/new`: a session of `cwd` (an absolute path) with the stdio MCP servers; a note
    /// to the editor names the servers refused.
    pub(super) async fn new_session(&self, peer: &Peer, id: Value, req: acp::NewSessionRequest) -> Answer {
        if !req.cwd.is_absolute() {
            let why = format!("an absolute path is required, not {:?}", req.cwd);
            return Err(RpcError::invalid_params_at("/cwd", why));
        }
        let (passed, refused) = split_mcp_servers(req.mcp_servers);
        let sid = format!("sess_{}", uuid::Uuid::new_v4().simple());
        let session = self.add_session(&sid, req.cwd.to_string_lossy().into_owned(), passed);
        tracing::info!(session = %sid, "session/new");
        let note = (!refused.is_empty()).then(|| {
            // the editor sees why some of its MCP servers will not be used
            let text = format!(
                "Note: MCP servers not passed to the agent ({}): only stdio servers are supported.",
                refused.join(", ")
            );
            tracing::warn!(session = %sid, servers = %refused.join(", "), "MCP servers refused");
            let update = session_update(&sid, agent_text(text));
            session.record(&update);
            update
        });
        if let Err(e) = self.persist(&sid, &session).await {
            self.live.lock().remove(&sid);
            return Err(e);
        }
        let result = acp::NewSessionResponse::new(sid.clone())
            .modes(self.config.modes_of(&session))
            .config_options(self.config.options_of(&session));
        let Some(result) = answer(result)? else {
            return Ok(None);
        };
        peer.respond(id, result);
        if let Some(update) = note {
            peer.send(update);
        }
        Ok(None)
    }

    /// `session/load` (`replay`: its history sent first) and `session/resume`; an unknown id is
    /// refused: loading or resuming must not make a session appear.
    pub(super) async fn reopen_session(&self, peer: &Peer, sid: &str, replay: bool) -> Answer {
        let s = self.known_session(sid).await?;
        if s.closed.swap(false, Ordering::SeqCst) {
            self.persist(sid, &s).await?;
        }
        let (modes, config_options) = (self.config.modes_of(&s), self.config.options_of(&s));
        if replay {
            let history = s.history.lock().replay();
            for update in history {
                peer.send(update);
            }
            return answer(
                acp::LoadSessionResponse::new()
                    .modes(modes)
                    .config_options(config_options),
            );
        }
        answer(
            acp::ResumeSessionResponse::new()
                .modes(modes)
                .config_options(config_options),
        )
    }

    /// `session/close`: its turn cancelled, still listed and loadable (close is not delete).
    pub(super) async fn close_session(&self, req: acp::CloseSessionRequest) -> Answer {
        let sid = req.session_id.0.as_ref();
        let s = self.open_session(sid)?;
        s.closed.store(true, Ordering::SeqCst);
        s.cancel();
        self.persist(sid, &s).await?;
        answer(acp::CloseSessionResponse::new())
    }

    /// `session/delete`: gone from memory and the store, its turn cancelled.
    pub(super) async fn delete_session(&self, req: acp::DeleteSessionRequest) -> Answer {
        let sid = req.session_id.0.as_ref();
        let removed = self.live.lock().remove(sid);
        if let Some(s) = &removed {
            s.cancel();
        }
        let stored = self.store.delete_session(sid).await.map_err(store_error)?;
        if removed.is_none() && !stored {
            return Err(RpcError::new(
                codes::RESOURCE_NOT_FOUND,
                format!("unknown session {sid}"),
            ));
        }
        tracing::info!(session = %sid, "session/delete");
        answer(acp::DeleteSessionResponse::new())
    }

    /// `session/list`: the sessions (of `cwd`, when given), most recently updated first, a page
    /// of [`LIST_PAGE`] at a time (`cursor` / `nextCursor`).
    pub(super) async fn list_sessions(&self, req: acp::ListSessionsRequest) -> Answer {
        let offset = match &req.cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| RpcError::new(codes::INVALID_PARAMS, format!("unknown cursor {c:?}")))?,
        };
        let query = SessionQuery {
            cwd: req.cwd.map(|c| c.to_string_lossy().into_owned()),
            offset,
            limit: LIST_PAGE,
        };
        let page = self.store.list_sessions(query).await.map_err(store_error)?;
        // the reference's list (ids stripped, blanks and duplicates dropped), with when each
        // session was last updated
        let reference =
            e2a::acp::results::session_list_result_v1(page.sessions.iter().map(|r| (r.id.as_str(), r.cwd.as_str())));
        let mut result: acp::ListSessionsResponse = serde_json::from_value(reference)
            .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("the session list: {e}")))?;
        for info in &mut result.sessions {
            let updated = page.sessions.iter().find(|r| *r.id == *info.session_id.0);
            info.updated_at = updated.map(|r| Session::updated_at(r.updated_ms));
        }
        if page.more {
            result.next_cursor = Some((offset + LIST_PAGE).to_string());
        }
        answer(result)
    }

    /// `session/set_mode`: one of the declared modes, told to the editor as a
    /// `current_mode_update`.
    pub(super) async fn set_mode(&self, peer: &Peer, req: acp::SetSessionModeRequest) -> Answer {
        let sid = req.session_id.0.as_ref();
        let s = self.open_session(sid)?;
        let mode = req.mode_id.0.as_ref();
        if !self.config.modes.iter().any(|m| m.id == mode) {
            return Err(RpcError::new(codes::INVALID_PARAMS, format!("unknown modeId {mode:?}")));
        }
        *s.mode.lock() = Some(mode.to_string());
        let update = session_update(
            sid,
            acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(req.mode_id.clone())),
        );
        s.record(&update);
        self.persist(sid, &s).await?;
        peer.send(update);
        answer(acp::SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: one of the declared values of a declared option.
    pub(super) async fn set_config_option(&self, req: acp::SetSessionConfigOptionRequest) -> Answer {
        let sid = req.session_id.0.as_ref();
        let s = self.open_session(sid)?;
        let config_id = req.config_id.0.as_ref();
        let Some(decl) = self.config.config_options.iter().find(|o| o.id == config_id) else {
            return Err(RpcError::new(
                codes::INVALID_PARAMS,
                format!("unknown configId {config_id:?}"),
            ));
        };
        let value = match &req.value {
            acp::SessionConfigOptionValue::ValueId { value } if decl.values.iter().any(|v| **v == *value.0) => {
                value.0.to_string()
            }
            other => {
                let given = serde_json::to_value(other).unwrap_or_default();
                return Err(RpcError::new(
                    codes::INVALID_PARAMS,
                    format!(
                        "value of {config_id} must be one of {:?}, not {}",
                        decl.values,
                        given.get("value").unwrap_or(&Value::Null)
                    ),
                ));
            }
        };
        if let Some(slot) = s.config.lock().iter_mut().find(|(k, _)| k == config_id) {
            slot.1 = value;
        }
        s.touch();
        self.persist(sid, &s).await?;
        answer(acp::SetSessionConfigOptionResponse::new(self.config.options_of(&s)))
    }
}

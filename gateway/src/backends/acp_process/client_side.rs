//! The requests the agent makes of its client: permissions (decided by the
//! [`PermissionPolicy`](super::PermissionPolicy)) and `fs/*` (served inside the session's
//! working directory when enabled); `terminal/*` and anything else declined.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1 as acp;
use e2a::types::AcpAgentToClientMethod as AgentMethod;
use serde_json::Value;
use tokio::sync::mpsc;

use super::config::AcpProcessConfig;
use crate::protocol::acp::{codes, read_params, Incoming, Peer, RpcError};

/// Answers the backend's requests to its client.
pub(super) async fn serve_client_side(
    peer: Peer,
    mut incoming: mpsc::UnboundedReceiver<Incoming>,
    config: Arc<AcpProcessConfig>,
    dirs: super::SessionDirs,
) {
    while let Some(msg) = incoming.recv().await {
        match msg {
            Incoming::Notification { method, .. } => tracing::debug!(method = %method, "notification ignored"),
            Incoming::Request { id, method, params } => {
                let answer = client_request(&method, &params, &config, &dirs).await;
                match answer {
                    Ok(v) => peer.respond(id, v),
                    Err(e) => peer.respond_error(id, e),
                };
            }
        }
    }
}

/// The answer to one request of the agent (`method` with `params`).
async fn client_request(
    method: &str,
    params: &Value,
    config: &AcpProcessConfig,
    dirs: &super::SessionDirs,
) -> Result<Value, RpcError> {
    // the working directory of the session asking: its workspace, else the default
    let dir_of = |sid: &acp::SessionId| {
        let dir = dirs.lock().get(sid.0.as_ref()).cloned();
        dir.unwrap_or_else(|| config.session_cwd())
    };
    match method.parse::<AgentMethod>() {
        Ok(AgentMethod::SessionRequestPermission) => permission(read_params(params)?, config),
        Ok(AgentMethod::FsReadTextFile) if config.allow_fs => {
            let req: acp::ReadTextFileRequest = read_params(params)?;
            let dir = dir_of(&req.session_id);
            read_text_file(req, &dir).await
        }
        Ok(AgentMethod::FsWriteTextFile) if config.allow_fs => {
            let req: acp::WriteTextFileRequest = read_params(params)?;
            let dir = dir_of(&req.session_id);
            write_text_file(req, &dir).await
        }
        Ok(
            AgentMethod::FsReadTextFile
            | AgentMethod::FsWriteTextFile
            | AgentMethod::TerminalCreate
            | AgentMethod::TerminalOutput
            | AgentMethod::TerminalRelease
            | AgentMethod::TerminalWaitForExit
            | AgentMethod::TerminalKill,
        ) => {
            tracing::info!(method, "client method declined (not enabled)");
            Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("{method} is not enabled on this gateway"),
            ))
        }
        _ => Err(RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}

/// Decides a `session/request_permission` by the policy (logged): the first allow option when
/// allowed, else the first reject option; cancelled when the agent offered none of them.
fn permission(asked: acp::RequestPermissionRequest, config: &AcpProcessConfig) -> Result<Value, RpcError> {
    let allowed = config.policy.allows(&asked.tool_call);
    let wanted: &[acp::PermissionOptionKind] = if allowed {
        &[
            acp::PermissionOptionKind::AllowOnce,
            acp::PermissionOptionKind::AllowAlways,
        ]
    } else {
        &[
            acp::PermissionOptionKind::RejectOnce,
            acp::PermissionOptionKind::RejectAlways,
        ]
    };
    let option = wanted
        .iter()
        .find_map(|k| asked.options.iter().find(|o| o.kind == *k))
        .map(|o| o.option_id.clone());
    tracing::info!(
        tool = asked.tool_call.fields.title.as_deref().unwrap_or(""),
        allowed,
        "permission request of the ACP agent decided by policy"
    );
    let outcome = match option {
        Some(id) => acp::RequestPermissionOutcome::Selected(acp::SelectedPermissionOutcome::new(id)),
        None => acp::RequestPermissionOutcome::Cancelled,
    };
    to_result(acp::RequestPermissionResponse::new(outcome))
}

/// `fs/read_text_file`: the lines asked for (from `line`, at most `limit`) of a file inside the
/// session's working directory `dir`.
async fn read_text_file(req: acp::ReadTextFileRequest, dir: &std::path::Path) -> Result<Value, RpcError> {
    let path = confined(&req.path, dir, false)?;
    let text = tokio::fs::read_to_string(&path)
        .await
        .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("cannot read {}: {e}", path.display())))?;
    let from = req.line.map_or(0, |l| l.saturating_sub(1) as usize);
    let lines: Vec<&str> = text.split_inclusive('\n').skip(from).collect();
    let lines = match req.limit {
        Some(n) => &lines[..(n as usize).min(lines.len())],
        None => &lines[..],
    };
    to_result(acp::ReadTextFileResponse::new(lines.concat()))
}

/// `fs/write_text_file`: writes a file inside the session's working directory `dir`.
async fn write_text_file(req: acp::WriteTextFileRequest, dir: &std::path::Path) -> Result<Value, RpcError> {
    let path = confined(&req.path, dir, true)?;
    tokio::fs::write(&path, req.content)
        .await
        .map_err(|e| RpcError::new(codes::INTERNAL_ERROR, format!("cannot write {}: {e}", path.display())))?;
    to_result(acp::WriteTextFileResponse::new())
}

/// `path` when it lies inside `root` once symlinks are resolved (for a file to be written, its
/// directory is resolved and the file itself when it exists); an invalid-params error
/// otherwise.
fn confined(path: &std::path::Path, root: &std::path::Path, write: bool) -> Result<PathBuf, RpcError> {
    let denied = |why: String| RpcError::invalid_params_at("/path", why);
    if !path.is_absolute() {
        return Err(denied(format!("path must be absolute, not {}", path.display())));
    }
    let root = root
        .canonicalize()
        .map_err(|e| denied(format!("the session directory is unusable: {e}")))?;
    let resolved = match (write, path.canonicalize()) {
        (_, Ok(p)) => p,
        (true, Err(_)) => {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(denied(format!("{} names no file", path.display())));
            };
            dir.canonicalize()
                .map_err(|e| denied(format!("cannot write {}: {e}", path.display())))?
                .join(name)
        }
        (false, Err(e)) => return Err(denied(format!("cannot read {}: {e}", path.display()))),
    };
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(denied(format!(
            "{} is outside the session directory {}",
            path.display(),
            root.display()
        )))
    }
}

/// `value` as a JSON-RPC result.
fn to_result(value: impl serde::Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::new(codes::INTERNAL_ERROR, e.to_string()))
}

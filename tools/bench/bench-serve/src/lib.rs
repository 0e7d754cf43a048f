//! What every bench server (`peer-a2a`, `bare-axum`, `e2a-floor`) does the same way, so that
//! they differ only in their handlers: a multi-thread tokio runtime with tokio's default worker
//! count (the CPUs the process may run on: 1 under `taskset -c 1`, as for the gateway), a
//! listener on 127.0.0.1 with TCP_NODELAY on every accepted socket (as the gateway sets it),
//! one way to stop on a start-up error, and the pieces the gateway's echo agent streams its
//! reply in (which the peers that mirror its work stream too).

use axum::serve::ListenerExt;

/// Serves the router `app` makes (inside the runtime) on 127.0.0.1:`port` until the process
/// is killed. `name` (and `what`, when not empty) go into the start-up line and errors.
pub fn serve(name: &str, what: &str, port: u16, app: impl FnOnce() -> axum::Router) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(name, &format!("cannot start the runtime: {e}")));
    rt.block_on(async move {
        let app = app();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| die(name, &format!("cannot listen on 127.0.0.1:{port}: {e}")));
        let what = if what.is_empty() {
            String::new()
        } else {
            format!(" ({what})")
        };
        match listener.local_addr() {
            Ok(a) => eprintln!("{name}{what} listening on http://{a}"),
            Err(e) => die(name, &format!("no local address: {e}")),
        }
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        if let Err(e) = axum::serve(listener, app).await {
            die(name, &format!("serve: {e}"));
        }
    });
}

/// Prints `name: msg` and exits with status 2.
pub fn die(name: &str, msg: &str) -> ! {
    eprintln!("{name}: {msg}");
    std::process::exit(2);
}

/// The reply in the pieces the gateway's `echo` agent streams it in: word by word, each but the
/// last with its following space.
pub fn echo_pieces(reply: &str) -> Vec<String> {
    let words: Vec<&str> = reply.split(' ').collect();
    let last = words.len().saturating_sub(1);
    words
        .iter()
        .enumerate()
        .map(|(i, w)| if i < last { format!("{w} ") } else { (*w).to_string() })
        .collect()
}

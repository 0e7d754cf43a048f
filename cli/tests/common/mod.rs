//! What the process tests of `e2a serve` share.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running `e2a serve` on 127.0.0.1 (a free port); killed (SIGKILL) on drop if the test did
/// not stop it.
pub struct Serve {
    pub child: Child,
    /// `http://127.0.0.1:PORT`, as the gateway printed it.
    pub base: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Kills the gateway (SIGKILL: no drain) and waits for it.
    #[allow(dead_code)]
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }
}

/// Starts `e2a serve --bind 127.0.0.1:0 ARGS` (warnings on stderr) and waits for its URL.
pub fn serve(args: &[&str]) -> Serve {
    serve_at("127.0.0.1:0", args)
}

/// Starts `e2a serve --bind BIND ARGS` (warnings on stderr) and waits for its URL.
pub fn serve_at(bind: &str, args: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_e2a"))
        .args(["serve", "--bind", bind])
        .args(args)
        .env("E2A_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn e2a serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("first line");
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    Serve {
        child,
        base,
        _stdout: stdout,
    }
}

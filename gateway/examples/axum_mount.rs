//! Mounting the gateway into an existing axum app: your routes stay yours, the E2A binding
//! (`POST /v1/e2a/requests`, `GET /v1/e2a/schema`, `/healthz`) and AG-UI over SSE
//! (`POST /agui`, `POST /agents/{name}/agui`) are merged in, and a second copy of the AG-UI
//! routes is nested under `/copilot`.
//!
//! ```sh
//! cargo run -p e2a-gateway --example axum_mount            # listens on 127.0.0.1:8080
//! curl -N -H 'Content-Type: application/json' \
//!   -d '{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}' \
//!   http://127.0.0.1:8080/agui
//! ```

use axum::routing::get;
use axum::Router;
use e2a_gateway::backends::EchoAgent;
use e2a_gateway::{Gateway, GatewayConfig};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let gateway = Gateway::new(EchoAgent::new(), GatewayConfig::default()).with_agui();

    // the app you already have
    let app = Router::new()
        .route("/", get(|| async { "my app" }))
        .route("/api/version", get(|| async { env!("CARGO_PKG_VERSION") }))
        // the gateway's routes (E2A + AG-UI, authentication included). The gateway router
        // carries a fallback (problem+json 404), so merge it into an app without one.
        .merge(gateway.router())
        // AG-UI alone, under a prefix of your choice
        .nest("/copilot", gateway.agui_router());

    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    println!("  GET  /  /api/version  (yours)");
    println!("  POST /v1/e2a/requests  POST /agui  POST /copilot/agui");
    axum::serve(listener, app).await
}

//! What of an agent card a run needs: the interfaces it lists (1.0's `supportedInterfaces`, or
//! 0.3's own form) and the one runs post to, picked as the official clients pick it.

use e2a::a2a::v0_3;
use e2a::types::A2aVersion;
use serde::Deserialize;

use super::exchange::{Interface, Wire};
use super::urls::{named, origin, plain};
use super::A2aRemoteAgent;

impl A2aRemoteAgent {
    /// Fetches the card and picks the interface runs post to ([`CardInterfaces::pick`]), on the
    /// card's origin.
    pub(super) async fn discover(&self) -> Result<Interface, String> {
        let get = self.client.get(&self.card_url).header("A2A-Version", "1.0");
        let get = self.credited(get, "GET", &self.card_url, b"");
        let card_url = named(&self.card_url);
        let resp = get
            .send()
            .await
            .map_err(|e| format!("cannot fetch the agent card {card_url}: {}", plain(&e.without_url())))?;
        if !resp.status().is_success() {
            return Err(format!(
                "the agent card {card_url} answered HTTP {}",
                resp.status().as_u16()
            ));
        }
        let text = resp
            .text()
            .await
            .map_err(|e| format!("cannot read the agent card {card_url}: {}", plain(&e.without_url())))?;
        let card: CardInterfaces =
            serde_json::from_str(&text).map_err(|e| format!("the agent card {card_url} is not a card: {e}"))?;
        let interface = card.pick(self.version).ok_or_else(|| {
            format!("the agent card {card_url} lists no JSON-RPC or HTTP+JSON interface of A2A 1.0 or 0.3")
        })?;
        if origin(&interface.url) != origin(&self.card_url) {
            return Err("the agent card's interface is on another origin than the card; refused".into());
        }
        Ok(interface)
    }
}

/// The interfaces an agent card lists (the part of the card a run needs): 1.0's
/// `supportedInterfaces`, or 0.3's main interface (`url`, `preferredTransport`,
/// `protocolVersion`) and its `additionalInterfaces`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct CardInterfaces {
    #[serde(default)]
    supported_interfaces: Vec<CardInterface>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    preferred_transport: Option<String>,
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(default)]
    additional_interfaces: Vec<LegacyInterface>,
}

/// One `AgentInterface` of a card.
#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct CardInterface {
    #[serde(default)]
    url: String,
    #[serde(default)]
    protocol_binding: String,
    #[serde(default)]
    protocol_version: Option<String>,
}

/// One of a 0.3 card's `additionalInterfaces`.
#[derive(Deserialize)]
struct LegacyInterface {
    #[serde(default)]
    url: String,
    #[serde(default)]
    transport: String,
}

impl CardInterfaces {
    /// Its interfaces, a 0.3 card's read as 1.0 lists them (of the card's `protocolVersion`,
    /// 0.3 when it names none; the main one's binding `preferredTransport`, else JSON-RPC).
    fn interfaces(self) -> Vec<CardInterface> {
        if !self.supported_interfaces.is_empty() {
            return self.supported_interfaces;
        }
        let Some(url) = self.url else { return Vec::new() };
        let version = Some(self.protocol_version.unwrap_or_else(|| "0.3.0".into()));
        let main = CardInterface {
            url,
            protocol_binding: self.preferred_transport.unwrap_or_else(|| "JSONRPC".into()),
            protocol_version: version.clone(),
        };
        let others = self.additional_interfaces.into_iter().map(|i| CardInterface {
            url: i.url,
            protocol_binding: i.transport,
            protocol_version: version.clone(),
        });
        std::iter::once(main).chain(others).collect()
    }

    /// The interface runs post to, as the official clients pick it: JSON-RPC of 1.0 (or of no
    /// version), else HTTP+JSON of 1.0, else JSON-RPC of 0.3, else HTTP+JSON of 0.3 — spoken
    /// in its version, or in `version` when one is configured. `None`: no interface of these.
    pub(super) fn pick(self, version: Option<A2aVersion>) -> Option<Interface> {
        // whether an interface's version is 0.3 (`Some(true)`), 1.0 (`Some(false)`) or neither
        let is_0_3 = |i: &CardInterface| match i.protocol_version.as_deref().map(str::trim) {
            None | Some("") => Some(false),
            Some(v) if v.starts_with("1.") || v == "1" => Some(false),
            Some(v) => v0_3::is_version(v).then_some(true),
        };
        let interfaces = self.interfaces();
        let order = [
            (false, "JSONRPC"),
            (false, "HTTP+JSON"),
            (true, "JSONRPC"),
            (true, "HTTP+JSON"),
        ];
        let (said_0_3, i) = order.into_iter().find_map(|(v0_3, binding)| {
            let i = interfaces
                .iter()
                .find(|i| i.protocol_binding == binding && is_0_3(i) == Some(v0_3))?;
            Some((v0_3, i))
        })?;
        Some(Interface {
            url: i.url.clone(),
            wire: if i.protocol_binding == "JSONRPC" {
                Wire::JsonRpc
            } else {
                Wire::Rest
            },
            v0_3: match version {
                Some(A2aVersion::X03) => true,
                Some(A2aVersion::X10) => false,
                None => said_0_3,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The interface picked from `card` (with `version` configured): URL, wire, whether 0.3.
    fn pick(card: Value, version: Option<A2aVersion>) -> Option<(String, Wire, bool)> {
        let card: CardInterfaces = serde_json::from_value(card).ok()?;
        card.pick(version).map(|i| (i.url, i.wire, i.v0_3))
    }

    fn interface(url: &str, binding: &str, version: Option<&str>) -> Value {
        json!({"url": url, "protocolBinding": binding, "protocolVersion": version})
    }

    #[test]
    fn the_card_picks_as_the_official_clients_do() {
        let all = json!({"supportedInterfaces": [
            interface("http://h/rest03", "HTTP+JSON", Some("0.3.0")),
            interface("http://h/rpc03", "JSONRPC", Some("0.3.0")),
            interface("http://h/rest", "HTTP+JSON", Some("1.0")),
            interface("http://h/rpc", "JSONRPC", Some("1.0")),
        ]});
        assert_eq!(pick(all, None), Some(("http://h/rpc".into(), Wire::JsonRpc, false)));
        let no_rpc_1_0 = json!({"supportedInterfaces": [
            interface("http://h/rpc03", "JSONRPC", Some("0.3")),
            interface("http://h/rest", "HTTP+JSON", None),
        ]});
        assert_eq!(
            pick(no_rpc_1_0, None),
            Some(("http://h/rest".into(), Wire::Rest, false))
        );
        let only_0_3 = json!({"supportedInterfaces": [
            interface("http://h/rest03", "HTTP+JSON", Some("0.3.0")),
            interface("http://h/rpc03", "JSONRPC", Some("0.3.0")),
            interface("http://h/grpc", "GRPC", Some("1.0")),
        ]});
        assert_eq!(
            pick(only_0_3.clone(), None),
            Some(("http://h/rpc03".into(), Wire::JsonRpc, true))
        );
        // GoAI's card: a 1.0 server under a 0.3.0 label, spoken to in 1.0 when configured so
        let goai =
            json!({"supportedInterfaces": [interface("http://h/a2a/agents/writer", "HTTP+JSON", Some("0.3.0"))]});
        assert_eq!(
            pick(goai.clone(), None),
            Some(("http://h/a2a/agents/writer".into(), Wire::Rest, true))
        );
        assert_eq!(
            pick(goai, Some(A2aVersion::X10)),
            Some(("http://h/a2a/agents/writer".into(), Wire::Rest, false))
        );
        assert_eq!(pick(only_0_3, Some(A2aVersion::X10)).map(|p| p.2), Some(false));
        let neither = json!({"supportedInterfaces": [
            interface("http://h/old", "JSONRPC", Some("0.2.5")),
            interface("http://h/next", "JSONRPC", Some("2.0")),
            interface("http://h/grpc", "GRPC", None),
        ]});
        assert_eq!(pick(neither, None), None);
    }

    #[test]
    fn a_card_of_0_3s_own_form_is_read() {
        let legacy = json!({"name": "old", "url": "http://h/rpc", "protocolVersion": "0.3.0",
            "additionalInterfaces": [{"url": "http://h/rest", "transport": "HTTP+JSON"}]});
        assert_eq!(pick(legacy, None), Some(("http://h/rpc".into(), Wire::JsonRpc, true)));
        let rest_first = json!({"url": "http://h/rest", "preferredTransport": "HTTP+JSON"});
        assert_eq!(pick(rest_first, None), Some(("http://h/rest".into(), Wire::Rest, true)));
        assert_eq!(pick(json!({"name": "no interface"}), None), None);
    }
}

//! Where a push notification may go (SSRF): by default only `https` URLs whose host resolves to
//! public addresses. A webhook URL is checked when its config is created (a clear refusal to
//! the client: the scheme, a literal address, `localhost`) and at every delivery by the
//! resolver the delivery client connects through: the addresses it connects to are the ones
//! checked, so a name that resolves to a private address, now or later (DNS rebinding), is
//! refused.
//! Redirects are not followed and proxies are not used.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;

/// Whether `ip` is a public unicast address: not loopback, private, link-local, shared
/// (CGNAT), unspecified, broadcast, multicast, documentation, benchmarking or reserved; an
/// IPv4-mapped, IPv4-compatible, NAT64, 6to4 or Teredo IPv6 address is judged by the IPv4
/// address it carries (a Teredo address by both), and local-use NAT64 is never public.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // shared address space (RFC 6598)
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments (RFC 6890)
        || (a == 192 && b == 0 && c == 0)
        // benchmarking (RFC 2544)
        || (a == 198 && (b == 18 || b == 19))
        // reserved (RFC 1112)
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // NAT64 (RFC 6052): the IPv4 address in the last 32 bits
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(v4(s[6], s[7]));
    }
    // local-use NAT64 (RFC 8215, 64:ff9b:1::/48): a network's own translator, the IPv4
    // address at a place its prefix length decides: never a public target
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return false;
    }
    // 6to4 (RFC 3056, 2002::/16): the IPv4 address in bits 16-47
    if s[0] == 0x2002 {
        return is_public_v4(v4(s[1], s[2]));
    }
    // Teredo (RFC 4380, 2001::/32): the server's IPv4 address in bits 32-63 and the client's,
    // inverted, in the last 32 bits; both must be public
    if s[0] == 0x2001 && s[1] == 0 {
        return is_public_v4(v4(s[2], s[3])) && is_public_v4(v4(!s[6], !s[7]));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // IPv4-compatible (deprecated) and other addresses in ::/96
        || s[..6] == [0, 0, 0, 0, 0, 0]
        // unique local fc00::/7
        || (s[0] & 0xfe00) == 0xfc00
        // link-local fe80::/10, site-local fec0::/10 (deprecated)
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        // documentation 2001:db8::/32
        || (s[0] == 0x2001 && s[1] == 0x0db8))
}

/// Which webhooks are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Development only: `http` URLs and loopback, private and link-local addresses too.
    pub allow_private: bool,
}

impl TargetPolicy {
    /// `url` read and checked as a webhook: absolute, `https` (or `http` when private targets
    /// are allowed), with a host and no credentials in it; an IP-literal host must be public.
    /// A host name is checked when it is resolved ([`TargetPolicy::check_resolves`]).
    pub fn check_url(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url.trim()).map_err(|e| format!("not an absolute URL ({e})"))?;
        match parsed.scheme() {
            "https" => {}
            "http" if self.allow_private => {}
            "http" => return Err(
                "webhooks must be https (plain http is allowed only with the development flag `--push-allow-private`)"
                    .into(),
            ),
            other => return Err(format!("unsupported scheme `{other}`: webhooks must be https")),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("credentials in the URL are not accepted: use `authentication`".into());
        }
        match parsed.host() {
            None => return Err("the URL has no host".into()),
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip))?,
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip))?,
            // `localhost` and its subdomains are loopback whatever DNS says (RFC 6761 §6.3)
            Some(url::Host::Domain(name)) if !self.allow_private && crate::web::is_loopback_host(name) => {
                return Err(format!(
                    "{name} is a loopback name: webhooks must be public (allowed only with the development flag \
                     `--push-allow-private`)"
                ))
            }
            Some(url::Host::Domain(_)) => {}
        }
        Ok(parsed)
    }

    fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(format!(
                "{ip} is a loopback, private, link-local or reserved address: webhooks must be public \
                 (allowed only with the development flag `--push-allow-private`)"
            ))
        }
    }

    /// Resolves `url`'s host (a name) and checks every address it resolves to.
    pub async fn check_resolves(&self, url: &Url) -> Result<(), String> {
        let Some(url::Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .collect();
        if addrs.is_empty() {
            return Err(format!("{host} resolves to no address"));
        }
        addrs.iter().try_for_each(|a| self.check_ip(a.ip()))
    }

    /// The resolver a delivery client connects through: only the addresses this policy
    /// allows.
    pub(crate) fn resolver(self) -> Arc<Resolver> {
        Arc::new(Resolver { policy: self })
    }
}

/// A DNS resolver that leaves out the addresses its policy refuses (and fails when none is
/// left), so a delivery never connects to one.
pub(crate) struct Resolver {
    policy: TargetPolicy,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| policy.check_ip(a.ip()).is_ok()).collect();
            if allowed.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves to no public address (webhooks must be public)").into();
                return Err(e);
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::127.0.0.1",
            // local-use NAT64, whatever it embeds
            "64:ff9b:1::101:101",
            "64:ff9b:1:7f00:1::",
            // 6to4 of 127.0.0.1, 10.0.0.1, 169.254.169.254
            "2002:7f00:1::1",
            "2002:a00:1::",
            "2002:a9fe:a9fe::1",
            // Teredo: client 127.0.0.1 (inverted: 80ff:fffe), server public; server private
            "2001:0:101:101::80ff:fffe",
            "2001:0:a00:1::fefe:fefe",
        ] {
            assert!(!is_public(ip(private)), "{private} is not public");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            // 6to4 of 1.1.1.1; Teredo of server 1.1.1.1, client 1.1.1.1 (inverted fefe:fefe)
            "2002:101:101::1",
            "2001:0:101:101::fefe:fefe",
        ] {
            assert!(is_public(ip(public)), "{public} is public");
        }
    }

    #[test]
    fn webhook_urls_are_https_to_public_hosts_unless_private_targets_are_allowed() {
        let strict = TargetPolicy { allow_private: false };
        let dev = TargetPolicy { allow_private: true };
        assert!(strict.check_url("https://hooks.example.com/a2a").is_ok());
        assert!(strict.check_url("https://1.1.1.1/hook").is_ok());
        for (url, why) in [
            ("http://hooks.example.com/a2a", "must be https"),
            ("https://127.0.0.1:9/hook", "127.0.0.1 is a loopback"),
            ("https://[::1]/hook", "::1 is a loopback"),
            ("https://169.254.169.254/latest", "169.254.169.254"),
            ("ftp://example.com/x", "unsupported scheme"),
            ("https://user:pw@example.com/x", "credentials in the URL"),
            ("/relative", "not an absolute URL"),
        ] {
            let e = strict.check_url(url).expect_err(url);
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains("pw@"), "{e}");
        }
        assert!(dev.check_url("http://127.0.0.1:8080/hook").is_ok());
        assert!(dev.check_url("ftp://127.0.0.1/x").is_err());
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_after_resolution() {
        let strict = TargetPolicy { allow_private: false };
        // `localhost` is refused by name, without DNS
        for name in ["https://localhost:9/hook", "https://api.LocalHost./hook"] {
            let e = strict.check_url(name).expect_err("localhost");
            assert!(e.contains("loopback"), "{e}");
        }
        assert!(strict.check_url("https://localhost-proxy.example/hook").is_ok());
        // a name resolving to loopback is refused once resolved
        let url = Url::parse("https://localhost:9/hook").expect("url");
        let e = strict.check_resolves(&url).await.expect_err("localhost is loopback");
        assert!(e.contains("loopback"), "{e}");
        let dev = TargetPolicy { allow_private: true };
        dev.check_resolves(&url).await.expect("allowed for development");
    }
}

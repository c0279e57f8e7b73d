//! Optional access rules beyond upstream (which has none): a bearer token and a client address
//! allow-list.

use std::net::IpAddr;

/// A CIDR block such as `10.0.0.0/8` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

/// A CIDR that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR {0:?}: expected ADDRESS/PREFIX")]
pub struct CidrError(pub String);

impl std::str::FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || CidrError(s.to_string());
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().map_err(|_| err())?,
            None => max,
        };
        if prefix > max {
            return Err(err());
        }
        Ok(Cidr { addr, prefix })
    }
}

impl Cidr {
    /// Whether `ip` is inside the block (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            (IpAddr::V6(a), IpAddr::V6(b)) => prefix_eq(&a.octets(), &b.octets(), self.prefix),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let full = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a.get(..full) != b.get(..full) {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    match (a.get(full), b.get(full)) {
        (Some(x), Some(y)) => x & mask == y & mask,
        _ => false,
    }
}

/// Who may fetch configs and metrics.
#[derive(Debug, Clone, Default)]
pub struct AccessPolicy {
    /// A bearer token every config and metrics request must carry.
    pub token: Option<String>,
    /// Client address blocks allowed to fetch configs and metrics; empty allows all.
    pub allow: Vec<Cidr>,
}

/// Compares in time independent of where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn matches_blocks() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap_or(Cidr {
            addr: ip("0.0.0.0"),
            prefix: 32,
        });
        assert!(c.contains(ip("10.1.200.3")));
        assert!(!c.contains(ip("10.2.0.1")));
        assert!(c.contains(ip("::ffff:10.1.0.9")));
        let one: Cidr = "127.0.0.1".parse().unwrap_or(Cidr {
            addr: ip("0.0.0.0"),
            prefix: 32,
        });
        assert!(one.contains(ip("127.0.0.1")));
        let v6: Cidr = "fd00::/8".parse().unwrap_or(Cidr {
            addr: ip("0.0.0.0"),
            prefix: 32,
        });
        assert!(v6.contains(ip("fd12::1")));
        assert!(!v6.contains(ip("fe80::1")));
        let odd: Cidr = "192.168.0.0/20".parse().unwrap_or(Cidr {
            addr: ip("0.0.0.0"),
            prefix: 32,
        });
        assert!(odd.contains(ip("192.168.15.1")));
        assert!(!odd.contains(ip("192.168.16.1")));
    }

    #[test]
    fn rejects_bad_blocks() {
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("nope/8".parse::<Cidr>().is_err());
    }
}

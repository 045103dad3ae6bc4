//! Finding the members' client URLs when the user does not list them all:
//! from DNS SRV records as etcdctl's `--discovery-srv` does, or from
//! `MemberList` on the first given endpoint that answers.
//!
//! etcdctl looks up `_etcd-client-ssl._tcp.DOMAIN` (each record an
//! `https://` URL) and `_etcd-client._tcp.DOMAIN` (`http://`);
//! `--discovery-srv-name NAME` makes the services `_etcd-client-ssl-NAME`
//! and `_etcd-client-NAME`.

use super::{members, reason, Connection, EtcdError};

/// Where the endpoints come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Discovery {
    /// `--endpoints` as given.
    #[default]
    Given,
    /// Every member's client URLs, from `MemberList` on the first given
    /// endpoint that answers (`--endpoints-from-members`).
    Members,
    /// DNS SRV records of `domain` (`--discovery-srv`, with
    /// `--discovery-srv-name`).
    Srv { domain: String, name: Option<String> },
}

/// The SRV names etcdctl looks up for `domain`, each with the URL scheme
/// its records serve.
fn srv_names(domain: &str, name: Option<&str>) -> [(&'static str, String); 2] {
    let suffix = name.map_or(String::new(), |n| format!("-{n}"));
    let domain = domain.trim_end_matches('.');
    [
        ("https", format!("_etcd-client-ssl{suffix}._tcp.{domain}.")),
        ("http", format!("_etcd-client{suffix}._tcp.{domain}.")),
    ]
}

/// The client URL an SRV record names: `scheme://target:port`, the target
/// without its final dot.
fn srv_url(scheme: &str, target: &str, port: u16) -> String {
    format!("{scheme}://{}:{port}", target.trim_end_matches('.'))
}

/// Every URL once, in the order first seen.
fn distinct(urls: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for url in urls {
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

/// The client URLs the SRV records of `domain` name.
async fn from_srv(domain: &str, name: Option<&str>) -> Result<Vec<String>, EtcdError> {
    let failed = |reason: String| EtcdError::Discovery {
        domain: domain.to_string(),
        reason,
    };
    let resolver = hickory_resolver::Resolver::builder_tokio()
        .map_err(|e| failed(format!("cannot read the system's DNS configuration: {e}")))?
        .build();
    let mut urls = Vec::new();
    let mut looked = Vec::new();
    for (scheme, service) in srv_names(domain, name) {
        match resolver.srv_lookup(service.as_str()).await {
            Ok(records) => urls.extend(
                records
                    .iter()
                    .map(|srv| srv_url(scheme, &srv.target().to_ascii(), srv.port())),
            ),
            Err(e) if e.is_no_records_found() => looked.push(format!("{service}: no records")),
            Err(e) => looked.push(format!("{service}: {e}")),
        }
    }
    match urls.is_empty() {
        true => Err(failed(looked.join("; "))),
        false => Ok(distinct(urls)),
    }
}

/// The endpoints given, then every member's client URLs, from the first
/// given endpoint that answers `MemberList`.
async fn from_members(connection: &Connection) -> Result<Vec<String>, EtcdError> {
    let mut tried = Vec::new();
    for (endpoint, probed) in members::probe_all(connection).await? {
        let member = match probed {
            Ok(member) => member,
            Err(members::Refused::Fatal(e)) => return Err(e),
            Err(members::Refused::Unhealthy(why)) => {
                tried.push(format!("{endpoint}: {why}"));
                continue;
            }
        };
        let listed = tokio::time::timeout(
            connection.dial_timeout,
            member.client.cluster_client().member_list(),
        )
        .await;
        match listed {
            Ok(Ok(list)) => {
                // The endpoints given stay first: they are preferred.
                let listed = list.members().iter().flat_map(|m| m.client_urls().to_vec());
                return Ok(distinct(connection.endpoints.iter().cloned().chain(listed)));
            }
            Ok(Err(e)) => tried.push(format!("{endpoint}: {}", reason(&e))),
            Err(_) => tried.push(format!(
                "{endpoint}: no member list within {:?}",
                connection.dial_timeout
            )),
        }
    }
    Err(EtcdError::NoMember(tried.join("; ")))
}

impl Connection {
    /// The endpoints to choose from, found as `discovery` says.
    pub(super) async fn discovered(&self) -> Result<Connection, EtcdError> {
        let endpoints = match &self.discovery {
            Discovery::Given => return Ok(self.clone()),
            Discovery::Members => from_members(self).await?,
            Discovery::Srv { domain, name } => from_srv(domain, name.as_deref()).await?,
        };
        Ok(Connection {
            endpoints,
            discovery: Discovery::Given,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srv_names_follow_etcdctl() {
        assert_eq!(
            srv_names("example.com", None),
            [
                ("https", "_etcd-client-ssl._tcp.example.com.".to_string()),
                ("http", "_etcd-client._tcp.example.com.".to_string()),
            ]
        );
        assert_eq!(
            srv_names("example.com.", Some("prod")),
            [
                ("https", "_etcd-client-ssl-prod._tcp.example.com.".to_string()),
                ("http", "_etcd-client-prod._tcp.example.com.".to_string()),
            ]
        );
    }

    #[test]
    fn srv_records_become_client_urls_once_each() {
        assert_eq!(
            srv_url("https", "etcd-0.example.com.", 2379),
            "https://etcd-0.example.com:2379"
        );
        let urls = distinct(
            ["https://a:2379", "https://b:2379", "https://a:2379"]
                .iter()
                .map(|s| s.to_string()),
        );
        assert_eq!(urls, ["https://a:2379", "https://b:2379"]);
    }
}

//! Name conversions shared by the generator.

/// Lower-case alphanumerics only: the key that matches a Rust field name
/// (`host_i_ps`, `r#ref`, `x_kubernetes_embedded_resource`) to its JSON name
/// (`hostIPs`, `$ref`, `x-kubernetes-embedded-resource`).
pub fn normalize(name: &str) -> String {
    name.trim_start_matches("r#")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Words Kubernetes writes in capitals inside JSON and Go names.
const ACRONYMS: &[&str] = &[
    "API", "CIDR", "CIDRs", "CPU", "CSI", "DNS", "FC", "FQDN", "GCE", "HTTP", "HTTPS", "ID", "IDs", "IP",
    "IPC", "IPs", "ISCSI", "JSON", "NFS", "OS", "PID", "QOS", "RBD", "SCTP", "SSL", "TCP", "TLS", "TTL",
    "UDP", "UID", "UIDs", "URI", "URL", "URLs", "UUID", "WWIDs", "WWNs",
];

fn acronym(word: &str) -> Option<&'static str> {
    ACRONYMS.iter().copied().find(|a| a.eq_ignore_ascii_case(word))
}

/// Kubernetes' JSON spelling of a snake_case Rust field name: lowerCamelCase
/// with known acronyms upper-cased after the first word (`pod_ip` → `podIP`).
pub fn json_name_from_rust(rust: &str) -> String {
    let mut out = String::new();
    for (i, word) in rust.trim_start_matches("r#").split('_').enumerate() {
        if word.is_empty() {
            continue;
        }
        if i == 0 {
            out.push_str(&word.to_ascii_lowercase());
        } else if let Some(a) = acronym(word) {
            out.push_str(a);
        } else {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    out
}

/// Go's spelling of a prost (UpperCamelCase) type name: known acronyms in
/// capitals (`PodIp` → `PodIP`, `JsonSchemaProps` → `JSONSchemaProps`).
pub fn go_type_name_from_rust(rust: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for c in rust.chars() {
        if c.is_ascii_uppercase() || words.is_empty() {
            words.push(String::new());
        }
        words.last_mut().expect("pushed above").push(c);
    }
    words
        .iter()
        .map(|w| acronym(w).map(str::to_string).unwrap_or_else(|| w.clone()))
        .collect()
}

/// A protobuf identifier for a JSON name: `$ref` → `ref`,
/// `x-kubernetes-list-type` → `xKubernetesListType`.
pub fn proto_ident(json: &str) -> String {
    let mut out = String::new();
    let mut upper_next = false;
    for c in json.chars() {
        if c.is_ascii_alphanumeric() {
            if upper_next && !out.is_empty() {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper_next = false;
        } else {
            upper_next = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_to_json() {
        assert_eq!(json_name_from_rust("pod_ip"), "podIP");
        assert_eq!(json_name_from_rust("host_ips"), "hostIPs");
        assert_eq!(json_name_from_rust("r#type"), "type");
        assert_eq!(json_name_from_rust("api_version"), "apiVersion");
        assert_eq!(json_name_from_rust("tls_config"), "tlsConfig");
    }

    #[test]
    fn identifiers() {
        assert_eq!(normalize("host_i_ps"), normalize("hostIPs"));
        assert_eq!(normalize("r#ref"), normalize("$ref"));
        assert_eq!(proto_ident("$ref"), "ref");
        assert_eq!(
            proto_ident("x-kubernetes-preserve-unknown-fields"),
            "xKubernetesPreserveUnknownFields"
        );
        assert_eq!(go_type_name_from_rust("JsonSchemaProps"), "JSONSchemaProps");
        assert_eq!(go_type_name_from_rust("PodIp"), "PodIP");
    }
}

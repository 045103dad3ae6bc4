//! The Kubernetes types whose JSON form is not their protobuf structure
//! (times, quantities, int-or-string, embedded JSON, the CRD schema's
//! either-or types), by message name.

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
const APIEXT_V1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.";
const APIEXT_V1BETA1: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.";

/// Kubernetes types whose JSON form is not their protobuf structure.
#[derive(Clone, Copy)]
pub enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    RawJson,
    SchemaOrArray,
    SchemaOrBool,
    SchemaOrStringArray,
}

/// The special form of the message `full_name`, if it has one.
pub fn special(full_name: &str) -> Option<Special> {
    let apiext = full_name
        .strip_prefix(APIEXT_V1)
        .or_else(|| full_name.strip_prefix(APIEXT_V1BETA1));
    if let Some(name) = apiext {
        return match name {
            "JSON" => Some(Special::RawJson),
            "JSONSchemaPropsOrArray" => Some(Special::SchemaOrArray),
            "JSONSchemaPropsOrBool" => Some(Special::SchemaOrBool),
            "JSONSchemaPropsOrStringArray" => Some(Special::SchemaOrStringArray),
            _ => None,
        };
    }
    if let Some(name) = full_name.strip_prefix(META) {
        return match name {
            "Time" => Some(Special::Time),
            "MicroTime" => Some(Special::MicroTime),
            "Duration" => Some(Special::Duration),
            "FieldsV1" => Some(Special::RawJson),
            _ => None,
        };
    }
    match full_name {
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Some(Special::Quantity),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Some(Special::IntOrString),
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Some(Special::RawJson),
        _ => None,
    }
}

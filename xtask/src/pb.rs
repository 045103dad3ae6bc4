//! Facts read from the `k8s-pb` crate's source: prost messages (names,
//! field numbers, protobuf types, nesting) and `Resource` impls (apiVersion,
//! kind, plural, scope).

use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;
use syn::{Expr, ImplItem, Item, Lit, Type};

/// A module path below the crate root, e.g. `["api", "core", "v1"]`.
pub type ModulePath = Vec<String>;

/// A reference to a prost message: its module and Rust name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeRef {
    pub module: ModulePath,
    pub name: String,
}

/// The protobuf type of one value.
#[derive(Clone, Debug)]
pub enum ValueType {
    Scalar(String),
    Message(TypeRef),
}

/// How a field holds its values.
#[derive(Clone, Debug)]
pub enum Shape {
    Optional(ValueType),
    Repeated(ValueType),
    Map { key: String, value: ValueType },
}

#[derive(Clone, Debug)]
pub struct Field {
    /// Rust name without `r#`.
    pub rust_name: String,
    pub tag: u32,
    pub shape: Shape,
}

#[derive(Clone, Debug)]
pub struct Message {
    pub id: TypeRef,
    pub fields: Vec<Field>,
}

/// Scope of a top-level kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
    Subresource,
}

impl Scope {
    pub fn from_type_name(name: &str) -> Result<Self> {
        match name {
            "NamespaceResourceScope" => Ok(Scope::Namespaced),
            "ClusterResourceScope" => Ok(Scope::Cluster),
            "SubResourceScope" => Ok(Scope::Subresource),
            other => bail!("unknown resource scope {other}"),
        }
    }
}

/// One `impl Resource for X` block.
#[derive(Clone, Debug)]
pub struct Resource {
    pub id: TypeRef,
    pub api_version: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub scope: Scope,
}

#[derive(Default)]
pub struct PbCrate {
    pub messages: Vec<Message>,
    pub resources: Vec<Resource>,
}

/// Reads every `mod.rs` under `src_dir` (the k8s-pb `src/`).
pub fn read(src_dir: &Path) -> Result<PbCrate> {
    let mut out = PbCrate::default();
    let mut files = Vec::new();
    crate::collect_files(src_dir, &mut files)?;
    for file in files {
        if file.file_name().and_then(|n| n.to_str()) != Some("mod.rs") {
            continue;
        }
        let module: ModulePath = file
            .parent()
            .expect("file has a parent")
            .strip_prefix(src_dir)?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let parsed = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
        read_items(&module, &parsed.items, &mut out)
            .with_context(|| format!("reading {}", file.display()))?;
    }
    Ok(out)
}

fn read_items(module: &ModulePath, items: &[Item], out: &mut PbCrate) -> Result<()> {
    for item in items {
        match item {
            Item::Struct(s) if is_prost_message(&s.attrs) => {
                let id = TypeRef {
                    module: module.clone(),
                    name: s.ident.to_string(),
                };
                let mut fields = Vec::new();
                for f in &s.fields {
                    let Some(attr) = f.attrs.iter().find(|a| a.path().is_ident("prost")) else {
                        continue;
                    };
                    let rust_name = f
                        .ident
                        .as_ref()
                        .ok_or_else(|| anyhow!("tuple field"))?
                        .to_string();
                    let rust_name = rust_name.trim_start_matches("r#").to_string();
                    let field = read_field(module, rust_name, attr, &f.ty)
                        .with_context(|| format!("field {}.{:?}", s.ident, f.ident))?;
                    fields.push(field);
                }
                out.messages.push(Message { id, fields });
            }
            Item::Impl(imp) => {
                let is_resource = imp
                    .trait_
                    .as_ref()
                    .and_then(|(_, p, _)| p.segments.last())
                    .is_some_and(|s| s.ident == "Resource");
                if is_resource {
                    out.resources.push(read_resource(module, imp)?);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn is_prost_message(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("derive") && quote_tokens(a).contains("Message"))
}

fn quote_tokens(a: &syn::Attribute) -> String {
    match &a.meta {
        syn::Meta::List(l) => l.tokens.to_string(),
        _ => String::new(),
    }
}

fn read_field(module: &ModulePath, rust_name: String, attr: &syn::Attribute, ty: &Type) -> Result<Field> {
    let mut kind: Option<String> = None;
    let mut map_spec: Option<String> = None;
    let mut repeated = false;
    let mut tag: Option<u32> = None;
    attr.parse_nested_meta(|meta| {
        let name = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match name.as_str() {
            "optional" | "required" | "boxed" => {}
            // proto2 repeated scalars are unpacked unless marked otherwise.
            "packed" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                if lit.value() != "false" {
                    return Err(
                        meta.error("packed repeated fields are not expected in Kubernetes' proto2 schema")
                    );
                }
            }
            "repeated" => repeated = true,
            "tag" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                tag = Some(lit.value().parse().map_err(|e| meta.error(format!("{e}")))?);
            }
            "btree_map" | "hash_map" => {
                let lit: syn::LitStr = meta.value()?.parse()?;
                map_spec = Some(lit.value());
            }
            "bytes" => {
                if meta.input.peek(syn::Token![=]) {
                    let _: syn::LitStr = meta.value()?.parse()?;
                }
                kind = Some("bytes".into());
            }
            other => kind = Some(other.to_string()),
        }
        Ok(())
    })?;
    let tag = tag.ok_or_else(|| anyhow!("no tag"))?;
    let value_type = |k: &str| -> Result<ValueType> {
        if k == "message" {
            Ok(ValueType::Message(message_ref(module, ty)?))
        } else {
            Ok(ValueType::Scalar(k.to_string()))
        }
    };
    let shape = if let Some(spec) = map_spec {
        let (key, value) = spec
            .split_once(',')
            .ok_or_else(|| anyhow!("bad map spec {spec}"))?;
        Shape::Map {
            key: key.trim().to_string(),
            value: value_type(value.trim())?,
        }
    } else {
        let k = kind.ok_or_else(|| anyhow!("no protobuf type"))?;
        if repeated {
            Shape::Repeated(value_type(&k)?)
        } else {
            Shape::Optional(value_type(&k)?)
        }
    };
    Ok(Field {
        rust_name,
        tag,
        shape,
    })
}

/// The message named by a field's Rust type, looking through `Option`,
/// `Vec`, `Box` and the value of a `BTreeMap`.
fn message_ref(module: &ModulePath, ty: &Type) -> Result<TypeRef> {
    let Type::Path(tp) = ty else {
        bail!("unexpected type form")
    };
    let last = tp.path.segments.last().ok_or_else(|| anyhow!("empty path"))?;
    let wrapper = matches!(
        last.ident.to_string().as_str(),
        "Option" | "Vec" | "Box" | "BTreeMap" | "HashMap"
    );
    if wrapper {
        if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
            let inner = args
                .args
                .iter()
                .filter_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .last()
                .ok_or_else(|| anyhow!("wrapper without type argument"))?;
            return message_ref(module, inner);
        }
    }
    let mut path = module.clone();
    let segs: Vec<String> = tp.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let (name, dirs) = segs.split_last().ok_or_else(|| anyhow!("empty path"))?;
    for d in dirs {
        match d.as_str() {
            "super" => {
                path.pop();
            }
            "crate" => path.clear(),
            other => path.push(other.to_string()),
        }
    }
    Ok(TypeRef {
        module: path,
        name: name.clone(),
    })
}

fn read_resource(module: &ModulePath, imp: &syn::ItemImpl) -> Result<Resource> {
    let Type::Path(tp) = imp.self_ty.as_ref() else {
        bail!("Resource impl for a non-path type")
    };
    let name = tp
        .path
        .segments
        .last()
        .ok_or_else(|| anyhow!("empty path"))?
        .ident
        .to_string();
    let mut consts = std::collections::HashMap::new();
    let mut scope = None;
    for item in &imp.items {
        match item {
            ImplItem::Const(c) => {
                if let Expr::Lit(l) = &c.expr {
                    if let Lit::Str(s) = &l.lit {
                        consts.insert(c.ident.to_string(), s.value());
                    }
                }
            }
            ImplItem::Type(t) if t.ident == "Scope" => {
                if let Type::Path(p) = &t.ty {
                    let last = p.path.segments.last().ok_or_else(|| anyhow!("empty scope"))?;
                    scope = Some(Scope::from_type_name(&last.ident.to_string())?);
                }
            }
            _ => {}
        }
    }
    let get = |k: &str| {
        consts
            .get(k)
            .cloned()
            .ok_or_else(|| anyhow!("Resource for {name} lacks {k}"))
    };
    Ok(Resource {
        id: TypeRef {
            module: module.clone(),
            name: name.clone(),
        },
        api_version: get("API_VERSION")?,
        group: get("GROUP")?,
        kind: get("KIND")?,
        plural: get("URL_PATH_SEGMENT")?,
        scope: scope.ok_or_else(|| anyhow!("Resource for {name} lacks Scope"))?,
    })
}

//! Converting the JSON Schemas of our tools into the OpenAPI-3 subset Gemini's
//! `Schema` object accepts (unknown keywords are a 400 there).
//!
//! Kept: `type` (upper-cased), `format` (only the values Gemini understands),
//! `title`, `description`, `nullable`, `enum` (values as strings), `items`,
//! `minItems`, `maxItems`, `properties`, `required` (only declared names),
//! `minProperties`, `maxProperties`, `minLength`, `maxLength`, `pattern`,
//! `minimum`, `maximum`, `anyOf`, `propertyOrdering`, `default`, `example`.
//! Rewritten: `["string", "null"]` types become `nullable`; `const` becomes a
//! one-value `enum`; `oneOf` becomes `anyOf`; a `null` member of `anyOf` becomes
//! `nullable`; a single-member `anyOf`/`allOf` is inlined; `examples` gives its
//! first value to `example`; a local `$ref` (`#/$defs/Item`, as the Python
//! MCP SDK and pydantic write nested models) is replaced by the schema it
//! points at (its own `description`/`title`/`default` kept), and a recursive
//! or unresolvable one becomes a free-form value. Dropped: everything else
//! (`additionalProperties`, `$schema`, `$id`, `$defs`, `definitions`, `not`,
//! `if`, ...). An object with no
//! properties loses its `type` (Gemini rejects an `OBJECT` without properties),
//! so it stays a free-form value; an array without `items` gets `items: {}`.

use serde_json::{Map, Value};

/// Keywords copied verbatim when present.
const VERBATIM: [&str; 13] = [
    "title",
    "description",
    "nullable",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "default",
];

/// `format` values the Gemini API accepts (others fail the request).
const FORMATS: [&str; 6] = ["enum", "date-time", "int32", "int64", "float", "double"];
/// `$ref`s followed within one another before the rest is left free-form.
const MAX_REF_DEPTH: usize = 16;
/// A `$ref`'s siblings that describe this use of the target, kept over it.
const REF_SIBLINGS: [&str; 3] = ["description", "title", "default"];

/// The whole schema, for local `$ref`s, and the ones being inlined now.
struct Refs<'a> {
    root: &'a Value,
    open: Vec<&'a str>,
}

impl<'a> Refs<'a> {
    /// The target of `reference`, when it is local, resolvable and not
    /// already being inlined (a recursive type) nor too deep.
    fn enter(&mut self, reference: &'a str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        if self.open.contains(&reference) || self.open.len() >= MAX_REF_DEPTH {
            return None;
        }
        let target = self.root.pointer(pointer)?;
        self.open.push(reference);
        Some(target)
    }

    fn leave(&mut self) {
        self.open.pop();
    }
}

/// The `parameters` of a function declaration, or `None` when the tool takes no
/// arguments (Gemini rejects an object schema without properties).
pub(crate) fn function_parameters(schema: &Value) -> Option<Value> {
    let converted = convert(schema);
    let has_properties = converted
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    has_properties.then_some(converted)
}

/// Converts one JSON Schema (its local `$ref`s resolved against itself).
pub(crate) fn convert(schema: &Value) -> Value {
    convert_in(
        schema,
        &mut Refs {
            root: schema,
            open: Vec::new(),
        },
    )
}

/// Converts a (sub)tree of `refs.root`.
fn convert_in<'a>(schema: &'a Value, refs: &mut Refs<'a>) -> Value {
    let Some(source) = schema.as_object() else {
        // `true` / `false` schemas (and garbage) become "anything".
        return Value::Object(Map::new());
    };
    if let Some(reference) = source.get("$ref").and_then(Value::as_str) {
        let mut out = match refs.enter(reference) {
            Some(target) => {
                let inlined = convert_in(target, refs);
                refs.leave();
                inlined
            }
            None => Value::Object(Map::new()),
        };
        if let Value::Object(fields) = &mut out {
            for key in REF_SIBLINGS {
                if let Some(value) = source.get(key) {
                    fields.insert(key.to_owned(), value.clone());
                }
            }
        }
        return out;
    }
    let mut out = Map::new();
    for key in VERBATIM {
        if let Some(value) = source.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(example) = source.get("example").or_else(|| {
        source
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
    }) {
        out.insert("example".to_owned(), example.clone());
    }
    convert_type(source.get("type"), &mut out);
    if let Some(format) = source
        .get("format")
        .and_then(Value::as_str)
        .filter(|f| FORMATS.contains(f))
    {
        out.insert("format".to_owned(), Value::from(format));
    }
    let values = source
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| source.get("const").map(|c| vec![c.clone()]));
    if let Some(values) = values {
        convert_enum(&values, &mut out);
    }
    if let Some(items) = source.get("items") {
        // A tuple (`items: [...]`) keeps its first member's schema.
        let items = items.as_array().and_then(|i| i.first()).unwrap_or(items);
        out.insert("items".to_owned(), convert_in(items, refs));
    }
    convert_properties(source, &mut out, refs);
    convert_alternatives(source, &mut out, refs);
    match out.get("type").and_then(Value::as_str) {
        Some("OBJECT") if !out.contains_key("properties") => {
            out.remove("type");
        }
        // Gemini requires `items` on an array; any element will do.
        Some("ARRAY") if !out.contains_key("items") => {
            out.insert("items".to_owned(), Value::Object(Map::new()));
        }
        _ => {}
    }
    Value::Object(out)
}

/// `type`: a name, or a list of names where `null` means nullable and several
/// others become `anyOf`.
fn convert_type(kind: Option<&Value>, out: &mut Map<String, Value>) {
    let names: Vec<&str> = match kind {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => return,
    };
    if names.contains(&"null") {
        out.insert("nullable".to_owned(), Value::Bool(true));
    }
    let types: Vec<String> = names
        .iter()
        .filter(|n| **n != "null")
        .map(|n| n.to_ascii_uppercase())
        .collect();
    match types.as_slice() {
        [] => {}
        [one] => {
            out.insert("type".to_owned(), Value::from(one.as_str()));
        }
        many => {
            let alternatives = many
                .iter()
                .map(|t| serde_json::json!({ "type": t }))
                .collect();
            out.insert("anyOf".to_owned(), Value::Array(alternatives));
        }
    }
}

/// `enum` values must be strings on the wire; `null` members mean nullable.
fn convert_enum(values: &[Value], out: &mut Map<String, Value>) {
    let mut strings = Vec::with_capacity(values.len());
    for value in values {
        match value {
            Value::Null => {
                out.insert("nullable".to_owned(), Value::Bool(true));
            }
            Value::String(text) => strings.push(Value::from(text.as_str())),
            other => strings.push(Value::from(other.to_string())),
        }
    }
    if !strings.is_empty() {
        out.insert("enum".to_owned(), Value::Array(strings));
        if !out.contains_key("type") {
            out.insert("type".to_owned(), Value::from("STRING"));
        }
    }
}

fn convert_properties<'a>(
    source: &'a Map<String, Value>,
    out: &mut Map<String, Value>,
    refs: &mut Refs<'a>,
) {
    let Some(properties) = source.get("properties").and_then(Value::as_object) else {
        return;
    };
    if properties.is_empty() {
        return;
    }
    let converted: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.clone(), convert_in(schema, refs)))
        .collect();
    let required: Vec<Value> = source
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.as_str().is_some_and(|r| converted.contains_key(r)))
        .cloned()
        .collect();
    if !required.is_empty() {
        out.insert("required".to_owned(), Value::Array(required));
    }
    if let Some(order) = source.get("propertyOrdering") {
        out.insert("propertyOrdering".to_owned(), order.clone());
    }
    out.insert("properties".to_owned(), Value::Object(converted));
    out.entry("type").or_insert_with(|| Value::from("OBJECT"));
}

/// `anyOf` / `oneOf` (→ `anyOf`, `null` members → `nullable`) and `allOf`
/// (members merged, first one wins on conflicts).
fn convert_alternatives<'a>(
    source: &'a Map<String, Value>,
    out: &mut Map<String, Value>,
    refs: &mut Refs<'a>,
) {
    let alternatives: Vec<&Value> = ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|key| source.get(key).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut members = Vec::new();
    for member in alternatives {
        if member.get("type").and_then(Value::as_str) == Some("null") {
            out.insert("nullable".to_owned(), Value::Bool(true));
        } else {
            members.push(convert_in(member, refs));
        }
    }
    let mut merge = |member: Value| {
        if let Value::Object(fields) = member {
            for (key, value) in fields {
                out.entry(key).or_insert(value);
            }
        }
    };
    if members.len() == 1 {
        members.into_iter().for_each(&mut merge);
    } else if !members.is_empty() {
        merge(serde_json::json!({ "anyOf": members }));
    }
    for member in source
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        merge(convert_in(member, refs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_schema_loses_unsupported_keywords() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "where", "format": "uri"},
                "lines": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "gone": {"const": 3},
            },
            "required": ["path", "missing"],
            "additionalProperties": false,
        });
        assert_eq!(
            function_parameters(&schema),
            Some(json!({
                "type": "OBJECT",
                "properties": {
                    "path": {"type": "STRING", "description": "where"},
                    "lines": {"type": "INTEGER", "minimum": 1, "maximum": 10},
                    "mode": {"type": "STRING", "enum": ["a", "b"]},
                    "gone": {"type": "STRING", "enum": ["3"]},
                },
                "required": ["path"],
            }))
        );
    }

    #[test]
    fn nullable_and_alternatives() {
        assert_eq!(
            convert(&json!({"type": ["string", "null"]})),
            json!({"type": "STRING", "nullable": true})
        );
        assert_eq!(
            convert(&json!({"anyOf": [{"type": "integer"}, {"type": "null"}]})),
            json!({"type": "INTEGER", "nullable": true})
        );
        assert_eq!(
            convert(&json!({"oneOf": [{"type": "integer"}, {"type": "string"}]})),
            json!({"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]})
        );
        assert_eq!(
            convert(&json!({"type": ["integer", "string"]})),
            json!({"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]})
        );
    }

    #[test]
    fn nested_and_empty_objects() {
        let schema = json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object",
                "properties": {"k": {"type": "string"}}, "additionalProperties": false}},
            "free": {"type": "object", "additionalProperties": {"type": "string"}},
            "any": {},
        }});
        assert_eq!(
            function_parameters(&schema),
            Some(json!({"type": "OBJECT", "properties": {
                "list": {"type": "ARRAY", "items": {"type": "OBJECT",
                    "properties": {"k": {"type": "STRING"}}}},
                "free": {},
                "any": {},
            }}))
        );
        assert_eq!(
            function_parameters(&json!({"type": "object", "properties": {}})),
            None
        );
    }

    #[test]
    fn local_refs_are_inlined_and_recursive_ones_left_free_form() {
        // As pydantic writes `def ship(order: Order)` with `Order.to: Address`
        // and a recursive `Node`.
        let schema = json!({
            "$defs": {
                "Address": {"type": "object", "title": "Address",
                    "properties": {"city": {"type": "string", "title": "City"}},
                    "required": ["city"]},
                "Order": {"type": "object", "title": "Order",
                    "properties": {
                        "to": {"$ref": "#/$defs/Address", "description": "where it goes"},
                        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
                    },
                    "required": ["to"]},
                "Node": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
            },
            "type": "object",
            "properties": {
                "order": {"$ref": "#/$defs/Order"},
                "tree": {"$ref": "#/$defs/Node"},
                "elsewhere": {"$ref": "https://example.com/schema.json"}
            },
            "required": ["order"],
        });
        assert_eq!(
            function_parameters(&schema),
            Some(json!({
                "type": "OBJECT",
                "properties": {
                    "order": {"type": "OBJECT", "title": "Order",
                        "properties": {
                            "to": {"type": "OBJECT", "title": "Address", "description": "where it goes",
                                "properties": {"city": {"type": "STRING", "title": "City"}},
                                "required": ["city"]},
                            "note": {"type": "STRING", "nullable": true, "default": null}
                        },
                        "required": ["to"]},
                    "tree": {"type": "OBJECT", "properties": {
                        "name": {"type": "STRING"},
                        "children": {"type": "ARRAY", "items": {}}}},
                    "elsewhere": {}
                },
                "required": ["order"],
            }))
        );
    }
}

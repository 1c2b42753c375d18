//! A pass's result as the JavaScript object `compact` resolves to: the library's result
//! with camelCase keys (`tokensBefore`, `cutIndex`, ...), its messages written back in the
//! caller's format and shape (those keep the wire's own spelling).

use llm_compactor::CompactionResult;
use llm_compactor::format::caller::Wire;
use serde_json::{Map, Value};

/// `result` as the object JavaScript gets.
pub fn to_js(mut result: CompactionResult, wire: &Wire) -> Result<Value, String> {
    let (messages, request) = wire.write(std::mem::take(&mut result.messages));
    let value = serde_json::to_value(&result).map_err(|e| e.to_string())?;
    let mut object = match camel_keys(value) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    object.insert("messages".into(), messages);
    object.insert("request".into(), request.unwrap_or(Value::Null));
    object.insert("format".into(), Value::String(wire.format().name().to_owned()));
    Ok(Value::Object(object))
}

/// Every object key of `value` in camelCase, recursively (the result's own records: the
/// receipt, elisions, attempts).
fn camel_keys(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(object.into_iter().map(|(k, v)| (camel(&k), camel_keys(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(camel_keys).collect()),
        other => other,
    }
}

/// `snake_case` as `camelCase`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

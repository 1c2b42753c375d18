//! Python objects read straight into JSON values, without JSON text in between.
//!
//! The conversation arrives as the dicts and lists an SDK produced. Writing them out with
//! `json.dumps` and parsing the text again cost more than the binding's whole overhead
//! target on a large conversation, so they are walked here instead (with the GIL held,
//! which `json.dumps` needed too): dicts with string keys, lists and tuples, strings,
//! ints, floats, bools and `None`; an object with `model_dump()` (a pydantic model, as
//! some SDKs return) is dumped first. Anything else is a `TypeError` naming its type.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How deep a value may nest (a cycle would otherwise recurse until the stack ends).
const MAX_DEPTH: usize = 512;

/// `object` as a JSON value.
pub fn to_value(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    convert(object, 0)
}

fn convert(object: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err("messages nest too deeply (or contain a cycle)"));
    }
    if object.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Value::String(text.to_cow()?.into_owned()));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let key = key
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("message keys must be str, not {}", type_name(&key))))?;
            map.insert(key.to_cow()?.into_owned(), convert(&value, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = object.cast::<PyList>() {
        return list
            .iter()
            .map(|item| convert(&item, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = object.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|item| convert(&item, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    // bool before int: a Python bool is an int.
    if let Ok(flag) = object.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if object.cast::<PyInt>().is_ok() {
        if let Ok(n) = object.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = object.extract::<u64>() {
            return Ok(Value::from(n));
        }
        let n: f64 = object.extract()?;
        return number(n);
    }
    if let Ok(float) = object.cast::<PyFloat>() {
        return number(float.value());
    }
    if let Ok(dump) = object.getattr("model_dump") {
        let kwargs = PyDict::new(object.py());
        kwargs.set_item("mode", "json")?;
        kwargs.set_item("exclude_none", true)?;
        return convert(&dump.call((), Some(&kwargs))?, depth + 1);
    }
    Err(PyTypeError::new_err(format!(
        "messages must be JSON-like (dicts, lists, str, numbers, bools, None), not {}",
        type_name(object)
    )))
}

fn number(n: f64) -> PyResult<Value> {
    Number::from_f64(n)
        .map(Value::Number)
        .ok_or_else(|| PyValueError::new_err(format!("{n} is not a JSON number")))
}

fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

//! The library's typed errors as the Python exceptions of `llm_compactor.errors`.
//!
//! The hierarchy is declared in Python (a class may subclass both `CompactorError` and
//! `ValueError` there, which `create_exception!` cannot say); this module only builds an
//! instance of the right class, with the message index or the setting named as
//! attributes.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use llm_compactor::session::{ManagerError, SessionError};
use llm_compactor::{CompactError, ConfigError};

use crate::wire::WireError;

/// An exception of class `class` (in `llm_compactor.errors`) with `message` and keyword
/// attributes.
pub fn raise(class: &str, message: String, index: Option<usize>, field: Option<&str>) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let module = py.import("llm_compactor.errors")?;
            let class = module.getattr(class)?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("index", index)?;
            kwargs.set_item("field", field)?;
            let instance = class.call((message.clone(),), Some(&kwargs))?;
            Ok(PyErr::from_value(instance))
        };
        build().unwrap_or_else(|e| PyRuntimeError::new_err(format!("{message} (and the exception class failed: {e})")))
    })
}

/// Unreadable input: `InvalidInputError` naming the message index, or
/// `UnsupportedInputError` for a well-formed request the codec does not model.
pub fn wire(error: WireError) -> PyErr {
    let message = match error.index {
        Some(index) => format!("message {index}: {}", error.problem),
        None => error.problem,
    };
    let class = if error.unsupported {
        "UnsupportedInputError"
    } else {
        "InvalidInputError"
    };
    raise(class, message, error.index, None)
}

/// An invalid setting: `ConfigError` naming it.
pub fn config(error: ConfigError) -> PyErr {
    let field = match &error {
        ConfigError::ZeroBudget => Some("budget"),
        ConfigError::RatioOutOfRange { name, .. } | ConfigError::Zero { name } => Some(*name),
        ConfigError::TargetNotBelowTrigger { .. } => Some("target_ratio"),
        _ => None,
    };
    raise("ConfigError", format!("invalid configuration: {error}"), None, field)
}

/// A setting the binding itself refuses (an unknown name, a missing option).
pub fn setting(field: &str, problem: impl std::fmt::Display) -> PyErr {
    raise("ConfigError", problem.to_string(), None, Some(field))
}

/// A compaction that could not start.
pub fn compact(error: CompactError) -> PyErr {
    match error {
        CompactError::InvalidInput { index, problem } => raise(
            "InvalidInputError",
            format!("message {index}: {problem}"),
            Some(index),
            None,
        ),
        other => raise("InvalidInputError", other.to_string(), None, Some("target")),
    }
}

/// A transcript error.
pub fn session(error: SessionError) -> PyErr {
    raise("SessionError", error.to_string(), None, None)
}

/// The agent-loop glue's errors.
pub fn manager(error: ManagerError) -> PyErr {
    match error {
        ManagerError::Session(e) => session(e),
        ManagerError::Compact(e) => compact(e),
        other @ ManagerError::ContextExhausted { .. } => raise("ContextExhaustedError", other.to_string(), None, None),
        other => raise("CompactorError", other.to_string(), None, None),
    }
}

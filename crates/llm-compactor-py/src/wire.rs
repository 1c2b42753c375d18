//! Python's messages in and out: the library's shared binding codec
//! ([`llm_compactor::format::caller`]), re-exported under the name the binding's modules
//! use.

pub use llm_compactor::format::caller::*;

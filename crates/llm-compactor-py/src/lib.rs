//! The Python binding of llm-compactor: the `llm_compactor._core` extension module.
//!
//! Thin on purpose: every rule lives in the library. This crate only carries Python's
//! messages into the library's codecs and back (`wire`), reads the keyword options
//! the way the CLI reads its flags (`options`), lets a Python callable be a summarizer
//! (`summarizer`), and maps the library's typed errors onto the Python exceptions of
//! `llm_compactor.errors` (`errors`). The Python package (`python/llm_compactor`) is
//! the typed API over it.
//!
//! The GIL is released for all of the library's work: parsing, counting, planning,
//! compacting and waiting run in `Python::detach`, on a shared tokio runtime.

#![forbid(unsafe_code)]

mod compactor;
mod errors;
mod options;
mod pyjson;
mod session;
mod summarizer;
mod wire;

use std::sync::OnceLock;

use pyo3::prelude::*;

/// The runtime every pass runs on: `block_on` drives a pass on the calling thread (with
/// the GIL released), so passes from several Python threads run at once; its one worker
/// and blocking pool carry timers and Python summarizer calls.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("llm-compactor")
            .enable_all()
            .build()
            .expect("the tokio runtime starts")
    })
}

/// The extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<compactor::PyCompactor>()?;
    m.add_class::<compactor::CancelToken>()?;
    m.add_class::<session::PySession>()?;
    m.add_class::<session::PyContextManager>()?;
    m.add_function(wrap_pyfunction!(compactor::count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(compactor::detect_format, m)?)?;
    Ok(())
}

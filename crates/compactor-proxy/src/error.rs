//! Typed errors of the proxy, and the JSON bodies clients get for the ones they see.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why the proxy could not start or could not serve a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// An invalid configuration (named setting and problem).
    #[error("invalid proxy configuration: {0}")]
    Config(String),
    /// Binding or serving failed.
    #[error("proxy I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The upstream could not be reached (down, refused, timed out). Clients get 502.
    #[error("the upstream could not be reached: {0}")]
    Upstream(String),
    /// The request body is over the configured bound. Clients get 413.
    #[error("request body over the proxy's limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The request is not a conversation the proxy can read. Clients get 400.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A well-formed request the proxy cannot serve (input items its codec does not
    /// model, on an endpoint it answers itself). Clients get 501.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The session store failed. Clients get 503.
    #[error("session store: {0}")]
    Store(#[from] llm_compactor::store::StoreError),
    /// The proxy's own failure (a record it could not encode or write, a body it could
    /// not serialize): never the client's fault. Clients get 500.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ProxyError {
    fn status(&self) -> StatusCode {
        match self {
            ProxyError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ProxyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ProxyError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
            ProxyError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
            ProxyError::Config(_) | ProxyError::Io(_) | ProxyError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ProxyError::Upstream(_) => "upstream_unreachable",
            ProxyError::TooLarge { .. } => "request_too_large",
            ProxyError::BadRequest(_) => "invalid_request_error",
            ProxyError::Unsupported(_) => "not_supported",
            ProxyError::Store(_) => "store_unavailable",
            ProxyError::Config(_) | ProxyError::Io(_) | ProxyError::Internal(_) => "proxy_error",
        }
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "type": "error",
            "error": {
                "type": self.kind(),
                "message": format!("compactor proxy: {self}"),
            }
        });
        (self.status(), axum::Json(body)).into_response()
    }
}

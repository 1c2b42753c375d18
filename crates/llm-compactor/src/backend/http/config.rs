//! [`HttpBackendBuilder`]: everything a user can set about an HTTP summarizer, validated
//! once at [`HttpBackendBuilder::build`].

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::client::{HttpBackend, Parts};
use super::room::default_input_room;
use super::secret::Secret;
use super::wire::{MaxTokensField, Protocol};

/// Where the API key comes from.
#[derive(Clone, Debug)]
enum KeySource {
    /// The protocol's default variable; when it is unset, OpenAI-compatible backends run
    /// without a key (local servers need none) and Anthropic backends fail to build.
    DefaultEnv,
    /// A variable the user named: it must be set.
    Env(String),
    /// A key given directly.
    Value(Secret),
    /// No key at all.
    None,
}

/// A backend that could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpConfigError {
    /// The API key's environment variable is not set (or not Unicode).
    #[error("the API key variable {env} is not set")]
    MissingApiKey {
        /// The variable's name.
        env: String,
    },
    /// The model name is empty.
    #[error("no model name given")]
    EmptyModel,
    /// The base URL is not an http(s) URL.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An extra header has an invalid name or value.
    #[error("invalid header {name:?}")]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
    /// A timeout of zero.
    #[error("{which} timeout must be greater than zero")]
    ZeroTimeout {
        /// `connect` or `overall`.
        which: &'static str,
    },
    /// The HTTP client could not be created (TLS setup).
    #[error("cannot create the HTTP client: {0}")]
    Client(String),
}

/// Configures an [`HttpBackend`].
///
/// ```
/// use std::time::Duration;
/// use llm_compactor::backend::http::HttpBackend;
/// use llm_compactor::summarize::Summarizer;
///
/// let backend = HttpBackend::openai("qwen2.5-coder-7b")
///     .base_url("http://127.0.0.1:8080/v1")
///     .no_api_key()
///     .timeout(Duration::from_secs(120))
///     .input_room(24_000)
///     .build()
///     .unwrap();
/// assert_eq!(backend.name(), "openai:qwen2.5-coder-7b");
/// assert_eq!(backend.input_room(), Some(24_000));
/// ```
#[derive(Clone)]
pub struct HttpBackendBuilder {
    protocol: Protocol,
    model: String,
    base_url: Option<String>,
    key: KeySource,
    headers: Vec<(String, Secret)>,
    connect_timeout: Duration,
    timeout: Duration,
    input_room: Option<usize>,
    max_tokens_field: Option<MaxTokensField>,
}

/// Default time to establish a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time for a whole request, body included (summaries of big middles are slow).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The entry points to an [`HttpBackend`] are its builders; they live beside the builder
/// so that the backend (`client.rs`) does not name its own configuration.
impl HttpBackend {
    /// A builder for an OpenAI-compatible chat-completions backend.
    pub fn openai(model: impl Into<String>) -> HttpBackendBuilder {
        HttpBackendBuilder::new(Protocol::OpenAi, model)
    }

    /// A builder for an Anthropic Messages backend.
    pub fn anthropic(model: impl Into<String>) -> HttpBackendBuilder {
        HttpBackendBuilder::new(Protocol::Anthropic, model)
    }
}

impl HttpBackendBuilder {
    /// A builder for `protocol` and `model` with every default.
    pub fn new(protocol: Protocol, model: impl Into<String>) -> Self {
        HttpBackendBuilder {
            protocol,
            model: model.into(),
            base_url: None,
            key: KeySource::DefaultEnv,
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_TIMEOUT,
            input_room: None,
            max_tokens_field: None,
        }
    }

    /// The base URL (default [`Protocol::default_base_url`]). For OpenAI-compatible
    /// servers it includes the `/v1`: `http://127.0.0.1:8000/v1`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Read the API key from this environment variable, which must then be set.
    pub fn api_key_env(mut self, env: impl Into<String>) -> Self {
        self.key = KeySource::Env(env.into());
        self
    }

    /// Use this API key.
    pub fn api_key(mut self, key: Secret) -> Self {
        self.key = KeySource::Value(key);
        self
    }

    /// Send no API key (a local server).
    pub fn no_api_key(mut self) -> Self {
        self.key = KeySource::None;
        self
    }

    /// An extra header on every request (a proxy's auth, `OpenAI-Organization`, ...). Its
    /// value is treated as a secret.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), Secret::new(value)));
        self
    }

    /// How long establishing a connection may take (default 10 s). A connection that
    /// does not complete in time is a `Connect` failure.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a whole request may take, reading the body included (default 300 s). A
    /// request that runs out of time after connecting is a `Timeout` failure.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The input room in tokens (default: [`super::default_input_room`] of the model).
    pub fn input_room(mut self, tokens: usize) -> Self {
        self.input_room = Some(tokens);
        self
    }

    /// Which field carries the output budget (OpenAI protocol only; see
    /// [`MaxTokensField`] for the default).
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = Some(field);
        self
    }

    /// Validates the configuration, reads the API key and creates the client.
    ///
    /// # Errors
    /// A missing key variable, an empty model, a bad URL or header, a zero timeout, or a
    /// TLS setup failure.
    pub fn build(self) -> Result<HttpBackend, HttpConfigError> {
        self.build_with_env(|name| std::env::var(name).ok())
    }

    /// As [`HttpBackendBuilder::build`], reading variables through `env` (for tests and
    /// embedders that keep their secrets elsewhere).
    ///
    /// # Errors
    /// As [`HttpBackendBuilder::build`].
    pub fn build_with_env(self, env: impl Fn(&str) -> Option<String>) -> Result<HttpBackend, HttpConfigError> {
        let model = self.model.trim().to_owned();
        if model.is_empty() {
            return Err(HttpConfigError::EmptyModel);
        }
        if self.connect_timeout.is_zero() {
            return Err(HttpConfigError::ZeroTimeout { which: "connect" });
        }
        if self.timeout.is_zero() {
            return Err(HttpConfigError::ZeroTimeout { which: "overall" });
        }
        let base = self
            .base_url
            .clone()
            .unwrap_or_else(|| self.protocol.default_base_url().to_owned());
        let endpoint = endpoint(self.protocol, &base)?;
        let key = match self.key {
            KeySource::Value(key) => Some(key),
            KeySource::None => None,
            KeySource::Env(name) => Some(Secret::new(
                env(&name).ok_or(HttpConfigError::MissingApiKey { env: name })?,
            )),
            KeySource::DefaultEnv => {
                let name = self.protocol.default_api_key_env();
                match (env(name), self.protocol) {
                    (Some(key), _) => Some(Secret::new(key)),
                    (None, Protocol::OpenAi) => None,
                    (None, Protocol::Anthropic) => {
                        return Err(HttpConfigError::MissingApiKey { env: name.to_owned() });
                    }
                }
            }
        }
        .filter(|key| !key.expose().is_empty());
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let invalid = || HttpConfigError::InvalidHeader { name: name.clone() };
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let mut header_value = HeaderValue::from_str(value.expose()).map_err(|_| invalid())?;
            header_value.set_sensitive(true);
            headers.append(header_name, header_value);
        }
        // A connect timeout longer than the whole request would let the overall timer
        // fire first and call a connection that never completed a `Timeout`.
        let connect_timeout = self.connect_timeout.min(self.timeout);
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(self.timeout)
            .default_headers(headers)
            .redirect(super::redirect::policy())
            .user_agent(concat!("llm-compactor/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| HttpConfigError::Client(error.to_string()))?;
        let max_tokens_field = self
            .max_tokens_field
            .unwrap_or(if endpoint.host_str() == Some("api.openai.com") {
                MaxTokensField::MaxCompletionTokens
            } else {
                MaxTokensField::MaxTokens
            });
        let input_room = self.input_room.unwrap_or_else(|| default_input_room(&model));
        Ok(HttpBackend::from_parts(Parts {
            protocol: self.protocol,
            model,
            endpoint,
            client,
            key,
            input_room,
            max_tokens_field,
        }))
    }
}

impl fmt::Debug for HttpBackendBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpBackendBuilder")
            .field("protocol", &self.protocol)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("input_room", &self.input_room)
            .field("max_tokens_field", &self.max_tokens_field)
            .finish()
    }
}

fn endpoint(protocol: Protocol, base: &str) -> Result<reqwest::Url, HttpConfigError> {
    let invalid = |reason: &str| HttpConfigError::InvalidBaseUrl {
        // Never echo a URL that may carry credentials.
        url: if base.contains('@') {
            "<redacted>".to_owned()
        } else {
            base.to_owned()
        },
        reason: reason.to_owned(),
    };
    let trimmed = base.trim().trim_end_matches('/');
    let path = match protocol {
        Protocol::OpenAi => "/chat/completions",
        // Accept `https://api.anthropic.com/v1` too: people copy it from the docs.
        Protocol::Anthropic if trimmed.ends_with("/v1") => "/messages",
        Protocol::Anthropic => "/v1/messages",
    };
    let url = reqwest::Url::parse(&format!("{trimmed}{path}")).map_err(|error| invalid(&error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if url.host_str().is_none() {
        return Err(invalid("no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "credentials in the URL are not supported; use an API key variable",
        ));
    }
    Ok(url)
}

//! OpenTelemetry traces of the proxy (the `otel` feature; off unless configured).
//!
//! Operators run the proxy beside gateways that already report in OpenTelemetry's GenAI
//! conventions, so the proxy speaks them too: one client span per proxied request, named
//! `chat {model}`, with `gen_ai.operation.name`, `gen_ai.provider.name`,
//! `gen_ai.request.model`, `gen_ai.conversation.id` (the session key) and, once the
//! upstream's answer has been relayed, `gen_ai.usage.input_tokens`,
//! `gen_ai.usage.output_tokens` and `gen_ai.usage.cache_read.input_tokens` from its usage;
//! and a `gen_ai.conversation.compacted` event on the span of every request that carried
//! a new pass (tokens before and after, messages replaced, the receipt's net cost).
//!
//! Spans are exported in batches over OTLP/HTTP (JSON) by the SDK's background thread,
//! never on the request path. The HTTP client is the proxy's own reqwest, run on the
//! proxy's runtime. Nothing of the conversation, no key and no header value is ever an
//! attribute.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::{Span as _, SpanKind, Tracer as _, TracerProvider as _};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, Tracer};
use serde_json::Value;

use crate::api::Api;
use crate::pass_done::PassDone;

/// The standard variables that turn tracing on (either names an endpoint).
pub const ENDPOINT_VARS: [&str; 2] = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"];

/// The proxy's tracer and the provider that exports its spans.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: Tracer,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

/// A failure to set up the exporter.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry: {0}")]
pub struct TelemetryError(String);

impl Telemetry {
    /// Tracing as the standard `OTEL_EXPORTER_OTLP_*` environment configures it (endpoint,
    /// headers, timeout), or `None` when no endpoint variable is set. Call it inside the
    /// tokio runtime that serves the proxy: the exporter sends on it.
    ///
    /// # Errors
    /// The environment names an endpoint the exporter cannot use.
    pub fn from_env() -> Result<Option<Arc<Telemetry>>, TelemetryError> {
        if !ENDPOINT_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()))
        {
            return Ok(None);
        }
        Telemetry::build(None).map(Some)
    }

    /// Tracing to the OTLP/HTTP traces endpoint `endpoint` (e.g.
    /// `http://127.0.0.1:4318/v1/traces`), whatever the environment says. Call it inside
    /// the proxy's tokio runtime.
    ///
    /// # Errors
    /// The exporter cannot use `endpoint`.
    pub fn to_endpoint(endpoint: &str) -> Result<Arc<Telemetry>, TelemetryError> {
        Telemetry::build(Some(endpoint))
    }

    fn build(endpoint: Option<&str>) -> Result<Arc<Telemetry>, TelemetryError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TelemetryError("needs a tokio runtime".to_owned()))?;
        let client = OnRuntime {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .map_err(|e| TelemetryError(e.to_string()))?,
            runtime,
        };
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpJson)
            .with_http_client(client);
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let exporter = builder.build().map_err(|e| TelemetryError(e.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("compactor-proxy").build())
            .build();
        let tracer = provider.tracer("compactor-proxy");
        Ok(Arc::new(Telemetry { provider, tracer }))
    }

    /// The span of one proxied request, started now.
    pub(crate) fn request_span(&self, api: Api, model: &str, session: &str) -> Span {
        let provider = match api {
            Api::Anthropic => "anthropic",
            Api::OpenAi | Api::Responses => "openai",
        };
        self.tracer
            .span_builder(format!("chat {model}"))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", provider),
                KeyValue::new("gen_ai.request.model", model.to_owned()),
                KeyValue::new("gen_ai.conversation.id", session.to_owned()),
            ])
            .start(&self.tracer)
    }

    /// Exports what is buffered and stops the exporter (at shutdown).
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "OpenTelemetry: the last spans could not be exported");
        }
    }
}

/// Adds the `gen_ai.conversation.compacted` event of `pass` to `span`.
pub(crate) fn compacted(span: &mut Span, id: &str, pass: &PassDone) {
    let mut attributes = vec![
        KeyValue::new("compactor.pass.id", id.to_owned()),
        KeyValue::new("compactor.tokens_before", pass.tokens_before as i64),
        KeyValue::new("compactor.tokens_after", pass.tokens_after as i64),
        KeyValue::new("compactor.messages_replaced", pass.messages_replaced as i64),
        KeyValue::new("compactor.elisions", pass.elisions as i64),
    ];
    if let Some(net) = pass.net_cost {
        attributes.push(KeyValue::new("compactor.receipt.net_cost", net));
    }
    span.add_event("gen_ai.conversation.compacted", attributes);
}

/// Sets the usage attributes (the prompt tokens as calibration reads them; output and
/// cached tokens from the upstream's usage object, either API's names) and ends the span.
pub(crate) fn finish(mut span: Span, prompt_tokens: Option<u64>, usage: Option<&Value>) {
    if let Some(input) = prompt_tokens {
        span.set_attribute(KeyValue::new("gen_ai.usage.input_tokens", input as i64));
    }
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| n.split('.').try_fold(usage?, |v, k| v.get(k)).and_then(Value::as_i64))
    };
    if let Some(output) = field(&["completion_tokens", "output_tokens"]) {
        span.set_attribute(KeyValue::new("gen_ai.usage.output_tokens", output));
    }
    let cached = field(&[
        "prompt_tokens_details.cached_tokens",
        "input_tokens_details.cached_tokens",
        "cache_read_input_tokens",
    ]);
    if let Some(cached) = cached {
        span.set_attribute(KeyValue::new("gen_ai.usage.cache_read.input_tokens", cached));
    }
    span.end();
}

/// The exporter's HTTP client: the proxy's reqwest, its requests run on the proxy's
/// runtime (the SDK exports from a thread of its own, outside any runtime).
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut outgoing = self.client.request(parts.method, parts.uri.to_string()).body(body);
        for (name, value) in &parts.headers {
            outgoing = outgoing.header(name, value);
        }
        let answer = self
            .runtime
            .spawn(async move {
                let response = outgoing.send().await?;
                let status = response.status();
                let headers = response.headers().clone();
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, headers, body))
            })
            .await??;
        let (status, headers, body) = answer;
        let mut response = Response::builder().status(status.as_u16());
        for (name, value) in &headers {
            response = response.header(name.as_str(), value.as_bytes());
        }
        Ok(response.body(body)?)
    }
}

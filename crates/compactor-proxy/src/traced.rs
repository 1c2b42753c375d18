//! A proxied request's trace, as the routes see it: started, told of the pass the round
//! ran, and handed to the answer's tap, which ends it with the upstream's usage. Without
//! the `otel` feature, or with tracing off, every step is a no-op, so the routes carry no
//! conditional code.

#[cfg(feature = "otel")]
use serde_json::Value;

use crate::api::Api;
use crate::sessions::Prepared;
use crate::state::AppState;
use crate::upstream::UsageHook;

/// The trace of one proxied request (empty when tracing is off).
#[derive(Default)]
pub(crate) struct Traced {
    #[cfg(feature = "otel")]
    span: Option<opentelemetry_sdk::trace::Span>,
}

impl Traced {
    /// Starts the request's span when the proxy traces.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn start(state: &AppState, api: Api, model: &str, session: &str) -> Traced {
        Traced {
            #[cfg(feature = "otel")]
            span: state
                .config
                .telemetry
                .as_ref()
                .map(|t| t.request_span(api, model, session)),
        }
    }

    /// Records the pass `prepared` ran, if it ran one.
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))]
    pub(crate) fn round(&mut self, prepared: &Prepared) {
        #[cfg(feature = "otel")]
        if let (Some(span), Some(done), Some(id)) = (self.span.as_mut(), &prepared.done, &prepared.pass) {
            crate::telemetry::compacted(span, id, done);
        }
    }

    /// What ends the span with the answer's usage (none when tracing is off).
    pub(crate) fn into_hook(self) -> Option<UsageHook> {
        #[cfg(feature = "otel")]
        if let Some(span) = self.span {
            return Some(Box::new(move |prompt: Option<u64>, usage: Option<&Value>| {
                crate::telemetry::finish(span, prompt, usage)
            }));
        }
        None
    }
}

//! A fake OpenTelemetry collector: OTLP over HTTP with protobuf bodies at
//! `POST /v1/traces`, decoded and kept, answered like a real collector.

use super::serve::Served;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Received {
    /// Every export, as decoded.
    exports: Vec<ExportTraceServiceRequest>,
    /// Every body as it came (to search for text that must not be there).
    raw: Vec<Vec<u8>>,
}

pub struct FakeCollector {
    served: Served,
    received: Arc<Mutex<Received>>,
}

impl FakeCollector {
    pub async fn start() -> FakeCollector {
        let received = Arc::new(Mutex::new(Received::default()));
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .with_state(Arc::clone(&received));
        let served = Served::loopback(app, CancellationToken::new(), "fake OTLP collector").await;
        FakeCollector { served, received }
    }

    /// The value for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.served.addr)
    }

    pub fn exports(&self) -> Vec<ExportTraceServiceRequest> {
        self.received.lock().unwrap().exports.clone()
    }

    /// Every span received, with its resource's `service.name`.
    pub fn spans(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        for export in self.exports() {
            for rs in export.resource_spans {
                let service = rs
                    .resource
                    .as_ref()
                    .and_then(|r| text(&r.attributes, "service.name"))
                    .unwrap_or_default();
                for ss in rs.scope_spans {
                    out.extend(ss.spans.into_iter().map(|s| (service.clone(), s)));
                }
            }
        }
        out
    }

    /// The bodies received, as (lossy) text.
    pub fn raw_text(&self) -> String {
        let received = self.received.lock().unwrap();
        received
            .raw
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }
}

async fn traces(
    State(received): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        != Some("application/x-protobuf")
    {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "protobuf only").into_response();
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return (StatusCode::BAD_REQUEST, "not an ExportTraceServiceRequest").into_response();
    };
    {
        let mut r = received.lock().unwrap();
        r.exports.push(request);
        r.raw.push(body.to_vec());
    }
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        answer,
    )
        .into_response()
}

/// The string attribute `key`.
pub fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    match value(attributes, key)? {
        any_value::Value::StringValue(s) => Some(s),
        _ => None,
    }
}

/// The integer attribute `key`.
pub fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match value(attributes, key)? {
        any_value::Value::IntValue(i) => Some(i),
        _ => None,
    }
}

fn value(attributes: &[KeyValue], key: &str) -> Option<any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone())
        .and_then(|v| v.value)
}

/// Every attribute value of `span` (and of its events) as text.
pub fn attribute_texts(span: &Span) -> Vec<String> {
    span.attributes
        .iter()
        .chain(span.events.iter().flat_map(|e| e.attributes.iter()))
        .filter_map(|kv| kv.value.as_ref().and_then(|v| v.value.as_ref()))
        .map(|v| format!("{v:?}"))
        .collect()
}

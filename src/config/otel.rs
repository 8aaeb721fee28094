//! OpenTelemetry traces, configured by the standard variables:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (off
//! when both are unset), `OTEL_EXPORTER_OTLP_HEADERS` and
//! `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, `OTEL_EXPORTER_OTLP_PROTOCOL` and
//! `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (`http/protobuf` only),
//! `OTEL_TRACES_SAMPLER` with `OTEL_TRACES_SAMPLER_ARG`, and
//! `OTEL_SERVICE_NAME`.

use super::{ConfigError, Lookup};
use base64::Engine;
use switchboard_platform::Secret;

pub use crate::telemetry::{OtelConfig, RootSampling, Sampling, DEFAULT_SERVICE_NAME};

const FIX_ENDPOINT: &str =
    "use the collector's OTLP/HTTP base URL, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318, or unset it";
const FIX_TRACES_ENDPOINT: &str =
    "use the collector's full OTLP/HTTP traces URL, e.g. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces, or unset it";
const FIX_PROTOCOL: &str =
    "only http/protobuf is built in: point the endpoint at the collector's OTLP/HTTP port (4318 by default) and unset the protocol, or set it to http/protobuf";
const FIX_SAMPLER: &str = "use one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio (a ratio goes in OTEL_TRACES_SAMPLER_ARG, 0 to 1)";

impl OtelConfig {
    /// The values to register as secrets: the endpoint's credentials and
    /// every header value.
    pub(super) fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .headers
            .iter()
            .map(|(_, v)| v.expose().to_owned())
            .collect();
        if let Some(raw) = &self.raw_endpoint {
            out.extend(crate::secrets::url_secrets(raw.expose()));
        }
        out
    }
}

/// Reads and checks the trace export's variables.
pub(super) fn otel(get: &Lookup<'_>) -> Result<OtelConfig, ConfigError> {
    let service_name = get("OTEL_SERVICE_NAME").unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    let mut headers = all_headers(get)?;
    check_protocols(get)?;
    let sampling = sampling(get)?;
    // The traces endpoint is the full URL; the general one a base URL.
    let (raw, var, fix, full) = match (
        get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        get("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(raw), _) => (
            raw,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            FIX_TRACES_ENDPOINT,
            true,
        ),
        (None, Some(raw)) => (raw, "OTEL_EXPORTER_OTLP_ENDPOINT", FIX_ENDPOINT, false),
        (None, None) => {
            return Ok(OtelConfig {
                headers,
                service_name,
                sampling,
                ..OtelConfig::default()
            })
        }
    };
    // The value is never echoed: it may carry a password.
    let invalid = |problem: &str| ConfigError::Invalid {
        var,
        problem: problem.to_owned(),
        fix,
    };
    let mut url = url::Url::parse(&raw).map_err(|_| invalid("not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid("not an http:// or https:// URL with a host"));
    }
    if !url.username().is_empty() {
        let user = decode(url.username());
        let password = url.password().map(decode).unwrap_or_default();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        headers.push((
            "authorization".into(),
            Secret::new(format!("Basic {basic}")),
        ));
        // Both setters fail only for URLs without a host, refused above.
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    if !full {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(OtelConfig {
        traces_url: Some(Secret::new(url.to_string())),
        headers,
        service_name,
        sampling,
        raw_endpoint: Some(Secret::new(raw)),
    })
}

/// `OTEL_EXPORTER_OTLP_HEADERS`, with the traces-only headers winning over
/// the general ones of the same name.
fn all_headers(get: &Lookup<'_>) -> Result<Vec<(String, Secret)>, ConfigError> {
    let mut headers = match get("OTEL_EXPORTER_OTLP_HEADERS") {
        Some(raw) => parse_headers("OTEL_EXPORTER_OTLP_HEADERS", &raw)?,
        None => Vec::new(),
    };
    if let Some(raw) = get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") {
        for (name, value) in parse_headers("OTEL_EXPORTER_OTLP_TRACES_HEADERS", &raw)? {
            headers.retain(|(n, _)| *n != name);
            headers.push((name, value));
        }
    }
    Ok(headers)
}

/// Only OTLP over HTTP with protobuf is spoken.
fn check_protocols(get: &Lookup<'_>) -> Result<(), ConfigError> {
    for var in [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    ] {
        match get(var).as_deref().map(str::trim) {
            None | Some("http/protobuf") => {}
            Some(other) => {
                return Err(ConfigError::Invalid {
                    var,
                    problem: format!("{other:?} is not supported"),
                    fix: FIX_PROTOCOL,
                })
            }
        }
    }
    Ok(())
}

/// `OTEL_TRACES_SAMPLER` and its `OTEL_TRACES_SAMPLER_ARG`.
fn sampling(get: &Lookup<'_>) -> Result<Sampling, ConfigError> {
    let Some(name) = get("OTEL_TRACES_SAMPLER") else {
        return Ok(Sampling::default());
    };
    let name = name.trim().to_ascii_lowercase();
    let (parent_based, root) = match name.strip_prefix("parentbased_") {
        Some(root) => (true, root),
        None => (false, name.as_str()),
    };
    let root = match root {
        "always_on" => RootSampling::On,
        "always_off" => RootSampling::Off,
        "traceidratio" => {
            // The specification's default ratio is 1.
            let ratio = match get("OTEL_TRACES_SAMPLER_ARG") {
                None => 1.0,
                Some(arg) => arg
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or(ConfigError::Invalid {
                        var: "OTEL_TRACES_SAMPLER_ARG",
                        problem: format!("{arg:?} is not a ratio from 0 to 1"),
                        fix: "write the fraction of turns to export, e.g. OTEL_TRACES_SAMPLER_ARG=0.25",
                    })?,
            };
            RootSampling::Ratio(ratio)
        }
        _ => {
            return Err(ConfigError::Invalid {
                var: "OTEL_TRACES_SAMPLER",
                problem: format!("{name:?} is not a known sampler"),
                fix: FIX_SAMPLER,
            })
        }
    };
    Ok(Sampling { parent_based, root })
}

/// `key=value,key=value` (values percent-encoded), as the OpenTelemetry
/// specification writes headers.
fn parse_headers(var: &'static str, raw: &str) -> Result<Vec<(String, Secret)>, ConfigError> {
    let mut out = Vec::new();
    for pair in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let valid = pair.split_once('=').and_then(|(name, value)| {
            let name = name.trim();
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            token.then(|| (name.to_ascii_lowercase(), Secret::new(decode(value.trim()))))
        });
        // Only the pair's position is told: its value may be a token.
        let Some(header) = valid else {
            return Err(ConfigError::Invalid {
                var,
                problem: format!("entry {} is not name=value", out.len() + 1),
                fix: "write name=value pairs separated by commas, e.g. OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20TOKEN",
            });
        };
        out.push(header);
    }
    Ok(out)
}

fn decode(raw: &str) -> String {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Result<OtelConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        otel(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn off_by_default_with_the_default_service_name() {
        let c = parse(&[]).unwrap();
        assert!(c.traces_url.is_none());
        assert_eq!(c.service_name, "switchboard");
    }

    #[test]
    fn the_traces_path_is_appended_to_the_base_url() {
        let c = parse(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_SERVICE_NAME", "bot"),
        ])
        .unwrap();
        assert_eq!(
            c.traces_url.unwrap().expose(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(c.service_name, "bot");
        let c = parse(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c.example/otlp")]).unwrap();
        assert_eq!(
            c.traces_url.unwrap().expose(),
            "https://c.example/otlp/v1/traces"
        );
    }

    #[test]
    fn a_bad_endpoint_is_refused_without_echoing_it() {
        for bad in [
            "ftp://user:hunter2hunter2@c.example",
            "not a url",
            "unix:/x",
        ] {
            let err = parse(&[("OTEL_EXPORTER_OTLP_ENDPOINT", bad)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{err}");
            assert!(!err.contains("hunter2"), "{err}");
        }
    }

    #[test]
    fn credentials_become_a_secret_header_and_leave_the_url() {
        let c = parse(&[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://me:s3cret%21pass@c.example",
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "X-Api-Key=k3y-value-123, a=b%20c",
            ),
        ])
        .unwrap();
        let url = c.traces_url.clone().unwrap();
        assert_eq!(url.expose(), "https://c.example/v1/traces");
        let names: Vec<&str> = c.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["x-api-key", "a", "authorization"]);
        assert_eq!(c.headers[1].1.expose(), "b c");
        let basic = base64::engine::general_purpose::STANDARD.encode("me:s3cret!pass");
        assert_eq!(c.headers[2].1.expose(), format!("Basic {basic}"));
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("k3y-value") && !shown.contains("s3cret"),
            "{shown}"
        );
        let secrets = c.secret_values();
        assert!(secrets.iter().any(|s| s == "k3y-value-123"));
        assert!(secrets.iter().any(|s| s == "s3cret%21pass"));
    }

    #[test]
    fn the_configuration_registers_the_export_credentials() {
        let vars = [
            ("LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("LLM_MODEL", "m"),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://u:pw-otel-8c1f2a@c.example",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=hdr-otel-3b9e7d"),
        ];
        let config = crate::config::Config::from_lookup(|k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap();
        let secrets = config.secret_values();
        for secret in ["pw-otel-8c1f2a", "hdr-otel-3b9e7d"] {
            assert!(secrets.iter().any(|s| s == secret), "{secret}");
        }
        assert!(config.otel.traces_url.is_some());
    }

    #[test]
    fn a_header_without_a_value_is_refused_without_echoing_it() {
        let err = parse(&[("OTEL_EXPORTER_OTLP_HEADERS", "a=b,tok3n-only")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("entry 2"), "{err}");
        assert!(!err.contains("tok3n"), "{err}");
    }

    #[test]
    fn the_traces_endpoint_is_used_as_given_and_its_headers_win() {
        let c = parse(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base.example:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://c.example/custom/traces",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1,b=2"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=3"),
        ])
        .unwrap();
        assert_eq!(
            c.traces_url.unwrap().expose(),
            "https://c.example/custom/traces"
        );
        let headers: Vec<_> = c
            .headers
            .iter()
            .map(|(n, v)| format!("{n}={}", v.expose()))
            .collect();
        assert_eq!(headers, ["a=1", "b=3"]);
        let err = parse(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "{err}");
    }

    #[test]
    fn only_http_protobuf_is_accepted() {
        assert!(parse(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).is_ok());
        for (var, value) in [
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ] {
            let err = parse(&[(var, value)]).unwrap_err().to_string();
            assert!(err.contains(var) && err.contains("4318"), "{err}");
        }
    }

    #[test]
    fn samplers_are_read_with_their_ratio() {
        let s = |vars: &[(&str, &str)]| parse(vars).map(|c| c.sampling);
        assert_eq!(s(&[]).unwrap(), Sampling::default());
        assert_eq!(
            s(&[("OTEL_TRACES_SAMPLER", "always_off")]).unwrap(),
            Sampling {
                parent_based: false,
                root: RootSampling::Off
            }
        );
        assert_eq!(
            s(&[
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.25")
            ])
            .unwrap(),
            Sampling {
                parent_based: true,
                root: RootSampling::Ratio(0.25)
            }
        );
        assert_eq!(
            s(&[("OTEL_TRACES_SAMPLER", "traceidratio")]).unwrap().root,
            RootSampling::Ratio(1.0),
            "the specification's default ratio"
        );
        for (vars, var) in [
            (
                &[("OTEL_TRACES_SAMPLER", "sometimes")][..],
                "OTEL_TRACES_SAMPLER",
            ),
            (
                &[
                    ("OTEL_TRACES_SAMPLER", "traceidratio"),
                    ("OTEL_TRACES_SAMPLER_ARG", "1.5"),
                ][..],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
        ] {
            let err = s(vars).unwrap_err().to_string();
            assert!(err.contains(var), "{err}");
        }
    }
}

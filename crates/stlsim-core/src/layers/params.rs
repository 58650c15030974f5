//! Typed layer parameters: each layer declares its parameters with kind,
//! unit, default and documentation; user values (from TOML, the CLI's
//! `--param NAME=VALUE` or Python) are checked against the declaration.
//! Unknown names and ill-typed values are configuration errors.

use crate::error::{SimError, SimResult};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A non-negative integer up to `MAX_INT_PARAM` (2^40); text may use `_`
    /// separators.
    Int,
    /// A finite real number, bounded by its unit: a fraction in `[0, 1]`, a
    /// percentage in `[0, 100]`, a size or a time not negative.
    Float,
    /// true / false.
    Bool,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// Free text the layer parses and checks itself (a mapping in a paper's notation).
    Text,
}

/// A parameter as its layer declares it; user values are checked against it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParamSpec {
    /// Name, with its unit in it where it has one (`cache_tracks`, `interval_writes`).
    pub name: &'static str,
    /// Its kind, which decides how a user value is parsed and bounded.
    pub kind: ParamKind,
    /// Unit, for the listing (`tracks`, `writes`, `ms`, `-`).
    pub unit: &'static str,
    /// Default, written as a user would write it.
    pub default: &'static str,
    /// What it does: the text the layer listing shows beside the name.
    pub doc: &'static str,
}

/// Resolved parameter values of one layer (defaults filled in).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Params {
    values: BTreeMap<String, Value>,
}

/// The largest value of an integer parameter, 2^40 (about 1.1 x 10^12). No
/// count, size or interval of a layer comes near it, and under it a layer's
/// products of two parameters (a block size times a track size ...) cannot
/// overflow 64 bits, so an absurd value is a one-line error here rather than
/// a wrapped number or an overflow panic deep in a layer.
pub const MAX_INT_PARAM: u64 = 1 << 40;

fn coerce(spec: &ParamSpec, v: &Value) -> Result<Value, String> {
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        _ => None,
    };
    match spec.kind {
        ParamKind::Int => {
            let want = || format!("a non-negative integer up to 2^40 ({MAX_INT_PARAM})");
            let u = if let Some(u) = v.as_u64() {
                Some(u)
            } else if let Some(f) = v.as_f64() {
                // 2^64 and above arrive from JSON as floats; `as u64` would
                // saturate them to 2^64-1, so only whole numbers in range convert.
                (f >= 0.0 && f.fract() == 0.0 && f <= MAX_INT_PARAM as f64).then_some(f as u64)
            } else {
                as_text(v).and_then(|s| s.replace('_', "").parse::<u64>().ok())
            };
            u.filter(|&u| u <= MAX_INT_PARAM)
                .map(Value::from)
                .ok_or_else(want)
        }
        ParamKind::Float => {
            // The unit bounds the value: a size or a time is never negative,
            // a fraction lies in [0, 1], a percentage in [0, 100]. (A
            // negative size was once run as 0.)
            let (low, high, want) = match spec.unit {
                "fraction" => (0.0, 1.0, "a fraction from 0 to 1"),
                "%" => (0.0, 100.0, "a percentage from 0 to 100"),
                "MiB" | "KiB" | "GiB" | "ms" | "s" | "us" => {
                    (0.0, f64::INFINITY, "a number, not negative")
                }
                _ => (f64::NEG_INFINITY, f64::INFINITY, "a number"),
            };
            v.as_f64()
                .or_else(|| as_text(v).and_then(|s| s.parse::<f64>().ok()))
                .filter(|f| f.is_finite() && (low..=high).contains(f))
                .map(Value::from)
                .ok_or_else(|| want.to_string())
        }
        ParamKind::Bool => v
            .as_bool()
            .or_else(|| match as_text(v)?.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Some(true),
                "false" | "no" | "off" | "0" => Some(false),
                _ => None,
            })
            .map(Value::from)
            .ok_or_else(|| "true or false".to_string()),
        ParamKind::Text => match v {
            Value::String(s) => Ok(Value::from(s.trim())),
            Value::Number(n) => Ok(Value::from(n.to_string())),
            _ => Err("text".to_string()),
        },
        ParamKind::Choice(opts) => as_text(v)
            .filter(|s| opts.contains(&s.as_str()))
            .map(Value::from)
            .ok_or_else(|| format!("one of {}", opts.join(", "))),
    }
}

impl Params {
    /// Check user values against the declarations and fill in defaults.
    pub fn resolve(
        layer: &str,
        specs: &[ParamSpec],
        user: &BTreeMap<String, Value>,
    ) -> SimResult<Params> {
        let mut values = BTreeMap::new();
        for (k, v) in user {
            let Some(spec) = specs.iter().find(|s| s.name == k) else {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(SimError::Config(format!(
                    "layer '{layer}' has no parameter '{k}'{} (its parameters: {})",
                    crate::spelling::did_you_mean(k, known.iter().copied()),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            let val = coerce(spec, v).map_err(|want| {
                SimError::Config(format!(
                    "parameter '{k}' of layer '{layer}' must be {want}, got {v}"
                ))
            })?;
            values.insert(k.clone(), val);
        }
        for spec in specs {
            if !values.contains_key(spec.name) {
                let d = coerce(spec, &Value::String(spec.default.to_string()))
                    .unwrap_or_else(|_| panic!("default of {layer}.{} is ill-typed", spec.name));
                values.insert(spec.name.to_string(), d);
            }
        }
        Ok(Params { values })
    }

    fn get(&self, name: &str) -> &Value {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("parameter '{name}' was not declared"))
    }
    /// The value of integer parameter `name` (a name the layer did not declare panics).
    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).as_u64().unwrap_or_default()
    }
    /// An integer parameter that must be at least `min` (a count of blocks
    /// per stage, a block size): a smaller value is a configuration error
    /// naming `layer`, not quietly run as `min`.
    pub fn u64_at_least(&self, layer: &str, name: &str, min: u64) -> SimResult<u64> {
        let v = self.u64(name);
        if v < min {
            return Err(SimError::Config(format!(
                "parameter '{name}' of layer '{layer}' must be at least {min}, got {v}"
            )));
        }
        Ok(v)
    }
    /// The value of real parameter `name` (a name the layer did not declare panics).
    pub fn f64(&self, name: &str) -> f64 {
        self.get(name).as_f64().unwrap_or_default()
    }
    /// The value of boolean parameter `name` (a name the layer did not declare panics).
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).as_bool().unwrap_or_default()
    }
    /// The value of text parameter `name`, trimmed (an undeclared name panics).
    pub fn text(&self, name: &str) -> &str {
        self.get(name).as_str().unwrap_or_default()
    }
    /// The word chosen for choice parameter `name`, one of its declared options
    /// (an undeclared name panics).
    pub fn choice(&self, name: &str) -> &str {
        self.get(name).as_str().unwrap_or_default()
    }
    /// All values, for the report.
    pub fn values(&self) -> &BTreeMap<String, Value> {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[
        ParamSpec {
            name: "cache_tracks",
            kind: ParamKind::Int,
            unit: "tracks",
            default: "100",
            doc: "",
        },
        ParamSpec {
            name: "threshold",
            kind: ParamKind::Float,
            unit: "-",
            default: "0.5",
            doc: "",
        },
        ParamSpec {
            name: "skip_empty",
            kind: ParamKind::Bool,
            unit: "-",
            default: "true",
            doc: "",
        },
        ParamSpec {
            name: "where",
            kind: ParamKind::Choice(&["outer", "spread"]),
            unit: "-",
            default: "outer",
            doc: "",
        },
    ];

    fn user(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn defaults_fill_in_and_strings_coerce() {
        let p =
            Params::resolve("x", SPECS, &user(&[("cache_tracks", Value::from("250"))])).unwrap();
        assert_eq!(p.u64("cache_tracks"), 250);
        assert_eq!(p.f64("threshold"), 0.5);
        assert!(p.bool("skip_empty"));
        assert_eq!(p.choice("where"), "outer");
    }

    #[test]
    fn unknown_and_ill_typed_are_errors() {
        let e = Params::resolve("x", SPECS, &user(&[("cache_trax", Value::from(1))])).unwrap_err();
        assert!(e.to_string().contains("no parameter 'cache_trax'"), "{e}");
        let e =
            Params::resolve("x", SPECS, &user(&[("cache_tracks", Value::from(-3))])).unwrap_err();
        assert!(e.to_string().contains("non-negative integer"), "{e}");
        // 2^64 and above arrive from JSON as floats: rejected, not saturated to 2^64-1.
        for big in [
            Value::from(18446744073709551616.0f64),
            Value::from(1e300),
            Value::from("18446744073709551616"),
        ] {
            let e =
                Params::resolve("x", SPECS, &user(&[("cache_tracks", big.clone())])).unwrap_err();
            assert!(e.to_string().contains("parameter 'cache_tracks' of layer 'x' must be a non-negative integer up to 2^40"), "{big}: {e}");
        }
        for over in [
            Value::from(u64::MAX),
            Value::from(MAX_INT_PARAM + 1),
            Value::from(format!("{}", MAX_INT_PARAM + 1)),
        ] {
            assert!(Params::resolve("x", SPECS, &user(&[("cache_tracks", over)])).is_err());
        }
        let p = Params::resolve(
            "x",
            SPECS,
            &user(&[("cache_tracks", Value::from(MAX_INT_PARAM))]),
        )
        .unwrap();
        assert_eq!(p.u64("cache_tracks"), MAX_INT_PARAM);
        let p = Params::resolve(
            "x",
            SPECS,
            &user(&[("cache_tracks", Value::from(1_000_000.0))]),
        )
        .unwrap();
        assert_eq!(p.u64("cache_tracks"), 1_000_000);
        let e = Params::resolve("x", SPECS, &user(&[("where", Value::from("inner"))])).unwrap_err();
        assert!(e.to_string().contains("one of outer, spread"), "{e}");
    }
}

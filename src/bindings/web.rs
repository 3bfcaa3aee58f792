//! The browser adapter (wasm-bindgen): the planner and the simulator, data in and out as plain
//! JS objects through serde-wasm-bindgen. No logic lives here; see `simulator` and `plan`.
//!
//! Positions and counts cross as `f64` (JS numbers) rather than `u64` (which would be BigInt);
//! they stay far below 2^53.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::plan::{plan_bucket as plan_bucket_core, BucketPlanRequest};
use crate::simulator::{SimConfig, Simulation, TableReplay};

fn to_js<T: Serialize>(v: &T) -> Result<JsValue, JsError> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&e.to_string()))
}

fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// Plans one bucket (the same entry point as `paimon-compact plan`).
#[wasm_bindgen(js_name = planBucket)]
pub fn plan_bucket(request: JsValue) -> Result<JsValue, JsError> {
    let req: BucketPlanRequest = serde_wasm_bindgen::from_value(request).map_err(err)?;
    to_js(&plan_bucket_core(&req).map_err(err)?)
}

/// The default simulation config, for the page's form.
#[wasm_bindgen(js_name = defaultConfig)]
pub fn default_config() -> Result<JsValue, JsError> {
    to_js(&SimConfig::default())
}

/// Parses a table replay (the `paimon-compact-table` JSON or a plan request).
#[wasm_bindgen(js_name = parseReplay)]
pub fn parse_replay(text: &str) -> Result<JsValue, JsError> {
    to_js(&TableReplay::from_json(text).map_err(err)?)
}

/// A simulation and its timeline.
#[wasm_bindgen]
pub struct WebSimulation(Simulation);

#[wasm_bindgen]
impl WebSimulation {
    /// Checks the config (typed option errors become the exception message).
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> Result<WebSimulation, JsError> {
        let config: SimConfig = serde_wasm_bindgen::from_value(config).map_err(err)?;
        Ok(WebSimulation(Simulation::new(config).map_err(err)?))
    }

    /// Computes up to `max_events` more events; returns how many.
    pub fn advance(&mut self, max_events: f64) -> Result<f64, JsError> {
        Ok(self.0.advance(max_events.max(0.0) as u64).map_err(err)? as f64)
    }

    /// Events computed so far.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.0.len() as f64
    }

    #[wasm_bindgen(getter)]
    pub fn finished(&self) -> bool {
        self.0.finished()
    }

    /// What to draw after `position` events.
    pub fn view(&mut self, position: f64) -> Result<JsValue, JsError> {
        let v = self.0.view(position.max(0.0) as u64).map_err(err)?;
        to_js(&v)
    }

    /// Up to `limit` decisions before `position`, newest first.
    pub fn decisions(&self, position: f64, limit: u32) -> Result<JsValue, JsError> {
        to_js(
            &self
                .0
                .decisions_before(position.max(0.0) as u64, limit as usize),
        )
    }

    /// Metric series for the charts, at most `points` samples.
    pub fn chart(&self, points: u32) -> Result<JsValue, JsError> {
        to_js(&self.0.chart(points as usize))
    }

    /// The position of the last event at or before `t_ms`.
    #[wasm_bindgen(js_name = positionAtTime)]
    pub fn position_at_time(&self, t_ms: f64) -> f64 {
        self.0.position_at_time(t_ms as i64) as f64
    }

    /// A fingerprint of every decision, equal to the native run's for the same config.
    pub fn digest(&self) -> String {
        self.0.digest()
    }

    /// Decisions made so far.
    #[wasm_bindgen(js_name = decisionCount)]
    pub fn decision_count(&self) -> f64 {
        self.0.decisions.len() as f64
    }
}

//! The stateful strategies: universal compaction, force-up-level-0 and early full compaction,
//! each kept across a case's steps.

use serde_json::Value;

use super::json::{ctx_of, num_levels_of, opt_i64, opt_u64, pick_json, run_stats, str_of, u64_of};
use super::StepRunner;
use crate::meta::Level;
use crate::options::Flavor;
use crate::plan::{
    EarlyFullCompaction, ForceUpLevel0Compaction, OffPeakHours, UniversalCompaction,
};

pub(super) fn early_full_from(v: &Value, flavor: Flavor) -> EarlyFullCompaction {
    EarlyFullCompaction {
        interval_ms: opt_u64(v, "interval_ms"),
        total_size_threshold: opt_u64(v, "total_size_threshold"),
        incremental_size_threshold: opt_u64(v, "incremental_size_threshold"),
        last_full_ms: opt_i64(v, "initial_last_full_ms"),
        flavor,
    }
}

/// Off-peak ratio "now": a window that contains hour 0, evaluated at hour 0.
pub(super) fn universal_from(
    v: &Value,
    flavor: Flavor,
) -> std::result::Result<UniversalCompaction, String> {
    let off_peak = opt_u64(v, "offpeak_ratio_now")
        .map(|r| OffPeakHours::create(0, 1, r as u32))
        .unwrap_or(None);
    Ok(UniversalCompaction {
        max_size_amp: u64_of(v, "max_size_amp")?,
        size_ratio: u64_of(v, "size_ratio")? as u32,
        trigger: u64_of(v, "num_run_trigger")? as usize,
        early_full: v.get("early_full").map(|e| early_full_from(e, flavor)),
        off_peak,
        flavor,
    })
}

pub(super) struct UniversalRunner(UniversalCompaction);

impl UniversalRunner {
    pub(super) fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        Ok(UniversalRunner(universal_from(options, flavor)?))
    }
}

impl StepRunner for UniversalRunner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let ctx = ctx_of(input, 0);
        let num_levels = num_levels_of(input)?;
        let max_level = Level::new(num_levels - 1);
        let u = &mut self.0;
        let pick = match str_of(input, "entry")? {
            "pick" => u.pick(num_levels, &runs, &ctx),
            "pick_for_size_amp" => u.pick_for_size_amp(max_level, &runs, &ctx),
            "pick_for_size_ratio" => u.pick_for_size_ratio(max_level, &runs, &ctx),
            "force_pick_l0" => u.force_pick_l0(num_levels, &runs, &ctx, None),
            "create_unit" => {
                let count = u64_of(input, "run_count")? as usize;
                if count > runs.len() {
                    return Err("run_count exceeds runs".into());
                }
                let (level, count) = u.create_unit(&runs, max_level, count, &ctx);
                return Ok(pick_json(Some((level, count)), &runs));
            }
            other => return Err(format!("unknown entry '{other}'")),
        };
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

pub(super) struct ForceUpLevel0Runner(ForceUpLevel0Compaction);

impl ForceUpLevel0Runner {
    pub(super) fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        let universal = universal_from(
            options.get("universal").ok_or("missing 'universal'")?,
            flavor,
        )?;
        let interval = opt_u64(options, "max_compact_interval").map(|n| n as usize);
        Ok(ForceUpLevel0Runner(ForceUpLevel0Compaction::new(
            universal, interval,
        )))
    }
}

impl StepRunner for ForceUpLevel0Runner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let pick = self.0.pick(num_levels_of(input)?, &runs, &ctx_of(input, 0));
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

pub(super) struct EarlyFullRunner(EarlyFullCompaction);

impl EarlyFullRunner {
    pub(super) fn new(options: &Value, flavor: Flavor) -> std::result::Result<Self, String> {
        Ok(EarlyFullRunner(early_full_from(options, flavor)))
    }
}

impl StepRunner for EarlyFullRunner {
    fn step(&mut self, input: &Value, _flavor: Flavor) -> std::result::Result<Value, String> {
        let runs = run_stats(input)?;
        let pick = self
            .0
            .try_full(num_levels_of(input)?, &runs, &ctx_of(input, 0));
        Ok(pick_json(
            pick.map(|p| (p.output_level, p.run_count)),
            &runs,
        ))
    }
}

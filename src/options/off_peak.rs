//! Off-peak hours (compaction.md §4.7): a window of local hours in which the size-ratio test is
//! relaxed, so more runs merge while the cluster is quiet. The hour is injected by the caller.

/// `compaction.offpeak.start.hour`, `.end.hour` and `compaction.offpeak-ratio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OffPeakHours {
    /// First local hour of the window (0–23, inclusive).
    pub start_hour: u8,
    /// Local hour the window ends at (0–23, exclusive); below `start_hour` the window wraps
    /// midnight. Never equal to `start_hour`.
    pub end_hour: u8,
    /// Percentage added to `compaction.size-ratio` inside the window.
    pub ratio: u32,
}

impl OffPeakHours {
    /// `None` (feature off) when either hour is -1 or both are equal, as in Paimon. Hours must be
    /// in -1..=23 (the options parser checks).
    pub fn create(start: i32, end: i32, ratio: u32) -> Option<Self> {
        if start < 0 || end < 0 || start == end {
            return None;
        }
        Some(OffPeakHours {
            start_hour: start as u8,
            end_hour: end as u8,
            ratio,
        })
    }

    /// A window with start > end wraps around midnight.
    pub fn is_off_peak(&self, hour: u8) -> bool {
        if self.start_hour <= self.end_hour {
            self.start_hour <= hour && hour < self.end_hour
        } else {
            hour < self.end_hour || hour >= self.start_hour
        }
    }

    /// The extra size-ratio percentage in force at `hour`.
    pub fn current_ratio(&self, hour: u8) -> u32 {
        if self.is_off_peak(hour) {
            self.ratio
        } else {
            0
        }
    }
}

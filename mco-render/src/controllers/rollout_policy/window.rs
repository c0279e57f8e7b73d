//! Maintenance windows: recurring local-time intervals in IANA time zones. A window that opens
//! on a day runs its full duration, past midnight and across a daylight-saving change (the
//! duration is elapsed time); a start time that does not exist on a day (skipped by a DST
//! change) opens at the same offset's instant, as `jiff`'s compatible disambiguation does.

use crate::api::rollout_policy::MaintenanceWindow;
use crate::gocompat::duration::parse_duration;
use jiff::civil::{Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp};

/// The longest a window may stay open.
const MAX_SECS: i64 = 7 * 86_400;

/// One window, checked.
#[derive(Debug, Clone)]
struct Window {
    /// Open on Monday..Sunday.
    days: [bool; 7],
    start: Time,
    secs: i64,
    tz: TimeZone,
}

/// A policy's windows; none means always open.
#[derive(Debug, Clone, Default)]
pub struct Windows(Vec<Window>);

fn weekday(s: &str) -> Option<Weekday> {
    Some(match s.to_ascii_lowercase().as_str() {
        "mon" | "monday" => Weekday::Monday,
        "tue" | "tuesday" => Weekday::Tuesday,
        "wed" | "wednesday" => Weekday::Wednesday,
        "thu" | "thursday" => Weekday::Thursday,
        "fri" | "friday" => Weekday::Friday,
        "sat" | "saturday" => Weekday::Saturday,
        "sun" | "sunday" => Weekday::Sunday,
        _ => return None,
    })
}

fn time_of_day(s: &str) -> Option<Time> {
    let parts: Vec<&str> = s.split(':').collect();
    let num = |p: &str, max: i8| -> Option<i8> {
        (p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<i8>().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    match parts.as_slice() {
        [h, m] => Time::new(num(h, 23)?, num(m, 59)?, 0, 0).ok(),
        [h, m, sec] => Time::new(num(h, 23)?, num(m, 59)?, num(sec, 59)?, 0).ok(),
        _ => None,
    }
}

/// Checks windows; an error is the field path and what is wrong.
pub fn parse_windows(specs: &[MaintenanceWindow]) -> Result<Windows, (String, String)> {
    let mut out = Vec::with_capacity(specs.len());
    for (i, w) in specs.iter().enumerate() {
        let path = |f: &str| format!("spec.maintenanceWindows[{i}].{f}");
        let mut days = [w.days.is_empty(); 7];
        for (j, d) in w.days.iter().enumerate() {
            let day = weekday(d).ok_or_else(|| {
                (
                    format!("spec.maintenanceWindows[{i}].days[{j}]"),
                    format!("{d:?} is not a day of the week (Mon..Sun)"),
                )
            })?;
            days[usize::from(day.to_monday_zero_offset() as u8)] = true;
        }
        let start = time_of_day(&w.start).ok_or_else(|| {
            (
                path("start"),
                format!("{:?} is not a time of day (HH:MM or HH:MM:SS)", w.start),
            )
        })?;
        let ns = parse_duration(&w.duration).map_err(|e| (path("duration"), e.to_string()))?;
        let secs = ns / 1_000_000_000;
        if secs <= 0 || secs > MAX_SECS {
            return Err((
                path("duration"),
                format!("{:?} is not between 1s and 168h", w.duration),
            ));
        }
        let zone = w.time_zone.as_deref().unwrap_or("UTC");
        let tz = TimeZone::get(zone).map_err(|_| {
            (
                path("timeZone"),
                format!("{zone:?} is not an IANA time zone"),
            )
        })?;
        out.push(Window {
            days,
            start,
            secs,
            tz,
        });
    }
    Ok(Windows(out))
}

impl Window {
    /// The window's openings `[open, close)` whose local start date lies within 8 days of
    /// `now`'s local date, in time order.
    fn around(&self, now: Timestamp) -> Vec<(Timestamp, Timestamp)> {
        let today = now.to_zoned(self.tz.clone()).date();
        let mut out = Vec::new();
        for offset in -8i64..=8 {
            let Ok(date) = today.checked_add(Span::new().days(offset)) else {
                continue;
            };
            let day = usize::from(date.weekday().to_monday_zero_offset() as u8);
            if !self.days[day] {
                continue;
            }
            let Ok(open) = date.to_datetime(self.start).to_zoned(self.tz.clone()) else {
                continue;
            };
            let open = open.timestamp();
            let Ok(close) = open.checked_add(Span::new().seconds(self.secs)) else {
                continue;
            };
            out.push((open, close));
        }
        out
    }
}

impl Windows {
    /// Whether the policy has no windows (always open).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a node may start an update at `now`.
    pub fn is_open(&self, now: Timestamp) -> bool {
        self.is_empty() || self.open_until(now).is_some()
    }

    /// While open at `now`, when the last of the windows open now closes (`None` when closed
    /// or when there are no windows).
    pub fn open_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.0
            .iter()
            .flat_map(|w| w.around(now))
            .filter(|(open, close)| *open <= now && now < *close)
            .map(|(_, close)| close)
            .max()
    }

    /// The first instant at or after `now` at which a window is open: `now` itself when one
    /// is, `None` when there are no windows.
    pub fn next_open(&self, now: Timestamp) -> Option<Timestamp> {
        if self.is_empty() {
            return None;
        }
        if self.open_until(now).is_some() {
            return Some(now);
        }
        self.0
            .iter()
            .flat_map(|w| w.around(now))
            .map(|(open, _)| open)
            .filter(|open| *open > now)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn window(days: &[&str], start: &str, duration: &str, tz: Option<&str>) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.iter().map(|d| d.to_string()).collect(),
            start: start.into(),
            duration: duration.into(),
            time_zone: tz.map(str::to_string),
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("test time")
    }

    #[test]
    fn across_midnight() {
        // Friday 22:00 for 4h in UTC: open Friday night into Saturday, closed after.
        let w = parse_windows(&[window(&["Fri"], "22:00", "4h", None)]).unwrap();
        // 2026-12-04 is a Friday.
        assert!(!w.is_open(at("2026-12-04T21:59:59Z")));
        assert!(w.is_open(at("2026-12-04T22:00:00Z")));
        assert!(w.is_open(at("2026-12-05T01:59:59Z")));
        assert!(!w.is_open(at("2026-12-05T02:00:00Z")));
        assert_eq!(
            w.next_open(at("2026-12-05T02:00:00Z")),
            Some(at("2026-12-11T22:00:00Z"))
        );
        assert_eq!(
            w.open_until(at("2026-12-05T01:00:00Z")),
            Some(at("2026-12-05T02:00:00Z"))
        );
    }

    #[test]
    fn in_a_time_zone_with_daylight_saving() {
        // 02:00 Berlin every day: 01:00Z in winter, 00:00Z in summer.
        let w = parse_windows(&[window(&[], "02:00", "1h", Some("Europe/Berlin"))]).unwrap();
        assert!(w.is_open(at("2026-12-01T01:30:00Z")));
        assert!(!w.is_open(at("2026-12-01T00:30:00Z")));
        assert!(w.is_open(at("2026-07-01T00:30:00Z")));
        // 2026-03-29 02:00 does not exist in Berlin: the window opens at 03:00 CEST (01:00Z).
        assert_eq!(
            w.next_open(at("2026-03-28T23:00:00Z")),
            Some(at("2026-03-29T01:00:00Z"))
        );
        // Monday in Tokyo starts on Sunday in UTC.
        let w = parse_windows(&[window(&["Mon"], "01:00", "2h", Some("Asia/Tokyo"))]).unwrap();
        // 2026-12-06 is a Sunday: 16:00Z is Monday 01:00 in Tokyo.
        assert!(w.is_open(at("2026-12-06T16:30:00Z")));
        assert!(!w.is_open(at("2026-12-07T16:30:00Z")));
    }

    #[test]
    fn errors_name_the_field() {
        let e = |w: MaintenanceWindow| parse_windows(&[w]).unwrap_err();
        assert_eq!(
            e(window(&["Mon", "Funday"], "01:00", "1h", None)),
            (
                "spec.maintenanceWindows[0].days[1]".into(),
                "\"Funday\" is not a day of the week (Mon..Sun)".into()
            )
        );
        assert_eq!(
            e(window(&[], "24:00", "1h", None)).0,
            "spec.maintenanceWindows[0].start"
        );
        assert_eq!(
            e(window(&[], "1:00", "1h", None)).0,
            "spec.maintenanceWindows[0].start"
        );
        assert_eq!(
            e(window(&[], "01:00", "0s", None)).0,
            "spec.maintenanceWindows[0].duration"
        );
        assert_eq!(
            e(window(&[], "01:00", "169h", None)).0,
            "spec.maintenanceWindows[0].duration"
        );
        assert_eq!(
            e(window(&[], "01:00", "soon", None)).0,
            "spec.maintenanceWindows[0].duration"
        );
        assert_eq!(
            e(window(&[], "01:00", "1h", Some("Mars/Olympus"))),
            (
                "spec.maintenanceWindows[0].timeZone".into(),
                "\"Mars/Olympus\" is not an IANA time zone".into()
            )
        );
    }

    #[test]
    fn no_windows_is_always_open() {
        let w = parse_windows(&[]).unwrap();
        assert!(w.is_open(at("2026-12-01T00:00:00Z")));
        assert_eq!(w.next_open(at("2026-12-01T00:00:00Z")), None);
    }

    proptest! {
        /// `next_open` is open, and nothing between `now` and it is.
        #[test]
        fn next_open_is_the_first_open_instant(
            secs in 1_700_000_000i64..1_900_000_000,
            day in 0usize..7,
            hour in 0u8..24,
            minutes in 1i64..600,
            tz in prop::sample::select(vec!["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]),
        ) {
            let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
            let w = parse_windows(&[window(&[days[day]], &format!("{hour:02}:30"), &format!("{minutes}m"), Some(tz))]).unwrap();
            let now = Timestamp::from_second(secs).unwrap();
            let next = w.next_open(now).unwrap();
            prop_assert!(next >= now);
            prop_assert!(w.is_open(next));
            prop_assert!(next.as_second() - now.as_second() <= 8 * 86_400);
            // Sampled instants before it are closed.
            let gap = next.as_second() - now.as_second();
            for k in 0..16 {
                let t = now.as_second() + gap * k / 16;
                if t < next.as_second() {
                    prop_assert!(!w.is_open(Timestamp::from_second(t).unwrap()));
                }
            }
        }
    }
}

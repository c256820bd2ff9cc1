//! The teeth of a run's forbidden litmus passes, by placement: a pass of a forbidden test is
//! evidence of conformance only when its relaxed control (the same shape without the
//! ordering) showed its weak outcome under the same stress; otherwise the stress could not
//! have caught a violation (MC Mutants' and ASPLOS'15's methodology). Weak outcomes within a
//! CTA have not been published on any GPU since Kepler, so intra-CTA and DSMEM passes usually
//! stand without that evidence, and reports say so rather than count them with the others.

use crate::status::CaseStatus;

/// Where a litmus case's threads sit, from its id: the last of `intra_cta`, `inter_cta`,
/// `intra_cluster`, `inter_cluster` among its segments, `dsmem` for distributed shared
/// memory cases (`.dsmem.`), `other` when the id names none.
pub fn placement_of_id(id: &str) -> &'static str {
    if id.split('.').any(|s| s == "dsmem") {
        return "dsmem";
    }
    for (segment, name) in [
        ("intra_cta", "intra_cta"),
        ("inter_cta", "inter_cta"),
        ("intra_cluster", "intra_cluster"),
        ("inter_cluster", "inter_cluster"),
    ] {
        if id.split('.').any(|s| s == segment) {
            return name;
        }
    }
    "other"
}

/// One placement's forbidden litmus passes that ran beside a relaxed control.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementTeeth {
    pub placement: &'static str,
    /// Passes whose control showed its weak outcome.
    pub evidenced: usize,
    /// Passes whose control showed none.
    pub without: usize,
}

/// The order placements are reported in: where weak outcomes are expected first.
const ORDER: [&str; 6] = [
    "inter_cta",
    "inter_cluster",
    "intra_cluster",
    "intra_cta",
    "dsmem",
    "other",
];

/// Per placement, of the passes that carry a control (forbidden litmus tests), how many had a
/// control that showed weak outcomes and how many did not; placements with none are left
/// out.
pub fn teeth<'a, C: 'a>(
    cases: impl IntoIterator<Item = (&'a str, &'a CaseStatus<C>)>,
) -> Vec<PlacementTeeth> {
    let mut out: Vec<PlacementTeeth> = ORDER
        .iter()
        .map(|p| PlacementTeeth {
            placement: p,
            ..Default::default()
        })
        .collect();
    for (id, status) in cases {
        let CaseStatus::Pass {
            control: Some(control),
            ..
        } = status
        else {
            continue;
        };
        // The case id names the placement; a case named otherwise (a replay, a user's
        // suite) is placed by its control's test name, which ends in it.
        let p = match placement_of_id(id) {
            "other" => placement_of_id(&control.test),
            p => p,
        };
        let Some(row) = out.iter_mut().find(|r| r.placement == p) else {
            continue;
        };
        if control.weak > 0 {
            row.evidenced += 1;
        } else {
            row.without += 1;
        }
    }
    out.retain(|r| r.evidenced + r.without > 0);
    out
}

/// The summary's lines: passes evidenced by their control, per placement, then passes whose
/// control showed no weak outcome, per placement (labelled, not counted with the first).
/// None when no pass carries a control.
pub fn teeth_lines(rows: &[PlacementTeeth]) -> Vec<String> {
    let list = |f: &dyn Fn(&PlacementTeeth) -> usize| {
        rows.iter()
            .filter(|r| f(r) > 0)
            .map(|r| format!("{} {}", r.placement, f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = Vec::new();
    if rows.is_empty() {
        return lines;
    }
    let evidenced = list(&|r| r.evidenced);
    lines.push(format!(
        "forbidden litmus passes evidenced by a control that showed weak outcomes: {}",
        if evidenced.is_empty() {
            "none".into()
        } else {
            evidenced
        }
    ));
    let without = list(&|r| r.without);
    if !without.is_empty() {
        lines.push(format!(
            "forbidden litmus passes whose control showed no weak outcome (the stress could not \
             have caught a violation; not evidence): {without}"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ControlRun;

    fn pass(weak: u64) -> CaseStatus {
        CaseStatus::pass_beside_control(
            "n",
            ControlRun {
                test: "SB".into(),
                instances: 100,
                weak,
            },
        )
    }

    #[test]
    fn placements_come_from_the_id() {
        assert_eq!(
            placement_of_id("atomics.gpu.MP.rel_acq.gpu.inter_cta"),
            "inter_cta"
        );
        assert_eq!(
            placement_of_id("atomics.gpu.shared.MP.rel_acq.cta.intra_cta"),
            "intra_cta"
        );
        assert_eq!(
            placement_of_id("atomics.gpu.cluster.dsmem.MP.rel_acq.cluster.intra_cluster"),
            "dsmem"
        );
        assert_eq!(
            placement_of_id("atomics.gpu.cluster.SB.sc.cluster.inter_cluster"),
            "inter_cluster"
        );
        assert_eq!(placement_of_id("abi.layout.x"), "other");
        // A substring is not a segment.
        assert_eq!(placement_of_id("x.not_inter_cta_really"), "other");
    }

    /// Two inter-CTA passes (one evidenced), one intra-CTA pass without, one DSMEM pass
    /// without, and cases without a control (a plain pass, a failure) left out.
    #[test]
    fn passes_are_counted_per_placement_evidenced_apart_from_the_rest() {
        let (a, b, c, d) = (pass(3), pass(0), pass(0), pass(0));
        let plain = CaseStatus::pass();
        let fail: CaseStatus = CaseStatus::fail("x", "y");
        let cases = [
            ("atomics.gpu.MP.rel_acq.gpu.inter_cta", &a),
            ("atomics.gpu.SB.sc.gpu.inter_cta", &b),
            ("atomics.gpu.MP.rel_acq.cta.intra_cta", &c),
            ("atomics.gpu.cluster.dsmem.MP.x.cluster.intra_cluster", &d),
            ("atomics.gpu.LB.x.gpu.inter_cta", &plain),
            ("atomics.gpu.LB.y.gpu.inter_cta", &fail),
            // Placed by the control's name ("SB", no placement): other.
            ("selftest.litmus.x", &b),
        ];
        let rows = teeth(cases.iter().map(|(i, s)| (*i, *s)));
        assert_eq!(
            rows,
            vec![
                PlacementTeeth {
                    placement: "inter_cta",
                    evidenced: 1,
                    without: 1
                },
                PlacementTeeth {
                    placement: "intra_cta",
                    evidenced: 0,
                    without: 1
                },
                PlacementTeeth {
                    placement: "dsmem",
                    evidenced: 0,
                    without: 1
                },
                PlacementTeeth {
                    placement: "other",
                    evidenced: 0,
                    without: 1
                },
            ]
        );
        assert_eq!(
            teeth_lines(&rows),
            vec![
                "forbidden litmus passes evidenced by a control that showed weak outcomes: inter_cta 1".to_string(),
                "forbidden litmus passes whose control showed no weak outcome (the stress could not have caught a violation; not evidence): inter_cta 1, intra_cta 1, dsmem 1, other 1".into(),
            ]
        );
        assert!(teeth_lines(&[]).is_empty());
    }
}

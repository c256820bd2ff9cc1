//! `--devices all|N,...`: a run over several GPUs. Every case that uses a GPU
//! ([`Case::uses_gpu`]) runs once per device, as its own case with the id `ID@DEVICE` and that
//! device as its `--device`; the other cases run once.

use crate::backend::cuda::{BadDeviceSelector, DeviceSelector, GpuInfo, NoSuchDevice};
use crate::suite::Case;

/// Why `--devices` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DevicesError {
    #[error("--devices: {0}")]
    Bad(#[from] BadDeviceSelector),
    #[error("--devices: {0} named twice")]
    Twice(DeviceSelector),
    #[error("--devices: empty: expected `all` or a list such as 0,2")]
    Empty,
    #[error("--devices: {0}")]
    NoSuchDevice(#[from] NoSuchDevice),
}

/// The devices `spec` names: `all` is every device the driver sees (`seen`; none when there is
/// no driver, and then the GPU cases run once and skip naming the GPU), else a comma list of
/// ordinals and UUIDs, each one the driver sees when there is a driver.
pub fn parse(spec: &str, seen: Option<&[GpuInfo]>) -> Result<Vec<DeviceSelector>, DevicesError> {
    if spec.trim() == "all" {
        return Ok(seen
            .unwrap_or_default()
            .iter()
            .filter_map(|g| u32::try_from(g.ordinal).ok())
            .map(DeviceSelector::Ordinal)
            .collect());
    }
    let mut out: Vec<DeviceSelector> = Vec::new();
    for part in spec.split(',') {
        let d: DeviceSelector = part.parse()?;
        if out.contains(&d) {
            return Err(DevicesError::Twice(d));
        }
        if let Some(gpus) = seen {
            d.resolve(gpus)?;
        }
        out.push(d);
    }
    if out.is_empty() {
        return Err(DevicesError::Empty);
    }
    Ok(out)
}

/// `cases` over `devices`: each case that uses a GPU becomes one case per device (in the order
/// given, next to each other), the others stay as they are. No devices: the cases unchanged.
pub fn per_device(cases: Vec<Case>, devices: &[DeviceSelector]) -> Vec<Case> {
    if devices.is_empty() {
        return cases;
    }
    let mut out = Vec::with_capacity(cases.len());
    for case in cases {
        if !case.uses_gpu() {
            out.push(case);
            continue;
        }
        for d in devices {
            out.push(Case {
                id: format!("{}@{d}", case.id),
                device: Some(d.clone()),
                ..case.clone()
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;

    /// A fake two-device machine, as the CUDA probe describes one.
    fn two_gpus() -> Vec<GpuInfo> {
        (0..2)
            .map(|o| GpuInfo {
                ordinal: o,
                name: format!("fake {o}"),
                compute_capability: "9.0".into(),
                uuid: format!("GPU-00000000-0000-0000-0000-00000000000{o}"),
                total_mem_mib: 1,
                bar1_total_mib: None,
            })
            .collect()
    }

    #[test]
    fn devices_are_all_the_driver_sees_or_a_list_it_sees() {
        let gpus = two_gpus();
        let o = DeviceSelector::Ordinal;
        assert_eq!(parse("all", Some(&gpus)), Ok(vec![o(0), o(1)]));
        assert_eq!(parse("all", None), Ok(vec![]));
        assert_eq!(parse("1,0", Some(&gpus)), Ok(vec![o(1), o(0)]));
        let uuid = "GPU-00000000-0000-0000-0000-000000000001";
        assert_eq!(
            parse(&format!("0,{uuid}"), Some(&gpus)),
            Ok(vec![o(0), uuid.parse().unwrap()])
        );
        // without a driver the list is taken as given (the GPU cases skip naming the GPU)
        assert_eq!(parse("0,5", None), Ok(vec![o(0), o(5)]));
        assert!(matches!(
            parse("0,5", Some(&gpus)),
            Err(DevicesError::NoSuchDevice(e)) if e.wanted == o(5)
        ));
        assert_eq!(parse("0,0", Some(&gpus)), Err(DevicesError::Twice(o(0))));
        assert_eq!(
            parse("0,,1", Some(&gpus)),
            Err(DevicesError::Bad(BadDeviceSelector(String::new())))
        );
        assert_eq!(
            parse("", None),
            Err(DevicesError::Bad(BadDeviceSelector(String::new())))
        );
    }

    #[test]
    fn a_gpu_case_runs_once_per_device_and_the_others_once() {
        let load = |yaml: &str| {
            crate::suite::load_text(
                std::path::Path::new("t.yaml"),
                yaml,
                &crate::areas::all(),
                &crate::suite::Limits::default(),
            )
            .unwrap()
            .cases
        };
        let cases = load(
            "area: selftest\ncases:\n\
             - id: selftest.gpu\n  clause: none\n  requires: [gpu]\n  \
               check: {equal: {left: 1, right: 1}}\n\
             - id: selftest.host\n  clause: none\n  check: {equal: {left: 1, right: 1}}\n",
        );
        assert_eq!(cases[0].requires, [Capability::Gpu]);
        let o = DeviceSelector::Ordinal;
        let out = per_device(cases.clone(), &[o(0), o(2)]);
        let ids: Vec<(&str, &str, Option<&DeviceSelector>)> = out
            .iter()
            .map(|c| (c.id.as_str(), c.suite_id(), c.device.as_ref()))
            .collect();
        assert_eq!(
            ids,
            [
                ("selftest.gpu@0", "selftest.gpu", Some(&o(0))),
                ("selftest.gpu@2", "selftest.gpu", Some(&o(2))),
                ("selftest.host", "selftest.host", None),
            ]
        );
        assert_eq!(per_device(cases.clone(), &[]).len(), 2);
    }
}

//! The fleet files: ci/fleet/k8s-job.yaml against the Kubernetes batch/v1 Job schema (the
//! fields it uses, with unknown fields refused, as `kubectl --validate=strict` would), and the
//! properties a fleet run needs: an Indexed Job, one GPU per pod, no two pods on a node.
//! (ci/fleet/test-slurm runs the Slurm batch script on a real one-machine cluster.)

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Job {
    api_version: String,
    kind: String,
    metadata: Meta,
    spec: JobSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobSpec {
    completion_mode: String,
    completions: u32,
    parallelism: u32,
    #[serde(default)]
    backoff_limit: Option<u32>,
    template: PodTemplate,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodTemplate {
    metadata: Meta,
    spec: PodSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodSpec {
    restart_policy: String,
    affinity: Affinity,
    containers: Vec<Container>,
    #[serde(default)]
    volumes: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Affinity {
    pod_anti_affinity: AntiAffinity,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AntiAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    required: Vec<AffinityTerm>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AffinityTerm {
    label_selector: Selector,
    topology_key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Container {
    name: String,
    image: String,
    #[serde(default)]
    working_dir: Option<String>,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<serde_json::Value>,
    resources: Resources,
    #[serde(default)]
    volume_mounts: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Resources {
    limits: BTreeMap<String, serde_json::Value>,
}

#[test]
fn k8s_job_is_an_indexed_job_with_one_gpu_pod_per_node() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/fleet/k8s-job.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let job: Job = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (job.api_version.as_str(), job.kind.as_str()),
        ("batch/v1", "Job")
    );
    assert!(job.metadata.name.is_some());
    assert_eq!(job.spec.completion_mode, "Indexed");
    assert_eq!(
        job.spec.completions, job.spec.parallelism,
        "all nodes at once"
    );
    assert_eq!(
        job.spec.backoff_limit,
        Some(0),
        "a failing node is not retried"
    );
    let pod = &job.spec.template;
    assert_eq!(pod.spec.restart_policy, "Never");
    let c = &pod.spec.containers[0];
    assert!(!c.name.is_empty() && !c.image.is_empty());
    let gpus = &c.resources.limits["nvidia.com/gpu"];
    assert!(gpus == 1 || gpus == "1", "one GPU per pod: {gpus}");
    // One pod per node: anti-affinity on the pod's own label over hostnames.
    let term = &pod.spec.affinity.pod_anti_affinity.required[0];
    assert_eq!(term.topology_key, "kubernetes.io/hostname");
    for (k, v) in &term.label_selector.match_labels {
        assert_eq!(
            pod.metadata.labels.get(k),
            Some(v),
            "selector matches the pods"
        );
    }
    assert!(c.args.join(" ").contains("--junit"), "reports per node");
    // The checker refuses what Kubernetes would: a misspelt field.
    let typo = text.replace("completionMode:", "completionMod:");
    assert!(serde_saphyr::from_str::<Job>(&typo).is_err());
    let _ = (
        &c.working_dir,
        &c.command,
        &c.env,
        &c.volume_mounts,
        &pod.spec.volumes,
    );
}

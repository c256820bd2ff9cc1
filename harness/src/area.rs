//! The contract between the runner and the spec areas.
//!
//! Each area (abi, atomics, ...) defines its own `check:` vocabulary as a serde enum that
//! implements [`Check`]; an [`Areas`] set, assembled by the binary's top (`crate::areas`), maps a
//! suite file's `area:` to the parser for it. This module names no area: areas depend on it, not
//! it on them. The runner knows nothing of what a check does; an area knows nothing of how it is
//! scheduled.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use crate::backend::toolchain::Toolchain;
use crate::capability::{Capabilities, Capability};
use crate::config::RunConfig;
use crate::figures::Figure;
use crate::outcome::CaseStatus;

/// Everything a running case may use. Backends are reached only through here.
#[derive(Debug)]
pub struct CaseContext<'a> {
    /// The run's settings (command line and environment).
    pub config: &'a RunConfig,
    /// The run's selection and batches.
    pub scope: &'a RunScope,
    pub id: &'a str,
    pub caps: &'a Capabilities,
    pub toolchain: &'a Toolchain,
    /// A fresh directory for this case's files, removed afterwards unless `--keep`.
    pub scratch: PathBuf,
    /// The data root (for `suites/`, `ptx-corpus/`): a checkout, or the embedded copy.
    pub root: &'a Path,
    /// The public corpora folder (`--corpora`), when there is one.
    pub corpora: Option<&'a Path>,
    /// `gpucts prebuild`: do the compilations only. A check that uses a device stops before
    /// opening it (returning [`CaseStatus::compiled_only`]); its tool runs are what is wanted.
    pub compile_only: bool,
    /// The figures the case measured ([`CaseContext::record`]); the runner returns them with
    /// the case's status.
    pub figures: Mutex<Vec<Figure>>,
    /// What the case did with batches ([`BatchUser`]); the runner charges its share.
    batch_use: Mutex<BatchUse>,
}

impl<'a> CaseContext<'a> {
    /// A context for case `id` of the run `scope`, with no scratch directory or corpora and
    /// not compile-only (set the public fields for those).
    pub fn new(
        config: &'a RunConfig,
        scope: &'a RunScope,
        id: &'a str,
        caps: &'a Capabilities,
        toolchain: &'a Toolchain,
        root: &'a Path,
    ) -> CaseContext<'a> {
        CaseContext {
            config,
            scope,
            id,
            caps,
            toolchain,
            scratch: PathBuf::new(),
            root,
            corpora: None,
            compile_only: false,
            figures: Mutex::new(Vec::new()),
            batch_use: Mutex::new(BatchUse::default()),
        }
    }

    /// The run's GPU (`--device`), opened: the one door by which a case reaches a device.
    pub fn open_gpu(
        &self,
    ) -> Result<crate::backend::cuda::Session, crate::backend::cuda::CudaError> {
        crate::backend::cuda::Session::open_device(&self.config.device)
    }

    /// Whether a batch computation includes member `id` ([`RunScope::batch_member`]); the
    /// case itself always is.
    pub(crate) fn batch_member(&self, id: &str) -> bool {
        id == self.id || self.scope.batch_member(id)
    }

    /// What the case did with batches so far, taken out.
    pub(crate) fn take_batch_use(&self) -> BatchUse {
        std::mem::take(&mut *lock(&self.batch_use))
    }

    /// Record a figure this case measured (litmus histograms, rates): it is reported with the
    /// case's result, under the case's id.
    pub fn record(&self, figure: Figure) {
        lock(&self.figures).push(figure);
    }

    /// The figures recorded so far, taken out.
    pub(crate) fn take_figures(&self) -> Vec<Figure> {
        std::mem::take(&mut *lock(&self.figures))
    }
}

/// Something cases share that only one of them may use at a time (nextest's test groups): the
/// runner gives a case every resource it declares ([`Check::resources`]) before it starts, and
/// holds them until it ends, so cases sharing one run one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// The GPU: concurrent kernels from other cases would change what a litmus test observes
    /// and the rates it reports, and a crash would take others along. Every case that requires
    /// the `gpu` capability holds it too.
    Gpu,
    /// The companion kernel module's device node and its test provider's state.
    KmodDevice,
}

impl Resource {
    pub(crate) const ALL: [Resource; 2] = [Resource::Gpu, Resource::KmodDevice];
}

/// One case's area-specific content, parsed from its `check:`.
pub trait Check: Send + Sync + Debug + 'static {
    /// Capabilities implied by the content (e.g. the producer it compiles with), added to those
    /// the entry lists.
    fn requires(&self) -> Vec<Capability> {
        Vec::new()
    }
    /// Whether the case must run in a child process (GPU work, kernel module, anything that can
    /// crash or poison a context).
    fn isolate(&self) -> bool {
        false
    }
    /// Whether the case runs once per device under `--devices` although it does not require
    /// the gpu capability (a case that requires it always does).
    fn per_device(&self) -> bool {
        false
    }
    /// The shared resources the case uses, each held for the whole case ([`Resource`]).
    fn resources(&self) -> Vec<Resource> {
        Vec::new()
    }
    /// Whether all the case's GPU work goes through the process's GPU worker (one context,
    /// one batch launched at a time): such cases hold [`Resource::Gpu`] together, so the
    /// worker can put several of them in one launch, and apart from every other GPU case.
    fn shares_gpu(&self) -> bool {
        false
    }
    fn run(&self, ctx: &CaseContext) -> CaseStatus;
    /// What a run of this case would refuse, found before anything runs (issue 10: `validate`
    /// catches everything a run would): files it reads, names it looks up (producers, tests,
    /// probes), values the area rejects. Cheap: no tool, no device, no compilation.
    fn validate(&self, _ctx: &ValidateContext) -> Result<(), Vec<CaseError>> {
        Ok(())
    }
}

/// What [`Check::validate`] may consult: the repository root, against which a case's `file:`
/// is resolved at run time ([`CaseContext::root`]).
#[derive(Debug, Clone, Copy)]
pub struct ValidateContext<'a> {
    pub root: &'a Path,
}

/// One problem [`Check::validate`] found: the `check:` key it is about (the suite reader turns
/// it into `file:line:column`), the offending value as the case has it after matrix expansion
/// (to point at the matrix or table value it came from), and what is wrong; what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseError {
    pub field: &'static str,
    pub value: Option<String>,
    pub message: String,
}

impl CaseError {
    pub fn new(field: &'static str, value: impl Into<String>, message: impl Into<String>) -> Self {
        CaseError {
            field,
            value: Some(value.into()),
            message: message.into(),
        }
    }

    /// A problem about a key whose value is not a single word (a list, a count).
    pub fn about(field: &'static str, message: impl Into<String>) -> Self {
        CaseError {
            field,
            value: None,
            message: message.into(),
        }
    }
}

/// Collects [`CaseError`]s: `Ok` when none.
pub(crate) fn problems(errors: Vec<CaseError>) -> Result<(), Vec<CaseError>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The largest seed (or batch number) a case may name: far above any suite's, and low enough
/// that the batch arithmetic after it (`seed - seed % BATCH + BATCH`, `batch * BATCH`) cannot
/// overflow.
pub(crate) const MAX_SEED: u64 = 1 << 48;

/// A seed-like `field` must be below [`MAX_SEED`] (`None`: it is).
pub(crate) fn seed_in_range(field: &'static str, value: u64) -> Option<CaseError> {
    (value >= MAX_SEED).then(|| {
        CaseError::new(
            field,
            value.to_string(),
            format!("`{field}: {value}` is too large; `{field}:` is below 2^48 ({MAX_SEED})"),
        )
    })
}

/// A `file:` a case reads at run time, relative to the repository root, must be a readable
/// regular file (`None`: it is).
pub(crate) fn readable_file(
    ctx: &ValidateContext,
    field: &'static str,
    file: &str,
) -> Option<CaseError> {
    let path = ctx.root.join(file);
    let why = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => match std::fs::File::open(&path) {
            Ok(_) => return None,
            Err(e) => e.to_string(),
        },
        Ok(_) => "not a regular file".to_string(),
        Err(e) => e.to_string(),
    };
    Some(CaseError::new(
        field,
        file,
        format!(
            "`{field}: {file}` cannot be read ({why}); `{field}:` is a path to a file relative to the repository root ({})",
            ctx.root.display()
        ),
    ))
}

/// Parses the `check:` content of one area's cases.
pub trait AreaParser: Send + Sync {
    /// The content's error names the field and what was expected (serde's message).
    fn parse(&self, content: serde_json::Value) -> Result<Arc<dyn Check>, serde_json::Error>;
}

struct Typed<C>(std::marker::PhantomData<fn() -> C>);

impl<C: Check + DeserializeOwned> AreaParser for Typed<C> {
    fn parse(&self, content: serde_json::Value) -> Result<Arc<dyn Check>, serde_json::Error> {
        serde_json::from_value::<C>(content).map(|c| Arc::new(c) as Arc<dyn Check>)
    }
}

/// The areas a suite file may name, each with the parser for its `check:` content.
///
/// The suite model reads files against an `Areas` it is given and names no area itself; the
/// binary's top (`crate::areas`) assembles the set, so no layer below it depends on the areas.
#[derive(Default)]
pub struct Areas {
    entries: Vec<(&'static str, Box<dyn AreaParser>)>,
}

impl Areas {
    pub fn new() -> Areas {
        Areas::default()
    }

    /// Add an area whose `check:` content deserializes into `C`.
    pub fn with<C: Check + DeserializeOwned>(mut self, name: &'static str) -> Areas {
        self.entries
            .push((name, Box::new(Typed::<C>(std::marker::PhantomData))));
        self
    }

    /// The parser for an area's checks.
    pub fn parser(&self, name: &str) -> Option<&dyn AreaParser> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p.as_ref())
    }

    /// The area names, in the order they were added.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|(n, _)| *n).collect()
    }
}

impl std::fmt::Debug for Areas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// What one run's cases share besides its settings: the run's selection, the batches computed
/// for it and how long each took. The runner makes one per run (`runner::RunEnv::scope`), so
/// two runs in one process neither see each other's selection nor read each other's batches
/// (a batch computed for one selection lacks the members another selects).
#[derive(Default)]
pub struct RunScope {
    /// The ids the run selected (`None`: no selection was made, e.g. `gpucts prebuild` or a
    /// unit test; every member counts as selected).
    selected: Option<HashSet<String>>,
    /// Batches are computed whole whatever the selection: replaying a prebuilt store, a batch
    /// of the selected members only would be an input the store lacks.
    whole_batches: bool,
    /// Each [`BatchCache`]'s slots for this run, by the cache's id.
    caches: Mutex<HashMap<u64, Arc<dyn Any + Send + Sync>>>,
    /// How long each batch took to compute, once.
    costs: Mutex<HashMap<BatchToken, Duration>>,
}

impl RunScope {
    /// A scope with no selection: every batch member counts as selected.
    pub fn new() -> RunScope {
        RunScope::default()
    }

    /// A scope for a run that selected `ids`; `whole_batches`: compute every batch with all its
    /// members anyway (see [`RunScope::batch_member`]).
    pub(crate) fn selecting(
        ids: impl IntoIterator<Item = String>,
        whole_batches: bool,
    ) -> RunScope {
        RunScope {
            selected: Some(ids.into_iter().collect()),
            whole_batches,
            ..RunScope::default()
        }
    }

    /// Whether the run selected case `id` (true when no selection was made).
    pub(crate) fn is_selected(&self, id: &str) -> bool {
        self.selected.as_ref().is_none_or(|s| s.contains(id))
    }

    /// The run's selected ids, when a selection was made: which batches a run needs at all.
    pub(crate) fn selected_ids(&self) -> Option<&HashSet<String>> {
        self.selected.as_ref()
    }

    /// Whether a batch computation includes member `id`: a selected one (a filtered run
    /// compiles what it runs), or every member when batches are computed whole.
    pub(crate) fn batch_member(&self, id: &str) -> bool {
        self.whole_batches || self.is_selected(id)
    }

    /// The time batch `token` took to compute in this run.
    pub(crate) fn batch_cost(&self, token: &BatchToken) -> Option<Duration> {
        lock(&self.costs).get(token).copied()
    }

    /// This run's slots of cache `id`.
    fn slots<K, V>(&self, id: u64) -> Arc<Slots<K, V>>
    where
        K: Send + 'static,
        V: Send + Sync + 'static,
    {
        let mut caches = lock(&self.caches);
        let any = caches
            .entry(id)
            .or_insert_with(|| Arc::new(Slots::<K, V>::default()) as Arc<dyn Any + Send + Sync>);
        match Arc::clone(any).downcast::<Slots<K, V>>() {
            Ok(slots) => slots,
            // Ids are never reused, so one id has one key and value type.
            Err(_) => unreachable!("batch cache {id} used with two types"),
        }
    }
}

impl std::fmt::Debug for RunScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunScope")
            .field("selected", &self.selected.as_ref().map(HashSet::len))
            .field("whole_batches", &self.whole_batches)
            .field("caches", &lock(&self.caches).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type Slots<K, V> = Mutex<HashMap<K, Arc<OnceLock<V>>>>;

/// Identifies one batch (a key of one [`BatchCache`]) for the run's time accounting.
pub(crate) type BatchToken = (u64, u64);

/// What one case did with batches: the time it spent inside [`BatchCache::get_or_compute`]
/// (computing or waiting) and the batches it used.
#[derive(Debug, Default, Clone)]
pub(crate) struct BatchUse {
    pub in_batches: Duration,
    pub batches: Vec<BatchToken>,
}

/// Who asks a [`BatchCache`] for a batch: a case (its wait is accounted to it, and it shares
/// the batch's cost) or the run itself (a prefetch on the cases' behalf: nothing accounted).
pub trait BatchUser: Sync {
    /// The run the batch belongs to.
    fn run_scope(&self) -> &RunScope;
    /// The user spent `spent` inside the computation of batch `token` (or waiting for it).
    fn used(&self, _token: BatchToken, _spent: Duration) {}
}

impl BatchUser for RunScope {
    fn run_scope(&self) -> &RunScope {
        self
    }
}

impl BatchUser for CaseContext<'_> {
    fn run_scope(&self) -> &RunScope {
        self.scope
    }

    fn used(&self, token: BatchToken, spent: Duration) {
        let mut u = lock(&self.batch_use);
        u.in_batches += spent;
        if !u.batches.contains(&token) {
            u.batches.push(token);
        }
    }
}

/// Results computed once per key and run and shared by every case of the run that needs them
/// (a batch of random types compiled together, a producer's whole output). Different keys
/// compute in parallel; cases waiting on the same key block until it is ready. The values live
/// in the run's [`RunScope`]: a `BatchCache` is a name for them, kept in a `static`. The runner
/// charges a batch's compute time once, spread over the cases that used it
/// ([`CaseContext::take_batch_use`], [`RunScope::batch_cost`]), rather than to every case that
/// waited for it.
pub(crate) struct BatchCache<K, V> {
    id: u64,
    types: std::marker::PhantomData<fn() -> (K, V)>,
}

impl<K, V> BatchCache<K, V>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    V: Send + Sync + 'static,
{
    pub fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        BatchCache {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            types: std::marker::PhantomData,
        }
    }

    /// How many keys the run has asked for.
    #[cfg(test)]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self, scope: &RunScope) -> usize {
        lock(&scope.slots::<K, V>(self.id)).len()
    }

    /// The value for `key` in `user`'s run, computing it on first use. Compute only the
    /// members the run includes ([`RunScope::batch_member`]).
    pub(crate) fn get_or_compute(
        &self,
        user: &(impl BatchUser + ?Sized),
        key: &K,
        compute: impl FnOnce() -> V,
    ) -> Arc<OnceLock<V>> {
        use std::hash::BuildHasher;
        let t0 = Instant::now();
        let scope = user.run_scope();
        // A fixed-key hasher: the token only has to tell this cache's keys apart.
        let token: BatchToken = (
            self.id,
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(key),
        );
        let slot = {
            let slots = scope.slots::<K, V>(self.id);
            let mut slots = lock(&slots);
            Arc::clone(slots.entry(key.clone()).or_default())
        };
        slot.get_or_init(|| {
            let c0 = Instant::now();
            let v = compute();
            lock(&scope.costs).insert(token, c0.elapsed());
            v
        });
        user.used(token, t0.elapsed());
        slot
    }
}

impl<K, V> std::fmt::Debug for BatchCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BatchCache({})", self.id)
    }
}

impl<K, V> Default for BatchCache<K, V>
where
    K: std::hash::Hash + Eq + Clone + Send + 'static,
    V: Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn batch_cache_computes_each_key_once_across_threads() {
        let cache: BatchCache<u32, u32> = BatchCache::new();
        let scope = RunScope::new();
        let calls = AtomicUsize::new(0);
        let got: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u32)
                .map(|i| {
                    let (cache, calls, scope) = (&cache, &calls, &scope);
                    s.spawn(move || {
                        let slot = cache.get_or_compute(scope, &(i % 2), || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(20));
                            (i % 2) * 10
                        });
                        *slot.get().unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        for (i, v) in got.iter().enumerate() {
            assert_eq!(*v, (i as u32 % 2) * 10);
        }
        assert_eq!(cache.len(&scope), 2);
    }

    /// One cache, two runs: each run computes its own value for a key (a batch computed for
    /// one run's selection is never read by another), and a case of each run is charged only
    /// its own run's batch.
    #[test]
    fn each_run_computes_its_own_batches() {
        let cache: BatchCache<&'static str, usize> = BatchCache::new();
        let (first, second) = (
            RunScope::selecting(["a.one".to_string()], false),
            RunScope::selecting(["a.one".to_string(), "a.two".to_string()], false),
        );
        let members = ["a.one", "a.two", "a.three"];
        let compute = |scope: &RunScope| {
            *cache
                .get_or_compute(scope, &"a", || {
                    members.iter().filter(|m| scope.batch_member(m)).count()
                })
                .get()
                .unwrap()
        };
        assert_eq!(compute(&first), 1);
        assert_eq!(compute(&second), 2);
        assert_eq!(compute(&first), 1, "the first run keeps its value");
        // Batches computed whole (a prebuilt store's replay) take every member.
        assert_eq!(compute(&RunScope::selecting([], true)), 3);
        assert_eq!(compute(&RunScope::new()), 3);

        let (config, caps, tc) = (
            RunConfig::default(),
            Capabilities::default(),
            Toolchain::default(),
        );
        let ctx = CaseContext::new(&config, &second, "a.two", &caps, &tc, Path::new("."));
        assert_eq!(*cache.get_or_compute(&ctx, &"a", || 99).get().unwrap(), 2);
        let used = ctx.take_batch_use();
        assert_eq!(used.batches.len(), 1);
        assert!(second.batch_cost(&used.batches[0]).is_some());
        // The same token in the first run has the first run's cost, recorded apart.
        assert!(first.batch_cost(&used.batches[0]).is_some());
        assert!(ctx.take_batch_use().batches.is_empty(), "taken out");
        // The case is a member of its own batch, selected or not.
        let third = RunScope::selecting([], false);
        let ctx = CaseContext::new(&config, &third, "a.three", &caps, &tc, Path::new("."));
        assert!(ctx.batch_member("a.three") && !ctx.batch_member("a.one"));
    }
}

//! The contract between the runner and the spec areas.
//!
//! Each area (abi, atomics, ...) defines its own `check:` vocabulary as a serde enum that
//! implements [`Check`]; an [`Areas`] set, assembled by the binary's top (`crate::areas`), maps a
//! suite file's `area:` to the parser for it. This module names no area: areas depend on it, not
//! it on them. The runner knows nothing of what a check does; an area knows nothing of how it is
//! scheduled.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    pub figures: std::sync::Mutex<Vec<Figure>>,
}

impl CaseContext<'_> {
    /// Record a figure this case measured (litmus histograms, rates): it is reported with the
    /// case's result, under the case's id.
    pub fn record(&self, figure: Figure) {
        self.figures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(figure);
    }

    /// The figures recorded so far, taken out.
    pub fn take_figures(&self) -> Vec<Figure> {
        std::mem::take(&mut *self.figures.lock().unwrap_or_else(|e| e.into_inner()))
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
    pub const ALL: [Resource; 2] = [Resource::Gpu, Resource::KmodDevice];
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
    /// The shared resources the case uses, each held for the whole case ([`Resource`]).
    fn resources(&self) -> Vec<Resource> {
        Vec::new()
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
pub fn problems(errors: Vec<CaseError>) -> Result<(), Vec<CaseError>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The largest seed (or batch number) a case may name: far above any suite's, and low enough
/// that the batch arithmetic after it (`seed - seed % BATCH + BATCH`, `batch * BATCH`) cannot
/// overflow.
pub const MAX_SEED: u64 = 1 << 48;

/// A seed-like `field` must be below [`MAX_SEED`] (`None`: it is).
pub fn seed_in_range(field: &'static str, value: u64) -> Option<CaseError> {
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
pub fn readable_file(ctx: &ValidateContext, field: &'static str, file: &str) -> Option<CaseError> {
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

/// The case ids this run selected, set by the runner before any case runs (`None`: no
/// selection was made, e.g. a unit test; every member counts as selected). A batch
/// computation compiles only selected members, so a filtered run pays for what it runs.
static SELECTED: std::sync::RwLock<Option<Arc<std::collections::HashSet<String>>>> =
    std::sync::RwLock::new(None);

/// Record the run's selection (the runner calls this once, before the cases run).
pub fn set_selected(ids: impl IntoIterator<Item = String>) {
    let set: std::collections::HashSet<String> = ids.into_iter().collect();
    *SELECTED.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(set));
}

/// Whether the run selected case `id` (true when no selection was recorded).
pub fn is_selected(id: &str) -> bool {
    match &*SELECTED.read().unwrap_or_else(|e| e.into_inner()) {
        Some(set) => set.contains(id),
        None => true,
    }
}

/// The run's selected ids, when a selection was recorded.
pub fn selected_ids() -> Option<Arc<std::collections::HashSet<String>>> {
    SELECTED.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Identifies one batch (a key of one [`BatchCache`]) for the run's time accounting.
pub type BatchToken = (u64, u64);

/// What one thread's case did with batches: the time it spent inside
/// [`BatchCache::get_or_compute`] (computing or waiting) and the batches it used.
#[derive(Debug, Default, Clone)]
pub struct BatchUse {
    pub in_batches: std::time::Duration,
    pub batches: Vec<BatchToken>,
}

thread_local! {
    static BATCH_USE: std::cell::RefCell<BatchUse> = std::cell::RefCell::new(BatchUse::default());
}

/// How long each batch took to compute, once.
static BATCH_COST: std::sync::Mutex<
    Option<std::collections::HashMap<BatchToken, std::time::Duration>>,
> = std::sync::Mutex::new(None);

/// This thread's batch use since the last call (the runner calls it before and after a case).
pub fn take_batch_use() -> BatchUse {
    BATCH_USE.with(|u| std::mem::take(&mut *u.borrow_mut()))
}

/// The time batch `token` took to compute, when it was computed in this process.
pub fn batch_cost(token: &BatchToken) -> Option<std::time::Duration> {
    BATCH_COST
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(token).copied())
}

/// Results computed once per key and shared by every case that needs them (a batch of random
/// types compiled together, a producer's whole output). Different keys compute in parallel;
/// cases waiting on the same key block until it is ready. The runner charges a batch's compute
/// time once, spread over the cases that used it ([`take_batch_use`], [`batch_cost`]), rather
/// than to every case that waited for it.
pub struct BatchCache<K, V> {
    id: u64,
    slots: std::sync::Mutex<std::collections::HashMap<K, Arc<OnceLock<V>>>>,
}

use std::sync::OnceLock;

impl<K: std::hash::Hash + Eq + Clone, V> BatchCache<K, V> {
    pub fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        BatchCache {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            slots: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// How many keys have been asked for.
    pub fn len(&self) -> usize {
        self.slots.lock().map(|s| s.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value for `key`, computing it on first use. Compute only the selected members of
    /// the batch ([`is_selected`]).
    pub fn get_or_compute(&self, key: &K, compute: impl FnOnce() -> V) -> Arc<OnceLock<V>> {
        use std::hash::BuildHasher;
        let t0 = std::time::Instant::now();
        // A fixed-key hasher: the token only has to tell this cache's keys apart.
        let token: BatchToken = (
            self.id,
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(key),
        );
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(slots.entry(key.clone()).or_default())
        };
        slot.get_or_init(|| {
            let c0 = std::time::Instant::now();
            let v = compute();
            BATCH_COST
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(Default::default)
                .insert(token, c0.elapsed());
            v
        });
        let spent = t0.elapsed();
        BATCH_USE.with(|u| {
            let mut u = u.borrow_mut();
            u.in_batches += spent;
            if !u.batches.contains(&token) {
                u.batches.push(token);
            }
        });
        slot
    }
}

impl<K, V> std::fmt::Debug for BatchCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.slots.lock().map(|s| s.len()).unwrap_or(0);
        write!(f, "BatchCache({n} keys)")
    }
}

impl<K: std::hash::Hash + Eq + Clone, V> Default for BatchCache<K, V> {
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
        let cache: Arc<BatchCache<u32, u32>> = Arc::new(BatchCache::new());
        let calls = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (cache, calls) = (Arc::clone(&cache), Arc::clone(&calls));
                std::thread::spawn(move || {
                    let slot = cache.get_or_compute(&(i % 2), || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        (i % 2) * 10
                    });
                    *slot.get().unwrap()
                })
            })
            .collect();
        let got: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        for (i, v) in got.iter().enumerate() {
            assert_eq!(*v, (i as u32 % 2) * 10);
        }
    }
}

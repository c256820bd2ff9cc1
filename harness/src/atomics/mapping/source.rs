//! Sources that make each producer emit one C++ atomic operation per function: libcu++
//! (`cuda::atomic_ref`, `cuda::atomic_thread_fence`) for NVRTC, and clang's scoped atomic
//! builtins for clang-19 in CUDA device mode. Many cases go into one compilation unit; each
//! case is an `extern "C"` non-inlined device function whose body holds only the operation,
//! its parameter loads and its return, so the memory instructions in its PTX are the mapping.

use crate::ptx::instr::Scope;

use super::table::{Operation, Order, RmwOp};

pub use crate::backend::producer::Producer;
use crate::backend::producer::{Language, Options};

/// The languages the cases are written in: libcu++ for NVRTC, clang's scoped atomic builtins,
/// and LLVM IR atomics with `syncscope` (every case is expressible in IR, so the IR producer
/// separates front-end from back-end behaviour).
pub const LANGUAGES: [Language; 3] = [Language::CudaCpp, Language::ClangCuda, Language::LlvmIr];

/// This area's view of the producer vocabulary: every producer that reads one of
/// [`LANGUAGES`].
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// The language `p` is given the cases in (`None` outside the view).
pub fn language(p: Producer) -> Option<Language> {
    p.language_of(&LANGUAGES)
}

/// How this area's messages name a producer: the library or builtins it compiles.
pub fn describe(p: Producer) -> String {
    let tool = p.tool();
    match language(p) {
        Some(Language::CudaCpp) => format!("libcu++ via {tool}"),
        Some(Language::ClangCuda) => format!("{tool} __scoped_atomic builtins"),
        Some(Language::LlvmIr) => format!("LLVM IR atomics via the {tool} NVPTX backend"),
        _ => p.describe().to_string(),
    }
}

/// The source of `cases` in `language`; empty for a language the area does not write.
pub fn source(language: Language, cases: &[MappingCase]) -> String {
    match language {
        Language::CudaCpp => nvrtc_source(cases),
        Language::ClangCuda => clang_source(cases),
        Language::LlvmIr => llvm_ir_source(cases),
        Language::C | Language::NvvmIr | Language::Ptx => String::new(),
    }
}

/// One mapping case: a producer compiling one operation at one order and scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MappingCase {
    pub producer: Producer,
    pub operation: Operation,
    pub order: Order,
    pub scope: Scope,
}

impl MappingCase {
    /// Stable id: `atomics.mapping.nvrtc.fetch_add.acquire.gpu`.
    pub fn id(&self) -> String {
        format!(
            "atomics.mapping.{}.{}.{}.{}",
            self.producer.name(),
            self.operation.name(),
            self.order.name(),
            self.scope.name()
        )
    }

    /// The case an id names (the inverse of [`MappingCase::id`]); `None` for anything else,
    /// including an order the operation does not take.
    pub fn from_id(id: &str) -> Option<MappingCase> {
        let rest = id.strip_prefix("atomics.mapping.")?;
        let parts: Vec<&str> = rest.split('.').collect();
        let [p, op, order, scope] = parts[..] else {
            return None;
        };
        let producer = crate::backend::producer::parse_in_view(p, &producers())?;
        let operation = Operation::all().into_iter().find(|x| x.name() == op)?;
        let order = *operation
            .valid_orders()
            .iter()
            .find(|x| x.name() == order)?;
        let scope = *Scope::ALL.iter().find(|x| x.name() == scope)?;
        Some(MappingCase {
            producer,
            operation,
            order,
            scope,
        })
    }

    /// The device function holding the case.
    pub fn function_name(&self) -> String {
        format!(
            "gpucts_{}_{}_{}",
            self.operation.name(),
            self.order.name(),
            self.scope.name()
        )
    }

    /// The chapter's table this case checks against.
    pub fn clause(&self) -> String {
        format!(
            "ptx-interop 13.2 ch. 4, {} table, {}",
            self.order.name(),
            self.operation.api()
        )
    }
}

/// Every case: each producer × operation × order valid for it × scope. Cases a producer
/// cannot express (see [`unsupported_reason`]) are included: they report as unsupported.
pub fn all_cases() -> Vec<MappingCase> {
    let mut v = Vec::new();
    for producer in producers() {
        v.extend(cases_for(producer));
    }
    v
}

pub fn cases_for(producer: Producer) -> Vec<MappingCase> {
    let mut v = Vec::new();
    for operation in Operation::all() {
        for &order in operation.valid_orders() {
            for scope in Scope::ALL {
                v.push(MappingCase {
                    producer,
                    operation,
                    order,
                    scope,
                });
            }
        }
    }
    v
}

/// Why the producer's source language cannot express a case whose function is absent from
/// the PTX (the generated source guards such cases out rather than failing the batch).
pub fn unsupported_reason(case: &MappingCase) -> String {
    match (language(case.producer), case.scope, case.operation) {
        (Some(Language::CudaCpp), Scope::Cluster, _) => {
            "this libcu++ has no cuda::thread_scope_cluster".into()
        }
        (Some(Language::ClangCuda), Scope::Cluster, _) => {
            "this clang defines no __MEMORY_SCOPE_CLUSTR for __scoped_atomic builtins".into()
        }
        (Some(Language::ClangCuda), _, Operation::Fence) => {
            "this clang has no __scoped_atomic_thread_fence \
             builtin; only __atomic_thread_fence (system scope) exists"
                .into()
        }
        _ => "the producer emitted no function for this case".into(),
    }
}

fn cxx_order(o: Order) -> &'static str {
    match o {
        Order::SeqCst => "cuda::std::memory_order_seq_cst",
        Order::AcqRel => "cuda::std::memory_order_acq_rel",
        Order::Acquire => "cuda::std::memory_order_acquire",
        Order::Release => "cuda::std::memory_order_release",
        Order::Relaxed => "cuda::std::memory_order_relaxed",
    }
}

fn cu_scope(s: Scope) -> &'static str {
    match s {
        Scope::Cta => "cuda::thread_scope_block",
        Scope::Cluster => "cuda::thread_scope_cluster",
        Scope::Gpu => "cuda::thread_scope_device",
        Scope::Sys => "cuda::thread_scope_system",
    }
}

/// A one-line probe: compiles only when libcu++ has `cuda::thread_scope_cluster`.
pub fn nvrtc_cluster_probe() -> String {
    "#include <cuda/atomic>\n\
     extern \"C\" __device__ __noinline__ void gpucts_probe(int* p) {\n\
     \x20 cuda::atomic_ref<int, cuda::thread_scope_cluster> a(*p);\n\
     \x20 a.store(0, cuda::std::memory_order_relaxed);\n}\n"
        .into()
}

/// What the sources need of each tool (the toolchain adds the libcu++ include directory to
/// NVRTC's): `-rdc=true` keeps the unreferenced `extern "C"` device functions in the PTX; clang
/// and llc at `-O2`.
pub const OPTIONS: Options<'static> = Options {
    nvrtc: &["-std=c++17", "-rdc=true"],
    clang: &["-O2", "-fno-crash-diagnostics"],
    nvvm: &[],
    llc: &["-O2"],
};

fn llvm_order(o: Order) -> &'static str {
    match o {
        Order::SeqCst => "seq_cst",
        Order::AcqRel => "acq_rel",
        Order::Acquire => "acquire",
        Order::Release => "release",
        Order::Relaxed => "monotonic",
    }
}

/// The `syncscope` of each thread scope, as NVPTX names them (system scope is LLVM's
/// default, written without `syncscope`).
fn llvm_scope(s: Scope) -> &'static str {
    match s {
        Scope::Cta => " syncscope(\"block\")",
        Scope::Cluster => " syncscope(\"cluster\")",
        Scope::Gpu => " syncscope(\"device\")",
        Scope::Sys => "",
    }
}

/// One LLVM IR module for `cases`: the C++ operations as LLVM's atomic instructions
/// (C++ relaxed is LLVM monotonic).
pub fn llvm_ir_source(cases: &[MappingCase]) -> String {
    let mut s = String::from("target triple = \"nvptx64-nvidia-cuda\"\n\n");
    for c in cases {
        let f = c.function_name();
        let order = llvm_order(c.order);
        let scope = llvm_scope(c.scope);
        let def = match c.operation {
            Operation::Fence => {
                format!("define void @{f}() {{\n  fence{scope} {order}\n  ret void\n}}\n")
            }
            Operation::Load => format!(
                "define i32 @{f}(ptr %p) {{\n  %r = load atomic i32, ptr %p{scope} {order}, align 4\n  \
                 ret i32 %r\n}}\n"
            ),
            Operation::Store => format!(
                "define void @{f}(ptr %p, i32 %v) {{\n  store atomic i32 %v, ptr %p{scope} {order}, \
                 align 4\n  ret void\n}}\n"
            ),
            Operation::Rmw(RmwOp::CompareExchange) => format!(
                "define i32 @{f}(ptr %p, i32 %e, i32 %d) {{\n  %x = cmpxchg ptr %p, i32 %e, i32 %d{scope} \
                 {order} {}, align 4\n  %r = extractvalue {{ i32, i1 }} %x, 0\n  ret i32 %r\n}}\n",
                llvm_order(cas_failure_order(c.order))
            ),
            Operation::Rmw(r) => {
                let op = match r {
                    RmwOp::FetchAdd => "add",
                    RmwOp::Exchange => "xchg",
                    RmwOp::FetchAnd => "and",
                    RmwOp::FetchOr => "or",
                    RmwOp::FetchXor => "xor",
                    RmwOp::FetchMin => "min",
                    RmwOp::FetchMax => "max",
                    RmwOp::CompareExchange => unreachable!("matched above"),
                };
                format!(
                    "define i32 @{f}(ptr %p, i32 %v) {{\n  %r = atomicrmw {op} ptr %p, i32 %v{scope} \
                     {order}, align 4\n  ret i32 %r\n}}\n"
                )
            }
        };
        s.push_str(&def);
    }
    s
}

/// One libcu++ compilation unit for `cases` (their producer is ignored).
///
/// On a generic pointer libcu++ first tests `isspacep.local` and, for thread-private local
/// memory, uses plain local accesses instead of the atomic; the functions assume a global
/// pointer (`__isGlobal`) so that only the mapping remains, as it does in a kernel whose
/// pointer parameter is known to be global.
pub fn nvrtc_source(cases: &[MappingCase]) -> String {
    let mut s = String::from("#include <cuda/atomic>\n\n");
    for c in cases {
        let f = c.function_name();
        let order = cxx_order(c.order);
        let aref = format!(
            "__builtin_assume(__isGlobal(p));\n  cuda::atomic_ref<int, {}> a(*p);",
            cu_scope(c.scope)
        );
        let body = match c.operation {
            Operation::Fence => format!(
                "extern \"C\" __device__ __noinline__ void {f}() {{\n  \
                 cuda::atomic_thread_fence({order}, {});\n}}\n",
                cu_scope(c.scope)
            ),
            Operation::Load => format!(
                "extern \"C\" __device__ __noinline__ int {f}(int* p) {{\n  {aref}\n  \
                 return a.load({order});\n}}\n"
            ),
            Operation::Store => format!(
                "extern \"C\" __device__ __noinline__ void {f}(int* p, int v) {{\n  {aref}\n  \
                 a.store(v, {order});\n}}\n"
            ),
            Operation::Rmw(RmwOp::CompareExchange) => format!(
                "extern \"C\" __device__ __noinline__ int {f}(int* p, int e, int d) {{\n  \
                 {aref}\n  a.compare_exchange_strong(e, d, {order});\n  return e;\n}}\n"
            ),
            Operation::Rmw(r) => format!(
                "extern \"C\" __device__ __noinline__ int {f}(int* p, int v) {{\n  {aref}\n  \
                 return a.{}(v, {order});\n}}\n",
                r.name()
            ),
        };
        s.push_str(&body);
    }
    s
}

fn gnu_order(o: Order) -> &'static str {
    match o {
        Order::SeqCst => "__ATOMIC_SEQ_CST",
        Order::AcqRel => "__ATOMIC_ACQ_REL",
        Order::Acquire => "__ATOMIC_ACQUIRE",
        Order::Release => "__ATOMIC_RELEASE",
        Order::Relaxed => "__ATOMIC_RELAXED",
    }
}

/// The failure order C++ derives from a single-order compare_exchange
/// ([atomics.types.operations]: acq_rel -> acquire, release -> relaxed).
fn cas_failure_order(o: Order) -> Order {
    match o {
        Order::AcqRel => Order::Acquire,
        Order::Release => Order::Relaxed,
        other => other,
    }
}

fn clang_scope(s: Scope) -> &'static str {
    match s {
        Scope::Cta => "__MEMORY_SCOPE_WRKGRP",
        Scope::Cluster => "__MEMORY_SCOPE_CLUSTR",
        Scope::Gpu => "__MEMORY_SCOPE_DEVICE",
        Scope::Sys => "__MEMORY_SCOPE_SYSTEM",
    }
}

/// One clang CUDA compilation unit for `cases`. `-nocudainc` leaves the CUDA attribute
/// macros undefined, so the source defines the two it uses. Cases the compiler cannot express
/// are guarded out by the preprocessor and so are absent from the PTX.
pub fn clang_source(cases: &[MappingCase]) -> String {
    let mut s = String::from(
        "#define __device__ __attribute__((device))\n\
         #define __noinline__ __attribute__((noinline))\n\
         #ifndef __has_builtin\n#define __has_builtin(x) 0\n#endif\n\n",
    );
    for c in cases {
        let f = c.function_name();
        let order = gnu_order(c.order);
        let scope = clang_scope(c.scope);
        let def = match c.operation {
            Operation::Fence => {
                // GNU __atomic builtins act at system scope, so __atomic_thread_fence is the
                // system-scope fence when no scoped fence builtin exists.
                let fallback = if c.scope == Scope::Sys {
                    format!(
                        "#else\nextern \"C\" __device__ __noinline__ void {f}() {{\n  \
                         __atomic_thread_fence({order});\n}}\n"
                    )
                } else {
                    String::new()
                };
                format!(
                    "#if __has_builtin(__scoped_atomic_thread_fence)\n\
                     extern \"C\" __device__ __noinline__ void {f}() {{\n  \
                     __scoped_atomic_thread_fence({order}, {scope});\n}}\n{fallback}#endif\n"
                )
            }
            Operation::Load => format!(
                "extern \"C\" __device__ __noinline__ int {f}(int* p) {{\n  \
                 return __scoped_atomic_load_n(p, {order}, {scope});\n}}\n"
            ),
            Operation::Store => format!(
                "extern \"C\" __device__ __noinline__ void {f}(int* p, int v) {{\n  \
                 __scoped_atomic_store_n(p, v, {order}, {scope});\n}}\n"
            ),
            Operation::Rmw(RmwOp::CompareExchange) => format!(
                "extern \"C\" __device__ __noinline__ int {f}(int* p, int e, int d) {{\n  \
                 __scoped_atomic_compare_exchange_n(p, &e, d, 0, {order}, {}, {scope});\n  \
                 return e;\n}}\n",
                gnu_order(cas_failure_order(c.order))
            ),
            Operation::Rmw(r) => {
                let builtin = match r {
                    RmwOp::FetchAdd => "__scoped_atomic_fetch_add",
                    RmwOp::Exchange => "__scoped_atomic_exchange_n",
                    RmwOp::FetchAnd => "__scoped_atomic_fetch_and",
                    RmwOp::FetchOr => "__scoped_atomic_fetch_or",
                    RmwOp::FetchXor => "__scoped_atomic_fetch_xor",
                    RmwOp::FetchMin => "__scoped_atomic_fetch_min",
                    RmwOp::FetchMax => "__scoped_atomic_fetch_max",
                    RmwOp::CompareExchange => unreachable!("matched above"),
                };
                format!(
                    "extern \"C\" __device__ __noinline__ int {f}(int* p, int v) {{\n  \
                     return {builtin}(p, v, {order}, {scope});\n}}\n"
                )
            }
        };
        if c.scope == Scope::Cluster {
            s.push_str(&format!("#ifdef {scope}\n{def}#endif\n"));
        } else {
            s.push_str(&def);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_ids_are_stable_and_unique() {
        let all = all_cases();
        let c = MappingCase {
            producer: Producer::named("nvrtc"),
            operation: Operation::Rmw(RmwOp::FetchAdd),
            order: Order::Acquire,
            scope: Scope::Gpu,
        };
        assert_eq!(c.id(), "atomics.mapping.nvrtc.fetch_add.acquire.gpu");
        let mut ids: Vec<String> = all.iter().map(MappingCase::id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        for c in &all {
            assert_eq!(MappingCase::from_id(&c.id()), Some(*c));
        }
        assert_eq!(
            MappingCase::from_id("atomics.mapping.nvrtc.store.acquire.gpu"),
            None
        );
        assert_eq!(
            MappingCase::from_id("atomics.mapping.nvrtc.load.acquire"),
            None
        );
        // (4 fence + 3 load + 3 store + 8 RMW x 5 orders) x 4 scopes, per producer.
        assert_eq!(cases_for(Producer::named("clang")).len(), 200);
        // Four producers read one of the area's languages: nvrtc (libcu++), clang and clang-o1
        // (scoped builtins), llvm (IR).
        assert_eq!(all.len(), 800);
    }

    #[test]
    fn sources_name_each_case_once() {
        let cases = cases_for(Producer::named("nvrtc"));
        let src = nvrtc_source(&cases);
        for c in &cases {
            assert_eq!(
                src.matches(&format!(" {}(", c.function_name())).count(),
                1,
                "{}",
                c.id()
            );
        }
        let cases = cases_for(Producer::named("clang"));
        let src = clang_source(&cases);
        for c in &cases {
            let n = src.matches(&format!(" {}(", c.function_name())).count();
            // A system-scope fence has the scoped builtin and the __atomic fallback.
            let want = if c.operation == Operation::Fence && c.scope == Scope::Sys {
                2
            } else {
                1
            };
            assert_eq!(n, want, "{}", c.id());
        }
        let src = llvm_ir_source(&cases_for(Producer::named("llvm")));
        assert!(src.contains(
            "cmpxchg ptr %p, i32 %e, i32 %d syncscope(\"block\") acq_rel acquire, align 4"
        ));
        assert!(src.contains("fence syncscope(\"cluster\") release\n"));
        assert!(src.contains("atomicrmw min ptr %p, i32 %v monotonic, align 4"));
        let src = clang_source(&cases_for(Producer::named("clang")));
        assert!(src.contains(
            "__scoped_atomic_compare_exchange_n(p, &e, d, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE)"
        ));
    }
}

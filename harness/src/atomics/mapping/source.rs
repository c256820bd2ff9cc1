//! Sources that make each producer emit one C++ atomic operation per function: libcu++
//! (`cuda::atomic_ref`, `cuda::atomic_thread_fence`) for NVRTC, and clang's scoped atomic
//! builtins for clang-19 in CUDA device mode. Many cases go into one compilation unit; each
//! case is an `extern "C"` non-inlined device function whose body holds only the operation,
//! its parameter loads and its return, so the memory instructions in its PTX are the mapping.

use crate::ptx::instr::Scope;
use crate::vocab::Vocabulary;
use strum::VariantArray;

use super::table::{Operation, Order, RmwOp};

pub(super) mod triton;

pub use crate::backend::producer::Producer;
use crate::backend::producer::{Language, Options};

/// The languages the cases are written in: libcu++ for NVRTC, clang's scoped atomic builtins,
/// LLVM IR atomics with `syncscope` (every case is expressible in IR, so the IR producer
/// separates front-end from back-end behaviour), Rust's `core::sync::atomic` and Triton's
/// `tl.atomic_*`.
pub(crate) const LANGUAGES: [Language; 5] = [
    Language::CudaCpp,
    Language::ClangCuda,
    Language::LlvmIr,
    Language::Rust,
    Language::Triton,
];

/// This area's view of the producer vocabulary: every producer that reads one of
/// [`LANGUAGES`].
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// The language `p` is given the cases in (`None` outside the view).
pub(crate) fn language(p: Producer) -> Option<Language> {
    p.language_of(&LANGUAGES)
}

/// How this area's messages name a producer: the library or builtins it compiles.
pub(crate) fn describe(p: Producer) -> String {
    let tool = p.tool();
    match language(p) {
        Some(Language::CudaCpp) => format!("libcu++ via {tool}"),
        Some(Language::ClangCuda) => format!("{tool} __scoped_atomic builtins"),
        Some(Language::LlvmIr) => format!("LLVM IR atomics via the {tool} NVPTX backend"),
        Some(Language::Rust) => format!("core::sync::atomic via {tool}"),
        Some(Language::Triton) => format!("{tool} tl.atomic_*"),
        _ => p.describe().to_string(),
    }
}

/// The source of `cases` in `language`; empty for a language the area does not write.
pub fn source(language: Language, cases: &[MappingCase]) -> String {
    match language {
        Language::CudaCpp => nvrtc_source(cases),
        Language::ClangCuda => clang_source(cases),
        Language::LlvmIr => llvm_ir_source(cases),
        Language::Rust => rust_source(cases),
        Language::Triton => triton::source(cases),
        Language::C | Language::NvvmIr | Language::Ptx | Language::Numba => String::new(),
    }
}

/// Where the atomic object lives, as the producer sees it: a pointer the compiler knows
/// points to global memory, a `__shared__` object, or a pointer whose state space the
/// compiler cannot see (generic addressing, PTX ISA §6.4.1.5 "Generic Addressing").
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum ObjectSpace {
    #[strum(serialize = "global")]
    Global,
    #[strum(serialize = "shared")]
    Shared,
    #[strum(serialize = "generic")]
    Generic,
}

/// The C++ value type of the atomic object, named as the PTX type it is accessed as:
/// `int`, `unsigned`, `long long`, `unsigned long long`, `float`, `double`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum ValueType {
    #[strum(serialize = "s32")]
    S32,
    #[strum(serialize = "u32")]
    U32,
    #[strum(serialize = "s64")]
    S64,
    #[strum(serialize = "u64")]
    U64,
    #[strum(serialize = "f32")]
    F32,
    #[strum(serialize = "f64")]
    F64,
}

impl ValueType {
    pub fn bits(self) -> u32 {
        match self {
            ValueType::S32 | ValueType::U32 | ValueType::F32 => 32,
            ValueType::S64 | ValueType::U64 | ValueType::F64 => 64,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, ValueType::F32 | ValueType::F64)
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, ValueType::S32 | ValueType::S64)
    }

    /// The C++ type.
    pub(crate) fn cxx(self) -> &'static str {
        match self {
            ValueType::S32 => "int",
            ValueType::U32 => "unsigned int",
            ValueType::S64 => "long long",
            ValueType::U64 => "unsigned long long",
            ValueType::F32 => "float",
            ValueType::F64 => "double",
        }
    }

    /// The LLVM IR type.
    fn llvm(self) -> &'static str {
        match self {
            ValueType::S32 | ValueType::U32 => "i32",
            ValueType::S64 | ValueType::U64 => "i64",
            ValueType::F32 => "float",
            ValueType::F64 => "double",
        }
    }

    /// The LLVM IR integer type of the same width (`cmpxchg` takes integers only).
    fn llvm_bits(self) -> &'static str {
        if self.bits() == 32 {
            "i32"
        } else {
            "i64"
        }
    }

    /// Whether C++ has the operation on the type: every operation on the integers; on
    /// floating point, load, store, exchange, compare_exchange and (C++20, and libcu++'s
    /// `cuda::atomic_ref`) fetch_add and fetch_sub ([atomics.ref.float]); thread fences take
    /// no object.
    pub fn has(self, op: Operation) -> bool {
        match op {
            Operation::Fence => false,
            Operation::Load | Operation::Store => true,
            Operation::Rmw(r) => {
                !self.is_float()
                    || matches!(
                        r,
                        RmwOp::FetchAdd
                            | RmwOp::FetchSub
                            | RmwOp::Exchange
                            | RmwOp::CompareExchange
                    )
            }
        }
    }
}

/// Whether the C++ call's result is used by the program: a `red` (PTX ISA `red`: an `atom`
/// without a destination) implements the RMW only when it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResultUse {
    Used,
    Discarded,
}

/// One mapping case: a producer compiling one operation at one order and scope, on an object
/// of one type in one state space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MappingCase {
    pub producer: Producer,
    pub operation: Operation,
    pub order: Order,
    pub scope: Scope,
    pub space: ObjectSpace,
    pub ty: ValueType,
    /// Whether the program uses the RMW's result; a discarded one lets the producer emit
    /// `red` (PTX ISA red: `atom` without a destination).
    pub result: ResultUse,
}

impl MappingCase {
    /// The case of `int` on `.global` (fences included: they take no object), whose ids
    /// carry no space and type segments.
    pub fn base(producer: Producer, operation: Operation, order: Order, scope: Scope) -> Self {
        MappingCase {
            producer,
            operation,
            order,
            scope,
            space: ObjectSpace::Global,
            ty: ValueType::S32,
            result: ResultUse::Used,
        }
    }

    /// The same case with the RMW's result discarded (`(void)a.fetch_add(v, order)`).
    pub(crate) fn discarded(self) -> Self {
        MappingCase {
            result: ResultUse::Discarded,
            ..self
        }
    }

    /// A case whose RMW result is discarded, listed by [`cases_for`]: an operation with a
    /// `red` form ([`RED_OPS`]); `int` on `.global` at every order and scope the chapter's
    /// `red` can carry (`.relaxed`, `.release`, PTX ISA red) and at every order at gpu scope;
    /// the other types and spaces (`.global`, `.shared`, generic) relaxed at [`typed_scope`].
    pub(crate) fn is_listed_red(&self) -> bool {
        let Operation::Rmw(r) = self.operation else {
            return false;
        };
        if self.result != ResultUse::Discarded
            || !RED_OPS.contains(&r)
            || !self.ty.has(self.operation)
        {
            return false;
        }
        if self.is_base() {
            self.scope == typed_scope(self.producer)
                || matches!(self.order, Order::Relaxed | Order::Release)
        } else {
            self.order == Order::Relaxed && self.scope == typed_scope(self.producer)
        }
    }

    /// `int` on `.global`, and every fence: ids without space and type.
    pub(crate) fn is_base(&self) -> bool {
        self.space == ObjectSpace::Global && self.ty == ValueType::S32
    }

    /// Stable id: `atomics.mapping.nvrtc.fetch_add.acquire.gpu` (`int` on `.global`, and
    /// fences), `atomics.mapping.nvrtc.fetch_add.acquire.gpu.shared.u64` otherwise; a `red`
    /// segment after the producer when the result is discarded
    /// (`atomics.mapping.nvrtc.red.fetch_add.relaxed.gpu`).
    pub fn id(&self) -> String {
        let mut id = format!(
            "atomics.mapping.{}{}.{}.{}.{}",
            self.producer.name(),
            self.red_segment("."),
            self.operation.name(),
            self.order.name(),
            self.scope.name()
        );
        if !self.is_base() {
            id.push_str(&format!(".{}.{}", self.space.name(), self.ty.name()));
        }
        id
    }

    /// The case an id names (the inverse of [`MappingCase::id`]); `None` for anything else,
    /// including an order the operation does not take, an operation C++ lacks on the type,
    /// and `global.s32` written out (its id has no such segments).
    pub(crate) fn from_id(id: &str) -> Option<MappingCase> {
        let rest = id.strip_prefix("atomics.mapping.")?;
        let mut parts: Vec<&str> = rest.split('.').collect();
        let discarded = parts.get(1) == Some(&"red");
        if discarded {
            parts.remove(1);
        }
        let (p, op, order, scope, space, ty) = match parts[..] {
            [p, op, order, scope] => (p, op, order, scope, None, None),
            [p, op, order, scope, space, ty] => (p, op, order, scope, Some(space), Some(ty)),
            _ => return None,
        };
        let producer = crate::backend::producer::parse_in_view(p, &producers())?;
        let operation = Operation::all().into_iter().find(|x| x.name() == op)?;
        let order = *operation
            .valid_orders()
            .iter()
            .find(|x| x.name() == order)?;
        let scope = *Scope::ALL.iter().find(|x| x.name() == scope)?;
        let mut case = MappingCase::base(producer, operation, order, scope);
        if let (Some(space), Some(ty)) = (space, ty) {
            case.space = ObjectSpace::parse(space)?;
            case.ty = ValueType::parse(ty)?;
            if case.is_base() || !case.ty.has(operation) {
                return None;
            }
        }
        if discarded {
            case = case.discarded();
            if !case.is_listed_red() {
                return None;
            }
        }
        Some(case)
    }

    /// The device function holding the case.
    pub(crate) fn function_name(&self) -> String {
        let mut f = format!(
            "gpucts_{}{}_{}_{}",
            self.red_segment("_"),
            self.operation.name(),
            self.order.name(),
            self.scope.name()
        );
        if !self.is_base() {
            f.push_str(&format!("_{}_{}", self.space.name(), self.ty.name()));
        }
        f
    }

    /// `red` after `sep` for a case whose result is discarded, else nothing.
    fn red_segment(&self, sep: &str) -> String {
        match self.result {
            ResultUse::Discarded if sep == "." => ".red".into(),
            ResultUse::Discarded => "red_".into(),
            ResultUse::Used => String::new(),
        }
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

/// The scope of the cases on types and spaces other than `int` on `.global`: each scope's
/// `.sem` and scope qualifiers are checked at every scope on `int`, and the type and space
/// change only the instruction's type and state-space qualifiers (suites/atomics.yaml keeps the
/// same list; four scopes quadrupled the suite's compile time).
/// The one scope of the cases on types and spaces other than `int` on `.global`, and of `red`
/// at every order: for Rust, whose atomics have no scope, system scope.
pub(crate) fn typed_scope(producer: Producer) -> Scope {
    match language(producer) {
        Some(Language::Rust) => Scope::Sys,
        _ => Scope::Gpu,
    }
}

/// The RMW operations with a PTX `red` form (PTX ISA red: `.add`, `.and`, `.or`, `.xor`,
/// `.min`, `.max`; `.inc`/`.dec` have no C++ operation): fetch_sub is `red.add` of the
/// negated operand, as for `atom`. Exchange and compare-exchange have none.
pub(crate) const RED_OPS: [RmwOp; 7] = [
    RmwOp::FetchAdd,
    RmwOp::FetchSub,
    RmwOp::FetchAnd,
    RmwOp::FetchOr,
    RmwOp::FetchXor,
    RmwOp::FetchMin,
    RmwOp::FetchMax,
];

/// `producer`'s cases: first every operation × order × scope on `int` in global memory (the
/// ids without space and type), then every other type × space for the operations C++ has on
/// the type.
pub fn cases_for(producer: Producer) -> Vec<MappingCase> {
    let mut v = Vec::new();
    for operation in Operation::all() {
        for &order in operation.valid_orders() {
            for &scope in Scope::ALL {
                v.push(MappingCase::base(producer, operation, order, scope));
            }
        }
    }
    for space in ObjectSpace::VARIANTS.iter().copied() {
        for ty in ValueType::VARIANTS.iter().copied() {
            for operation in Operation::all() {
                for &order in operation.valid_orders() {
                    let scope = typed_scope(producer);
                    let c = MappingCase {
                        space,
                        ty,
                        ..MappingCase::base(producer, operation, order, scope)
                    };
                    if !c.is_base() && ty.has(operation) {
                        v.push(c);
                    }
                }
            }
        }
    }
    // The RMWs whose result is discarded, which a producer may map to `red`.
    for space in ObjectSpace::VARIANTS.iter().copied() {
        for ty in ValueType::VARIANTS.iter().copied() {
            for r in RED_OPS {
                let operation = Operation::Rmw(r);
                for &order in operation.valid_orders() {
                    for &scope in Scope::ALL {
                        let c = MappingCase {
                            space,
                            ty,
                            ..MappingCase::base(producer, operation, order, scope)
                        }
                        .discarded();
                        if c.is_listed_red() {
                            v.push(c);
                        }
                    }
                }
            }
        }
    }
    // Rust's and Triton's cases are what each can write: listing the scopes, orders, types and
    // spaces their atomics lack would add only skips (each gap is named by
    // [`unsupported_reason`] all the same).
    if matches!(language(producer), Some(Language::Rust | Language::Triton)) {
        v.retain(|c| unsupported_reason(c).is_none());
    }
    v
}

/// Why the producer's source language cannot express a case whose function is absent from
/// the PTX (the generated source guards such cases out rather than failing the batch).
pub(crate) fn unsupported_reason(case: &MappingCase) -> Option<String> {
    Some(
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
            (Some(Language::Rust), s, _) if s != Scope::Sys => {
                "Rust's core::sync::atomic has no scope: its operations are judged at system \
                 scope, the scope a C++ memory_order alone implies"
                    .into()
            }
            (Some(Language::Rust), _, op) if op != Operation::Fence && case.ty.is_float() => {
                "Rust's core::sync::atomic has no floating-point atomic type".into()
            }
            (Some(Language::Rust), _, op)
                if op != Operation::Fence && case.space == ObjectSpace::Shared =>
            {
                "Rust cannot place an object in .shared (no address space on a static)".into()
            }
            (Some(Language::Triton), _, _) => return triton::unsupported_reason(case),
            // Every other case is written in the source: its function missing from the PTX is
            // the producer's doing, not a gap of the language.
            _ => return None,
        },
    )
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
pub(crate) fn nvrtc_cluster_probe() -> String {
    "#include <cuda/atomic>\n\
     extern \"C\" __device__ __noinline__ void gpucts_probe(int* p) {\n\
     \x20 cuda::atomic_ref<int, cuda::thread_scope_cluster> a(*p);\n\
     \x20 a.store(0, cuda::std::memory_order_relaxed);\n}\n"
        .into()
}

/// What the sources need of each tool (the toolchain adds the libcu++ include directory to
/// NVRTC's): `-rdc=true` keeps the unreferenced `extern "C"` device functions in the PTX; clang
/// and llc at `-O2`.
pub(crate) const OPTIONS: Options<'static> = Options {
    nvrtc: &["-std=c++17", "-rdc=true"],
    clang: &["-O2", "-fno-crash-diagnostics"],
    nvvm: &[],
    llc: &["-O2"],
    rustc: &["-Copt-level=2"],
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

/// The IR pointer type of a case's object: `addrspace(1)` for global memory, `addrspace(3)`
/// for shared memory (the address space a front end gives a `__shared__` object), the generic
/// `ptr` when the space is unknown (NVPTX address spaces, LLVM NVPTX usage guide).
fn llvm_ptr(space: ObjectSpace) -> &'static str {
    match space {
        ObjectSpace::Global => "ptr addrspace(1)",
        ObjectSpace::Shared => "ptr addrspace(3)",
        ObjectSpace::Generic => "ptr",
    }
}

/// One `#![no_std]` crate for `cases`: each case an exported `extern "C"` function holding one
/// `core::sync::atomic` operation. An object in `.global` is a `static` (PTX `.global`, as
/// rustc places statics); a generic one is behind a `&Atomic*` parameter. Rust has no scope,
/// no floating-point atomic type and no `.shared` object: [`unsupported_reason`] names those
/// gaps and the crate leaves such cases out.
pub(crate) fn rust_source(cases: &[MappingCase]) -> String {
    let mut s = String::from(
        "// Generated by gpucts (atomics mapping) for rustc, nvptx64-nvidia-cuda.\n\
         #![no_std]\n#![allow(dead_code, unused)]\n\
         use core::sync::atomic::{fence, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};\n",
    );
    let written: Vec<&MappingCase> = cases
        .iter()
        .filter(|c| unsupported_reason(c).is_none())
        .collect();
    for ty in ValueType::VARIANTS.iter().copied() {
        let used = written.iter().any(|c| {
            c.space == ObjectSpace::Global && c.ty == ty && c.operation != Operation::Fence
        });
        if let (true, Some((atomic, _))) = (used, rust_types(ty)) {
            s.push_str(&format!(
                "#[no_mangle] pub static {}: {atomic} = {atomic}::new(0);\n",
                rust_static(ty)
            ));
        }
    }
    for c in written {
        s.push_str(&rust_function(c));
    }
    s
}

/// The case's exported function.
fn rust_function(c: &MappingCase) -> String {
    let f = c.function_name();
    let order = rust_order(c.order);
    let Some((atomic, t)) = rust_types(c.ty) else {
        return String::new();
    };
    let (param, obj) = match c.space {
        ObjectSpace::Generic => (format!("p: &{atomic}, "), "p".to_string()),
        _ => (String::new(), rust_static(c.ty)),
    };
    let head = "#[no_mangle] pub extern \"C\" fn";
    match c.operation {
        Operation::Fence => format!("{head} {f}() {{ fence({order}); }}\n"),
        Operation::Load => format!("{head} {f}({param}) -> {t} {{ {obj}.load({order}) }}\n"),
        Operation::Store => format!("{head} {f}({param}v: {t}) {{ {obj}.store(v, {order}); }}\n"),
        Operation::Rmw(RmwOp::CompareExchange) => format!(
            "{head} {f}({param}e: {t}, d: {t}) -> {t} {{\n    \
             match {obj}.compare_exchange(e, d, {order}, {}) {{ Ok(x) | Err(x) => x }}\n}}\n",
            rust_order(cas_failure_order(c.order))
        ),
        Operation::Rmw(r) => {
            let method = match r {
                RmwOp::FetchAdd => "fetch_add",
                RmwOp::FetchSub => "fetch_sub",
                RmwOp::Exchange => "swap",
                RmwOp::FetchAnd => "fetch_and",
                RmwOp::FetchOr => "fetch_or",
                RmwOp::FetchXor => "fetch_xor",
                RmwOp::FetchMin => "fetch_min",
                RmwOp::FetchMax => "fetch_max",
                RmwOp::CompareExchange => unreachable!("written above"),
            };
            match c.result {
                ResultUse::Used => {
                    format!("{head} {f}({param}v: {t}) -> {t} {{ {obj}.{method}(v, {order}) }}\n")
                }
                ResultUse::Discarded => {
                    format!("{head} {f}({param}v: {t}) {{ let _ = {obj}.{method}(v, {order}); }}\n")
                }
            }
        }
    }
}

/// `core::sync::atomic`'s type and its value type; `None` for floating point, which Rust's
/// `core` has no atomic type for.
fn rust_types(ty: ValueType) -> Option<(&'static str, &'static str)> {
    Some(match ty {
        ValueType::S32 => ("AtomicI32", "i32"),
        ValueType::U32 => ("AtomicU32", "u32"),
        ValueType::S64 => ("AtomicI64", "i64"),
        ValueType::U64 => ("AtomicU64", "u64"),
        ValueType::F32 | ValueType::F64 => return None,
    })
}

/// The `static` holding the `.global` object of a type.
fn rust_static(ty: ValueType) -> String {
    format!("GPUCTS_OBJECT_{}", ty.name().to_ascii_uppercase())
}

fn rust_order(o: Order) -> &'static str {
    match o {
        Order::SeqCst => "Ordering::SeqCst",
        Order::AcqRel => "Ordering::AcqRel",
        Order::Acquire => "Ordering::Acquire",
        Order::Release => "Ordering::Release",
        Order::Relaxed => "Ordering::Relaxed",
    }
}

/// One LLVM IR module for `cases`: the C++ operations as LLVM's atomic instructions
/// (C++ relaxed is LLVM monotonic).
pub(crate) fn llvm_ir_source(cases: &[MappingCase]) -> String {
    let mut s = String::from("target triple = \"nvptx64-nvidia-cuda\"\n\n");
    for c in cases {
        let f = c.function_name();
        let order = llvm_order(c.order);
        let scope = llvm_scope(c.scope);
        let ptr = llvm_ptr(c.space);
        let t = c.ty.llvm();
        let align = c.ty.bits() / 8;
        let def = match c.operation {
            Operation::Fence => {
                format!("define void @{f}() {{\n  fence{scope} {order}\n  ret void\n}}\n")
            }
            Operation::Load => format!(
                "define {t} @{f}({ptr} %p) {{\n  %r = load atomic {t}, {ptr} %p{scope} {order}, \
                 align {align}\n  ret {t} %r\n}}\n"
            ),
            Operation::Store => format!(
                "define void @{f}({ptr} %p, {t} %v) {{\n  store atomic {t} %v, {ptr} %p{scope} \
                 {order}, align {align}\n  ret void\n}}\n"
            ),
            // cmpxchg takes integers: a floating-point compare-exchange compares the bits, as
            // C++ does ([atomics.types.operations]: the value representation).
            Operation::Rmw(RmwOp::CompareExchange) => {
                let i = c.ty.llvm_bits();
                format!(
                    "define {i} @{f}({ptr} %p, {i} %e, {i} %d) {{\n  %x = cmpxchg {ptr} %p, {i} %e, \
                     {i} %d{scope} {order} {}, align {align}\n  %r = extractvalue {{ {i}, i1 }} %x, 0\n  \
                     ret {i} %r\n}}\n",
                    llvm_order(cas_failure_order(c.order))
                )
            }
            Operation::Rmw(r) => {
                let float = c.ty.is_float();
                let signed = c.ty.is_signed();
                let op = match r {
                    RmwOp::FetchAdd if float => "fadd",
                    RmwOp::FetchSub if float => "fsub",
                    RmwOp::FetchAdd => "add",
                    RmwOp::FetchSub => "sub",
                    RmwOp::Exchange => "xchg",
                    RmwOp::FetchAnd => "and",
                    RmwOp::FetchOr => "or",
                    RmwOp::FetchXor => "xor",
                    RmwOp::FetchMin if signed => "min",
                    RmwOp::FetchMax if signed => "max",
                    RmwOp::FetchMin => "umin",
                    RmwOp::FetchMax => "umax",
                    RmwOp::CompareExchange => unreachable!("matched above"),
                };
                if c.result == ResultUse::Discarded {
                    format!(
                        "define void @{f}({ptr} %p, {t} %v) {{\n  %r = atomicrmw {op} {ptr} %p, {t} \
                         %v{scope} {order}, align {align}\n  ret void\n}}\n"
                    )
                } else {
                    format!(
                        "define {t} @{f}({ptr} %p, {t} %v) {{\n  %r = atomicrmw {op} {ptr} %p, {t} \
                         %v{scope} {order}, align {align}\n  ret {t} %r\n}}\n"
                    )
                }
            }
        };
        s.push_str(&def);
    }
    s
}

/// The `__shared__` array a libcu++ or clang case of `ty` operates on (one per type).
fn shared_array(ty: ValueType) -> String {
    format!("gpucts_shared_{}", ty.name())
}

/// The declarations of the `__shared__` arrays `cases` use, one per type.
fn shared_arrays(cases: &[MappingCase]) -> String {
    let mut s = String::new();
    for ty in ValueType::VARIANTS.iter().copied() {
        if cases
            .iter()
            .any(|c| c.ty == ty && c.space == ObjectSpace::Shared)
        {
            s.push_str(&format!(
                "__shared__ {} {}[32];\n",
                ty.cxx(),
                shared_array(ty)
            ));
        }
    }
    s.push('\n');
    s
}

/// The parameters that name a case's object, and the object: a pointer (global, generic) or
/// an index into the type's `__shared__` array, so the address is not a constant.
fn object(c: &MappingCase) -> (String, String) {
    let t = c.ty.cxx();
    match c.space {
        ObjectSpace::Shared => ("unsigned i".into(), format!("{}[i]", shared_array(c.ty))),
        ObjectSpace::Global | ObjectSpace::Generic => (format!("{t}* p"), "*p".into()),
    }
}

/// One libcu++ compilation unit for `cases` (their producer is ignored).
///
/// On a generic pointer libcu++ first tests `isspacep.local` and, for thread-private local
/// memory, uses plain local accesses instead of the atomic. The global cases assume a global
/// pointer (`__isGlobal`), as in a kernel whose pointer parameter is known to be global, so
/// that only the mapping remains; the generic cases keep that dispatch; the shared cases name
/// a `__shared__` object.
pub(crate) fn nvrtc_source(cases: &[MappingCase]) -> String {
    let mut s = String::from("#include <cuda/atomic>\n\n");
    s.push_str(&shared_arrays(cases));
    for c in cases {
        let f = c.function_name();
        let order = cxx_order(c.order);
        let t = c.ty.cxx();
        let (param, obj) = object(c);
        let assume = if c.space == ObjectSpace::Global {
            "__builtin_assume(__isGlobal(p));\n  "
        } else {
            ""
        };
        let aref = format!(
            "{assume}cuda::atomic_ref<{t}, {}> a({obj});",
            cu_scope(c.scope)
        );
        let body = match c.operation {
            Operation::Fence => format!(
                "extern \"C\" __device__ __noinline__ void {f}() {{\n  \
                 cuda::atomic_thread_fence({order}, {});\n}}\n",
                cu_scope(c.scope)
            ),
            Operation::Load => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}) {{\n  {aref}\n  \
                 return a.load({order});\n}}\n"
            ),
            Operation::Store => format!(
                "extern \"C\" __device__ __noinline__ void {f}({param}, {t} v) {{\n  {aref}\n  \
                 a.store(v, {order});\n}}\n"
            ),
            Operation::Rmw(RmwOp::CompareExchange) => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} e, {t} d) {{\n  \
                 {aref}\n  a.compare_exchange_strong(e, d, {order});\n  return e;\n}}\n"
            ),
            Operation::Rmw(r) if c.result == ResultUse::Discarded => format!(
                "extern \"C\" __device__ __noinline__ void {f}({param}, {t} v) {{\n  {aref}\n  \
                 (void)a.{}(v, {order});\n}}\n",
                r.name()
            ),
            Operation::Rmw(r) => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} v) {{\n  {aref}\n  \
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

/// A clang fence case: the scoped fence builtin, or (system scope only) GNU's
/// `__atomic_thread_fence`, which acts at system scope, where no scoped builtin exists.
fn clang_fence(f: &str, order: &str, scope: &str, sys: bool) -> String {
    let fallback = if sys {
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

/// clang's scoped builtin for an RMW other than compare-exchange.
fn clang_rmw_builtin(r: RmwOp) -> &'static str {
    match r {
        RmwOp::FetchAdd => "__scoped_atomic_fetch_add",
        RmwOp::FetchSub => "__scoped_atomic_fetch_sub",
        RmwOp::Exchange => "__scoped_atomic_exchange_n",
        RmwOp::FetchAnd => "__scoped_atomic_fetch_and",
        RmwOp::FetchOr => "__scoped_atomic_fetch_or",
        RmwOp::FetchXor => "__scoped_atomic_fetch_xor",
        RmwOp::FetchMin => "__scoped_atomic_fetch_min",
        RmwOp::FetchMax => "__scoped_atomic_fetch_max",
        RmwOp::CompareExchange => unreachable!("compare-exchange has its own source"),
    }
}

/// One clang CUDA compilation unit for `cases`. `-nocudainc` leaves the CUDA attribute
/// macros undefined, so the source defines the three it uses. Cases the compiler cannot express
/// are guarded out by the preprocessor and so are absent from the PTX. The global cases take
/// an `address_space(1)` pointer (the space stated, as `__isGlobal` states it to NVRTC).
pub(crate) fn clang_source(cases: &[MappingCase]) -> String {
    let mut s = String::from(
        "#define __device__ __attribute__((device))\n\
         #define __noinline__ __attribute__((noinline))\n\
         #define __shared__ __attribute__((shared))\n\
         #ifndef __has_builtin\n#define __has_builtin(x) 0\n#endif\n\n",
    );
    s.push_str(&shared_arrays(cases));
    for c in cases {
        let f = c.function_name();
        let order = gnu_order(c.order);
        let scope = clang_scope(c.scope);
        let t = c.ty.cxx();
        let (param, obj) = match c.space {
            ObjectSpace::Global => (
                format!("__attribute__((address_space(1))) {t}* p"),
                "p".to_string(),
            ),
            ObjectSpace::Generic => (format!("{t}* p"), "p".to_string()),
            ObjectSpace::Shared => (
                "unsigned i".to_string(),
                format!("&{}[i]", shared_array(c.ty)),
            ),
        };
        let p = obj;
        let float = c.ty.is_float();
        // The same-width integer and a pointer to it in the object's address space.
        let int = if c.ty.bits() == 32 {
            "unsigned int"
        } else {
            "unsigned long long"
        };
        let bits = match c.space {
            ObjectSpace::Global => format!("__attribute__((address_space(1))) {int}*"),
            ObjectSpace::Shared | ObjectSpace::Generic => format!("{int}*"),
        };
        let def = match c.operation {
            Operation::Fence => clang_fence(&f, order, scope, c.scope == Scope::Sys),
            // The `_n` builtins take integers and pointers, the generic ones want every
            // pointer in the object's address space: a floating-point load, store, exchange or
            // compare-exchange goes through the same-width integer, as libraries implement it.
            Operation::Load if float => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}) {{\n  \
                 return __builtin_bit_cast({t}, __scoped_atomic_load_n(({bits}){p}, {order}, \
                 {scope}));\n}}\n"
            ),
            Operation::Load => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}) {{\n  \
                 return __scoped_atomic_load_n({p}, {order}, {scope});\n}}\n"
            ),
            Operation::Store if float => format!(
                "extern \"C\" __device__ __noinline__ void {f}({param}, {t} v) {{\n  \
                 __scoped_atomic_store_n(({bits}){p}, __builtin_bit_cast({int}, v), {order}, \
                 {scope});\n}}\n"
            ),
            Operation::Store => format!(
                "extern \"C\" __device__ __noinline__ void {f}({param}, {t} v) {{\n  \
                 __scoped_atomic_store_n({p}, v, {order}, {scope});\n}}\n"
            ),
            Operation::Rmw(RmwOp::CompareExchange) if float => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} e, {t} d) {{\n  \
                 {int} x = __builtin_bit_cast({int}, e);\n  \
                 __scoped_atomic_compare_exchange_n(({bits}){p}, &x, __builtin_bit_cast({int}, d), \
                 0, {order}, {}, {scope});\n  return __builtin_bit_cast({t}, x);\n}}\n",
                gnu_order(cas_failure_order(c.order))
            ),
            Operation::Rmw(RmwOp::CompareExchange) => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} e, {t} d) {{\n  \
                 __scoped_atomic_compare_exchange_n({p}, &e, d, 0, {order}, {}, {scope});\n  \
                 return e;\n}}\n",
                gnu_order(cas_failure_order(c.order))
            ),
            Operation::Rmw(RmwOp::Exchange) if float => format!(
                "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} v) {{\n  \
                 return __builtin_bit_cast({t}, __scoped_atomic_exchange_n(({bits}){p}, \
                 __builtin_bit_cast({int}, v), {order}, {scope}));\n}}\n"
            ),
            Operation::Rmw(r) => {
                let builtin = clang_rmw_builtin(r);
                if c.result == ResultUse::Discarded {
                    format!(
                        "extern \"C\" __device__ __noinline__ void {f}({param}, {t} v) {{\n  \
                         (void){builtin}({p}, v, {order}, {scope});\n}}\n"
                    )
                } else {
                    format!(
                        "extern \"C\" __device__ __noinline__ {t} {f}({param}, {t} v) {{\n  \
                         return {builtin}({p}, v, {order}, {scope});\n}}\n"
                    )
                }
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
        let c = MappingCase::base(
            Producer::named("nvrtc"),
            Operation::Rmw(RmwOp::FetchAdd),
            Order::Acquire,
            Scope::Gpu,
        );
        assert_eq!(c.id(), "atomics.mapping.nvrtc.fetch_add.acquire.gpu");
        let shared = MappingCase {
            space: ObjectSpace::Shared,
            ty: ValueType::U64,
            ..c
        };
        assert_eq!(
            shared.id(),
            "atomics.mapping.nvrtc.fetch_add.acquire.gpu.shared.u64"
        );
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
        // `int` on `.global` has no written-out segments; C++ has no fetch_xor on float
        // ([atomics.ref.float]); a fence takes no object.
        for id in [
            "atomics.mapping.nvrtc.load.acquire.gpu.global.s32",
            "atomics.mapping.nvrtc.fetch_xor.relaxed.gpu.shared.f32",
            "atomics.mapping.nvrtc.fence.acquire.gpu.shared.u32",
            "atomics.mapping.nvrtc.load.acquire.gpu.shared",
        ] {
            assert_eq!(MappingCase::from_id(id), None, "{id}");
        }
        // `int` on `.global`: (4 fence + 3 load + 3 store + 9 RMW x 5 orders) x 4 scopes.
        // Every other type x space: integers (3 load + 3 store + 9 RMW x 5 orders = 51),
        // floating point (3 + 3 + 4 RMW x 5 = 26); per space 4 x 51 + 2 x 26 = 256; three
        // spaces less global s32 (51): 717, at gpu scope only.
        // The discarded results (`red`): 7 operations with a PTX red form on `int` at every
        // order at gpu scope (35) and at relaxed and release at cta, cluster, sys (42); u32,
        // s64, u64 (7 each) and f32, f64 (fetch_add, fetch_sub) relaxed at gpu: 25; on
        // `.shared` and generic objects the four integer types (28) and the two float types
        // (4), relaxed at gpu: 2 x 32 = 64.
        assert_eq!(
            cases_for(Producer::named("clang")).len(),
            220 + 717 + 102 + 64
        );
        // Rust's cases, all at system scope on the integer types in `.global` and generic
        // memory: 55 on `i32` in `.global`; 2 spaces x 4 types x 51 less global i32 (51):
        // 357; `red` on `i32` at every order (35), relaxed on the other 7 type-spaces (49).
        let rust = cases_for(Producer::named("rustc"));
        assert_eq!(rust.len(), 55 + 357 + 35 + 49);
        assert!(rust.iter().all(|c| c.scope == Scope::Sys
            && !c.ty.is_float()
            && c.space != ObjectSpace::Shared
            && unsupported_reason(c).is_none()));
        // Triton's, on global memory without seq_cst and cluster scope, fetch_sub, loads,
        // stores and fences: 8 RMWs x 4 orders x 3 scopes on `int` (96); u32, s64, u64 (8 x
        // 4 each) and f32, f64 (add, exchange, compare_exchange x 4) at gpu scope: 120; `red`
        // of 6 operations on `int` at 4 orders at gpu (24) and at relaxed and release at cta
        // and sys (24), relaxed at gpu on u32, s64, u64 (18) and f32, f64 (add: 2).
        let triton = cases_for(Producer::named("triton"));
        assert_eq!(triton.len(), 96 + 120 + 24 + 24 + 18 + 2);
        assert!(triton.iter().all(|c| c.space == ObjectSpace::Global
            && c.order != Order::SeqCst
            && c.scope != Scope::Cluster
            && matches!(c.operation, Operation::Rmw(r) if r != RmwOp::FetchSub)));
        // Six producers read one of the area's languages: nvrtc (libcu++), clang and clang-o1
        // (scoped builtins), llvm (IR), rustc (core::sync::atomic), triton (tl.atomic_*).
        assert_eq!(all.len(), 4 * 1103 + 496 + 284);
        let red = MappingCase::from_id("atomics.mapping.llvm.red.fetch_sub.release.sys").unwrap();
        assert_eq!(red.result, ResultUse::Discarded);
        assert_eq!(red.function_name(), "gpucts_red_fetch_sub_release_sys");
        // No red form (exchange), an order red cannot carry off gpu scope, a space or type
        // the red cases leave out: no case.
        for id in [
            "atomics.mapping.nvrtc.red.exchange.relaxed.gpu",
            "atomics.mapping.nvrtc.red.fetch_add.acquire.cta",
            "atomics.mapping.nvrtc.red.fetch_add.release.gpu.shared.u32",
            "atomics.mapping.nvrtc.red.fetch_and.relaxed.gpu.global.f32",
            "atomics.mapping.nvrtc.red.fetch_add.release.gpu.global.u64",
        ] {
            assert_eq!(MappingCase::from_id(id), None, "{id}");
        }
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
            "cmpxchg ptr %p, i32 %e, i32 %d syncscope(\"device\") acq_rel acquire, align 4"
        ));
        assert!(src.contains("fence syncscope(\"cluster\") release\n"));
        assert!(
            src.contains("atomicrmw min ptr %p, i32 %v syncscope(\"device\") monotonic, align 4")
        );
        let src = clang_source(&cases_for(Producer::named("clang")));
        assert!(src.contains(
            "__scoped_atomic_compare_exchange_n(p, &e, d, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE)"
        ));
        let cases = cases_for(Producer::named("rustc"));
        let src = rust_source(&cases);
        for c in &cases {
            let n = src.matches(&format!(" {}(", c.function_name())).count();
            assert_eq!(n, 1, "{}", c.id());
        }
        // C++'s failure ordering for compare_exchange; `.global` objects are statics, one per
        // type; a discarded result is `let _`.
        assert!(src.contains(
            "fn gpucts_compare_exchange_acq_rel_sys(e: i32, d: i32) -> i32 {\n    \
             match GPUCTS_OBJECT_S32.compare_exchange(e, d, Ordering::AcqRel, Ordering::Acquire)"
        ));
        assert!(src.contains(
            "fn gpucts_fetch_max_seq_cst_sys_generic_u64(p: &AtomicU64, v: u64) -> u64 { p.fetch_max(v, Ordering::SeqCst) }"
        ));
        assert!(src.contains(
            "fn gpucts_red_fetch_sub_relaxed_sys_global_u32(v: u32) { let _ = GPUCTS_OBJECT_U32.fetch_sub(v, Ordering::Relaxed); }"
        ));
        assert_eq!(src.matches("#[no_mangle] pub static").count(), 4);
    }

    /// What Rust's atomics cannot say is a named gap, never a case written some other way:
    /// a scope, a floating-point type, a `.shared` object.
    #[test]
    fn rust_gaps_are_named_and_not_written() {
        let rustc = Producer::named("rustc");
        let add = Operation::Rmw(RmwOp::FetchAdd);
        let at_gpu = MappingCase::base(rustc, add, Order::Relaxed, Scope::Gpu);
        let sys = MappingCase::base(rustc, add, Order::Relaxed, Scope::Sys);
        let float = MappingCase {
            ty: ValueType::F32,
            ..sys
        };
        let shared = MappingCase {
            space: ObjectSpace::Shared,
            ty: ValueType::U32,
            ..sys
        };
        for (c, why) in [
            (at_gpu, "no scope"),
            (float, "no floating-point atomic type"),
            (shared, "cannot place an object in .shared"),
        ] {
            let reason = unsupported_reason(&c).unwrap_or_default();
            assert!(reason.contains(why), "{}: {reason}", c.id());
            assert!(
                !rust_source(&[c]).contains(&c.function_name()),
                "{}",
                c.id()
            );
        }
        assert_eq!(unsupported_reason(&sys), None);
        assert_eq!(
            MappingCase::from_id("atomics.mapping.rustc.fetch_add.relaxed.gpu"),
            Some(at_gpu)
        );
    }
}

//! Structured view of memory-model instructions: the kind, semantics, scope, state space and
//! operation of `ld`, `st`, `atom`, `red`, `fence`, `membar` and barriers, with the PTX ISA's
//! defaults for omitted qualifiers applied by [`MemOp::effective`].

use std::fmt;

use super::Instruction;

/// Kinds of instruction the memory consistency model gives meaning to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemOpKind {
    Ld,
    St,
    Atom,
    Red,
    /// `fence` (thread fence; proxy fences are [`MemOpKind::ProxyFence`]).
    Fence,
    /// Legacy `membar.{cta,gl,sys}`.
    Membar,
    /// `fence.proxy.*` / `membar.proxy.*`: orders proxies, not threads.
    ProxyFence,
    /// `bar`, `barrier`, `bar.warp.sync` and friends.
    Barrier,
}

impl MemOpKind {
    pub fn name(self) -> &'static str {
        match self {
            MemOpKind::Ld => "ld",
            MemOpKind::St => "st",
            MemOpKind::Atom => "atom",
            MemOpKind::Red => "red",
            MemOpKind::Fence => "fence",
            MemOpKind::Membar => "membar",
            MemOpKind::ProxyFence => "fence.proxy",
            MemOpKind::Barrier => "bar",
        }
    }
}

/// Memory-synchronising semantics (`.sem`), plus the two non-`.sem` qualifiers that decide
/// strength: `.weak` (explicit or by default on `ld`/`st`) and `.volatile`. The crate's one
/// definition: the instruction reader, the mapping tables and the litmus tests all use it
/// (a litmus test accepts every value but `volatile`, see `atomics::litmus`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Sem {
    Weak,
    Volatile,
    Relaxed,
    Acquire,
    Release,
    AcqRel,
    Sc,
}

impl Sem {
    pub fn name(self) -> &'static str {
        // the strum spelling (snake_case of the variant): the PTX modifier without its dot
        self.into()
    }

    /// The semantic a PTX modifier names (`acq_rel` for `.acq_rel`).
    pub fn parse(m: &str) -> Option<Sem> {
        m.parse().ok()
    }

    /// `self` is at least as strong as `other` in the order the ptx-interop 13.2 ch. 4 note
    /// lets a mapping strengthen: relaxed < acquire, release < acq_rel < sc. `weak` and
    /// `volatile` are below or beside all of these and only equal themselves (volatile is
    /// normalised to relaxed.sys by [`MemOp::effective`] before comparing).
    pub fn at_least(self, other: Sem) -> bool {
        use Sem::*;
        if self == other {
            return true;
        }
        matches!(
            (self, other),
            (Acquire | Release | AcqRel | Sc, Relaxed)
                | (AcqRel | Sc, Acquire | Release)
                | (Sc, AcqRel)
        )
    }
}

/// Thread scopes of the PTX memory model (`.cta`, `.cluster`, `.gpu`, `.sys`): the set of
/// threads a strong operation is morally strong with. Shared by the instruction reader and the
/// litmus model.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Scope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

impl Scope {
    pub const ALL: &'static [Scope] = <Scope as strum::VariantArray>::VARIANTS;

    pub fn name(self) -> &'static str {
        // the strum spelling (snake_case of the variant): the PTX modifier without its dot
        self.into()
    }

    /// The scope a PTX modifier names (`gpu` for `.gpu`).
    pub fn parse(m: &str) -> Option<Scope> {
        m.parse().ok()
    }
}

/// State spaces a memory instruction may name (`.shared::cta` and `.shared::cluster` keep
/// their sub-qualifier). The crate's one definition; a litmus location uses `global`,
/// `shared` or `const`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    #[default]
    Global,
    Shared,
    SharedCta,
    SharedCluster,
    Local,
    Param,
    Const,
}

impl Space {
    /// The state space a PTX modifier names.
    pub fn parse(m: &str) -> Option<Space> {
        Some(match m {
            "global" => Space::Global,
            "shared" => Space::Shared,
            "shared::cta" => Space::SharedCta,
            "shared::cluster" => Space::SharedCluster,
            "local" => Space::Local,
            "const" => Space::Const,
            _ if m == "param" || m.starts_with("param::") => Space::Param,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCta => "shared::cta",
            Space::SharedCluster => "shared::cluster",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
        }
    }
}

/// Atomic operations of `atom`/`red`: the crate's one definition (the instruction reader, the
/// mapping tables via `mapping::table::RmwOp::ptx_op`, and the litmus tests).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AtomOp {
    Add,
    /// Not a PTX `atom` operation, but Dat3M's PTX litmus tests use it (`atom.acq_rel.sys.sub`).
    Sub,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Min,
    Max,
    Inc,
    Dec,
}

impl AtomOp {
    pub fn name(self) -> &'static str {
        // the strum spelling (snake_case of the variant): the PTX modifier without its dot
        self.into()
    }

    /// The operation a PTX modifier names.
    pub fn parse(m: &str) -> Option<AtomOp> {
        m.parse().ok()
    }

    /// The value written, given the value read and the operand, on 64-bit values (the PTX ISA
    /// `atom` descriptions; `inc`/`dec` wrap at the operand as the ISA says, `cas` is decided
    /// by the caller: this gives the value written when the comparison succeeds).
    pub fn apply(self, old: i64, val: i64) -> i64 {
        match self {
            AtomOp::Exch | AtomOp::Cas => val,
            AtomOp::Add => old.wrapping_add(val),
            AtomOp::Sub => old.wrapping_sub(val),
            AtomOp::And => old & val,
            AtomOp::Or => old | val,
            AtomOp::Xor => old ^ val,
            AtomOp::Min => old.min(val),
            AtomOp::Max => old.max(val),
            // inc: (old >= val) ? 0 : old + 1; dec: (old == 0 || old > val) ? val : old - 1
            AtomOp::Inc => {
                if old >= val {
                    0
                } else {
                    old + 1
                }
            }
            AtomOp::Dec => {
                if old == 0 || old > val {
                    val
                } else {
                    old - 1
                }
            }
        }
    }
}

/// A memory-model instruction taken apart. `sem` and `scope` are what the text says; use
/// [`MemOp::effective`] for what the PTX ISA says they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemOp {
    pub kind: MemOpKind,
    pub sem: Option<Sem>,
    pub scope: Option<Scope>,
    pub space: Option<Space>,
    pub op: Option<AtomOp>,
    /// The data type modifier (`s32`, `b64`, ...), the last one given.
    pub ty: Option<String>,
    /// `membar` level as written (`cta`, `gl`, `sys`).
    pub level: Option<String>,
}

impl MemOp {
    pub fn from_instruction(ins: &Instruction) -> Option<MemOp> {
        let kind = match ins.opcode.as_str() {
            "ld" | "ldu" => MemOpKind::Ld,
            "st" => MemOpKind::St,
            "atom" => MemOpKind::Atom,
            "red" => MemOpKind::Red,
            "fence" | "membar" if ins.has("proxy") => MemOpKind::ProxyFence,
            "fence" => MemOpKind::Fence,
            "membar" => MemOpKind::Membar,
            "bar" | "barrier" => MemOpKind::Barrier,
            _ => return None,
        };
        let mut m = MemOp {
            kind,
            sem: None,
            scope: None,
            space: None,
            op: None,
            ty: None,
            level: None,
        };
        for md in &ins.modifiers {
            if let Some(s) = Sem::parse(md) {
                m.sem = Some(s);
            } else if let Some(s) = Scope::parse(md) {
                m.scope = Some(s);
            } else if let Some(s) = Space::parse(md) {
                m.space = Some(s);
            } else if let (Some(o), MemOpKind::Atom | MemOpKind::Red) = (AtomOp::parse(md), kind) {
                m.op = Some(o);
            } else if is_type(md) {
                m.ty = Some(md.clone());
            } else if kind == MemOpKind::Membar && matches!(md.as_str(), "gl") {
                m.level = Some(md.clone());
            }
        }
        if kind == MemOpKind::Membar {
            m.level = m.level.or_else(|| m.scope.map(|s| s.name().to_string()));
        }
        Some(m)
    }

    /// Semantics and scope with the PTX ISA's defaults and synonyms applied:
    /// - `atom`/`red` without `.sem` are `.relaxed`, without `.scope` are `.gpu` (PTX ISA
    ///   §9.7.13.5 atom, §9.7.13.6 red);
    /// - `fence` without `.sem` is `.acq_rel` (PTX ISA §9.7.13.4 membar/fence);
    /// - `membar.{cta,gl,sys}` is `fence.sc.{cta,gpu,sys}` on sm_70 and later (same clause);
    /// - `.volatile` `ld`/`st` are relaxed at system scope (PTX ISA §8.4.2);
    /// - `ld`/`st` with neither `.sem` nor `.volatile` are weak, without a scope.
    pub fn effective(&self) -> Effective {
        let (kind, sem, scope) = match self.kind {
            MemOpKind::Atom | MemOpKind::Red => (
                self.kind,
                Some(self.sem.unwrap_or(Sem::Relaxed)),
                Some(self.scope.unwrap_or(Scope::Gpu)),
            ),
            MemOpKind::Fence => (
                MemOpKind::Fence,
                Some(self.sem.unwrap_or(Sem::AcqRel)),
                self.scope,
            ),
            MemOpKind::Membar => {
                let scope = match self.level.as_deref() {
                    Some("cta") => Some(Scope::Cta),
                    Some("gl") => Some(Scope::Gpu),
                    Some("sys") => Some(Scope::Sys),
                    _ => None,
                };
                (MemOpKind::Fence, Some(Sem::Sc), scope)
            }
            MemOpKind::Ld | MemOpKind::St => match self.sem {
                Some(Sem::Volatile) => (self.kind, Some(Sem::Relaxed), Some(Scope::Sys)),
                None | Some(Sem::Weak) => (self.kind, Some(Sem::Weak), None),
                Some(s) => (self.kind, Some(s), self.scope),
            },
            MemOpKind::ProxyFence | MemOpKind::Barrier => (self.kind, self.sem, self.scope),
        };
        Effective {
            kind,
            sem,
            scope,
            op: self.op,
        }
    }
}

/// A memory instruction's meaning after defaults: what the mapping check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// `Membar` becomes `Fence`.
    pub kind: MemOpKind,
    pub sem: Option<Sem>,
    pub scope: Option<Scope>,
    pub op: Option<AtomOp>,
}

impl fmt::Display for Effective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(s) = self.sem {
            write!(f, ".{}", s.name())?;
        }
        if let Some(s) = self.scope {
            write!(f, ".{}", s.name())?;
        }
        if let Some(o) = self.op {
            write!(f, ".{}", o.name())?;
        }
        Ok(())
    }
}

fn is_type(m: &str) -> bool {
    let b = m.as_bytes();
    if b.len() < 2 {
        return false;
    }
    matches!(b[0], b'b' | b'u' | b's' | b'f') && m[1..].bytes().all(|c| c.is_ascii_digit())
        || matches!(m, "pred" | "bf16" | "bf16x2" | "f16x2")
}

//! The rules a test must keep: names, registers, jump targets, and the semantics and scopes
//! each instruction admits.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    is_name, test_name_problem, AtomOp, InvalidTest, LitmusTest, Op, Proxy, Sem, Space, Term,
    Thread, MAX_LOCATIONS, MAX_OPS, MAX_THREADS,
};

impl LitmusTest {
    /// Every location the test names (listed or used), in first-mention order.
    pub fn all_locations(&self) -> Vec<String> {
        let mut out: Vec<String> = self.locations.iter().map(|l| l.name.clone()).collect();
        // A set of the names so far: linear in locations and operations together.
        let mut seen: std::collections::HashSet<&str> =
            self.locations.iter().map(|l| l.name.as_str()).collect();
        for t in &self.threads {
            for op in &t.ops {
                for loc in op.locs() {
                    if seen.insert(loc) {
                        out.push(loc.to_string());
                    }
                }
            }
        }
        out
    }

    /// The bounds every reader checks before any other work: [`MAX_LOCATIONS`],
    /// [`MAX_THREADS`], [`MAX_OPS`]. Errors point at the first location, thread or operation
    /// past the bound.
    pub fn check_size(&self) -> Result<(), InvalidTest> {
        if self.locations.len() > MAX_LOCATIONS {
            return Err(InvalidTest::Location {
                index: MAX_LOCATIONS,
                what: format!(
                    "test `{}` lists {} locations; a litmus test has at most {MAX_LOCATIONS}",
                    self.name,
                    self.locations.len()
                ),
            });
        }
        if self.threads.len() > MAX_THREADS {
            return Err(InvalidTest::Thread {
                index: MAX_THREADS,
                what: format!(
                    "test `{}` has {} threads; a litmus test has at most {MAX_THREADS}",
                    self.name,
                    self.threads.len()
                ),
            });
        }
        let mut ops = 0usize;
        for (thread, t) in self.threads.iter().enumerate() {
            if ops + t.ops.len() > MAX_OPS {
                return Err(InvalidTest::Op {
                    thread,
                    op: MAX_OPS - ops + 1,
                    what: format!(
                        "test `{}` has more than {MAX_OPS} operations; a litmus test has at most {MAX_OPS}, all threads together",
                        self.name
                    ),
                });
            }
            ops += t.ops.len();
        }
        Ok(())
    }

    pub fn init_of(&self, loc: &str) -> i64 {
        let phys = self.physical(loc);
        self.locations
            .iter()
            .find(|l| l.name == phys)
            .map_or(0, |l| l.init)
    }

    /// The physical location a name denotes: itself, or what it aliases.
    pub fn physical<'a>(&'a self, loc: &'a str) -> &'a str {
        let mut cur = loc;
        // Aliases may chain (`s1 @ surface aliases y` where `y @ generic aliases x`);
        // validation rejects cycles, the bound keeps a bad test from looping.
        for _ in 0..=self.locations.len() {
            match self
                .locations
                .iter()
                .find(|l| l.name == cur)
                .and_then(|l| l.alias.as_ref())
            {
                Some(a) => cur = a.of.as_str(),
                None => return cur,
            }
        }
        cur
    }

    /// The proxy through which a location name is accessed by generic instructions' peers:
    /// the alias declaration's proxy, generic otherwise.
    pub fn declared_proxy(&self, loc: &str) -> Proxy {
        self.locations
            .iter()
            .find(|l| l.name == loc)
            .and_then(|l| l.alias.as_ref())
            .map_or(Proxy::Generic, |a| a.proxy)
    }

    /// Whether the test needs the PTX 7.5 proxy model (aliases, proxy accesses or fences).
    pub fn uses_proxies(&self) -> bool {
        self.locations.iter().any(|l| l.alias.is_some())
            || self.threads.iter().flat_map(|t| &t.ops).any(|o| {
                matches!(
                    o,
                    Op::ProxyLd { .. }
                        | Op::ProxySt { .. }
                        | Op::ProxyFence { .. }
                        | Op::BulkCopy { .. }
                        | Op::MbarWait { .. }
                )
            })
    }

    /// Checks what serde cannot: semantics valid for each operation, scopes present exactly on
    /// strong operations, registers and threads in the condition exist.
    pub fn validate(&self) -> Result<(), InvalidTest> {
        self.check_size()?;
        if let Some(why) = test_name_problem(&self.name) {
            return Err(InvalidTest::Name(format!(
                "test name {:?} {why}; a name is one line of text (Dat3M's `PTX NAME` header)",
                self.name
            )));
        }
        if let Some(d) = &self.description {
            // A carriage return is dropped as a line-end artefact by the Dat3M reader, and
            // other control characters have no place in a description: refused, so that a
            // test survives `litmus export | litmus import` as it is.
            if let Some(c) = d
                .chars()
                .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            {
                return Err(InvalidTest::Description(format!(
                    "the description holds the control character {c:?}; a description is text, lines and tabs"
                )));
            }
        }
        if self.threads.is_empty() {
            return Err(InvalidTest::Test(format!(
                "test `{}` has no threads",
                self.name
            )));
        }
        let locs = self.all_locations();
        let mut listed = std::collections::HashSet::new();
        for (index, l) in self.locations.iter().enumerate() {
            if !is_name(&l.name) {
                return Err(InvalidTest::Test(format!(
                    "location `{}` is not a name; a location is [A-Za-z_%][A-Za-z0-9_%$]*",
                    l.name
                )));
            }
            // Which initial value would hold is anyone's guess, and the Dat3M export would
            // write an init block its import refuses.
            if !listed.insert(l.name.as_str()) {
                return Err(InvalidTest::Location {
                    index,
                    what: format!("location `{}` listed twice", l.name),
                });
            }
        }
        let name_rule = "[A-Za-z_%][A-Za-z0-9_%$]*";
        for (ti, t) in self.threads.iter().enumerate() {
            for r in t.regs.keys() {
                if !is_name(r) {
                    return Err(InvalidTest::Test(format!(
                        "P{ti}: initial register `{r}` is not a register name ({name_rule})"
                    )));
                }
            }
            // Sets built once: the checks below stay linear in the number of operations.
            let written: BTreeSet<&str> = t.ops.iter().filter_map(Op::dest).collect();
            let mut labels: BTreeMap<&str, usize> = BTreeMap::new();
            for o in &t.ops {
                if let Op::Label { name } = o {
                    *labels.entry(name.as_str()).or_default() += 1;
                }
            }
            for (oi, op) in t.ops.iter().enumerate() {
                validate_op(t, ti, oi, op, &written, &labels)?;
            }
        }
        self.validate_aliases()?;
        self.validate_async()?;
        self.validate_condition(&locs)
    }

    /// The Dat3M text has no state spaces; a bulk copy's destination and mbarrier are in
    /// shared memory by the instruction's definition (`cp.async.bulk.shared::cluster.global`,
    /// an mbarrier object in `.shared::cta`), so the reader places them there (listing them
    /// when the init block did not).
    pub fn place_async_locations(&mut self) {
        let shared: Vec<String> = self
            .threads
            .iter()
            .flat_map(|t| &t.ops)
            .filter_map(|o| match o {
                Op::BulkCopy { dst, mbar, .. } => Some([dst.clone(), mbar.clone()]),
                _ => None,
            })
            .flatten()
            .collect();
        for name in shared {
            match self.locations.iter_mut().find(|l| l.name == name) {
                Some(l) => l.space = Space::Shared,
                None => self.locations.push(super::Location {
                    name,
                    init: 0,
                    space: Space::Shared,
                    alias: None,
                }),
            }
        }
    }

    /// The rules of the async proxy's operations, from the PTX ISA: an mbarrier object is
    /// reached only through the mbarrier operations (`cp.async.bulk`'s completion and
    /// `mbarrier.try_wait`), each test's mbarrier tracks exactly one bulk copy (its phase 0),
    /// a copy's destination, source and mbarrier are three distinct locations, and a thread
    /// waits only on an mbarrier of its own CTA (`mbarrier.try_wait` takes `.shared::cta`
    /// addresses; the copy's destination and mbarrier are in the issuing CTA).
    fn validate_async(&self) -> Result<(), InvalidTest> {
        let mut issuer: BTreeMap<&str, (usize, &Thread)> = BTreeMap::new();
        for (ti, t) in self.threads.iter().enumerate() {
            for op in &t.ops {
                if let Op::BulkCopy { dst, src, mbar } = op {
                    if dst == src || dst == mbar || src == mbar {
                        return Err(InvalidTest::Test(format!(
                            "`cp.async.bulk {dst}, {src}, {mbar}`: destination, source and mbarrier must be three locations"
                        )));
                    }
                    let space = |l: &str| {
                        self.locations
                            .iter()
                            .find(|m| m.name == l)
                            .map_or(Space::Global, |m| m.space)
                    };
                    if (space(dst), space(src), space(mbar))
                        != (Space::Shared, Space::Global, Space::Shared)
                    {
                        return Err(InvalidTest::Test(format!(
                            "`cp.async.bulk {dst}, {src}, {mbar}`: the copy goes from global `{src}` to shared `{dst}` and completes on shared mbarrier `{mbar}` (cp.async.bulk.shared::cluster.global)"
                        )));
                    }
                    if issuer.insert(mbar, (ti, t)).is_some() {
                        return Err(InvalidTest::Test(format!(
                            "mbarrier `{mbar}` completes more than one cp.async.bulk; a test's mbarrier tracks one copy (its phase 0)"
                        )));
                    }
                }
            }
        }
        for l in &self.locations {
            if issuer.contains_key(l.name.as_str()) && (l.alias.is_some() || l.init != 0) {
                return Err(InvalidTest::Test(format!(
                    "mbarrier `{}` is an mbarrier object: no alias, no initial value",
                    l.name
                )));
            }
            if l.alias.as_ref().is_some_and(|a| a.proxy == Proxy::Async) {
                return Err(InvalidTest::Test(format!(
                    "`{} @ async aliases ...`: the async proxy is reached through cp.async.bulk only",
                    l.name
                )));
            }
        }
        for (ti, t) in self.threads.iter().enumerate() {
            for op in &t.ops {
                match op {
                    Op::MbarWait { mbar } => match issuer.get(mbar.as_str()) {
                        None => {
                            return Err(InvalidTest::Test(format!(
                                "P{ti} waits on `{mbar}`, which no cp.async.bulk completes"
                            )))
                        }
                        Some((pi, p)) if (p.gpu, p.effective_cluster(), p.cta) != (t.gpu, t.effective_cluster(), t.cta) => {
                            return Err(InvalidTest::Test(format!(
                                "P{ti} waits on `{mbar}` of P{pi}'s CTA; mbarrier.try_wait reads an mbarrier of the thread's own CTA"
                            )))
                        }
                        Some(_) => {}
                    },
                    Op::BulkCopy { .. } => {}
                    _ => {
                        if let Some(l) = op.loc().filter(|l| issuer.contains_key(l)) {
                            return Err(InvalidTest::Test(format!(
                                "P{ti} accesses mbarrier `{l}` with `{}`; an mbarrier is reached only by cp.async.bulk and mbarrier.try_wait",
                                super::dat3m::instr_text(op)
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Every alias names a location declared before it, and aliases form no cycle.
    fn validate_aliases(&self) -> Result<(), InvalidTest> {
        for l in &self.locations {
            if let Some(a) = &l.alias {
                let declared = self.locations.iter().any(|m| m.name == a.of);
                let phys = self.physical(&l.name);
                let ends = self
                    .locations
                    .iter()
                    .any(|m| m.name == phys && m.alias.is_none());
                match declared && ends {
                    true => {}
                    false => {
                        return Err(InvalidTest::Test(format!(
                            "`{} @ {} aliases {}`: `{}` must be a location declared before it (aliases may not form a cycle)",
                            l.name,
                            a.proxy.name(),
                            a.of,
                            a.of
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// Every register and location the condition names exists in the test.
    fn validate_condition(&self, locs: &[String]) -> Result<(), InvalidTest> {
        let mut terms = BTreeSet::new();
        self.condition.prop.terms(&mut terms);
        for term in terms {
            match &term {
                Term::Reg { thread, .. } if *thread >= self.threads.len() => {
                    return Err(InvalidTest::Condition(format!(
                        "condition names {term}, but the test has no thread P{thread}"
                    )));
                }
                Term::Reg { thread, reg }
                    if !self.threads[*thread].regs.contains_key(reg)
                        && !self.threads[*thread]
                            .ops
                            .iter()
                            .any(|o| o.dest() == Some(reg.as_str())) =>
                {
                    return Err(InvalidTest::Condition(format!(
                        "condition names {term}, a register P{thread} neither initialises nor writes"
                    )));
                }
                Term::Loc(l) if !locs.contains(l) => {
                    return Err(InvalidTest::Condition(format!(
                        "condition names location `{l}`, which the test never uses"
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The names one operation uses: its locations and registers are names, and the registers it
/// reads are initialised or written by thread `ti` (`t`).
fn validate_names(t: &Thread, ti: usize, op: &Op, written: &BTreeSet<&str>) -> Result<(), String> {
    let name_rule = "[A-Za-z_%][A-Za-z0-9_%$]*";
    if let Some(l) = op.locs().into_iter().find(|l| !is_name(l)) {
        return Err(format!(
            "address `[{l}]` is not a location name ({name_rule})"
        ));
    }
    if let Some(r) = op.dest().filter(|r| !is_name(r)) {
        return Err(format!("`{r}` is not a register name ({name_rule})"));
    }
    for r in op.operand_regs() {
        if !is_name(r) {
            return Err(format!(
                "operand `{r}` is neither an integer nor a register name ({name_rule})"
            ));
        }
        if !t.regs.contains_key(r) && !written.contains(r) {
            return Err(format!(
                "register `{r}` is neither initialised nor written by P{ti}"
            ));
        }
    }
    Ok(())
}

/// The rules of one operation (`oi`: its 0-based index in thread `ti`): names, registers
/// read before written, jump targets, and the semantics and scopes each instruction admits.
fn validate_op(
    t: &Thread,
    ti: usize,
    oi: usize,
    op: &Op,
    written: &BTreeSet<&str>,
    labels: &BTreeMap<&str, usize>,
) -> Result<(), InvalidTest> {
    let bad = |what: String| InvalidTest::Op {
        thread: ti,
        op: oi + 1,
        what,
    };
    validate_names(t, ti, op, written).map_err(bad)?;
    match op {
        Op::Label { name } => {
            let n = labels.get(name.as_str()).copied().unwrap_or(0);
            if n > 1 {
                return Err(bad(format!("label `{name}` defined {n} times in P{ti}")));
            }
        }
        Op::Branch { target, .. } | Op::Goto { target } => {
            if !labels.contains_key(target.as_str()) {
                return Err(bad(format!(
                    "jump to `{target}`, which is no label of P{ti}"
                )));
            }
        }
        Op::Local { .. }
        | Op::Barrier { .. }
        | Op::ProxyFence { .. }
        | Op::BulkCopy { .. }
        | Op::MbarWait { .. } => {}
        Op::ProxyLd {
            sem, scope, proxy, ..
        }
        | Op::ProxySt {
            sem, scope, proxy, ..
        } => {
            if !matches!(sem, Sem::Weak | Sem::Relaxed | Sem::Acquire | Sem::Release)
                || (*sem == Sem::Weak) != scope.is_none()
                || matches!(proxy, Proxy::Generic | Proxy::Async)
            {
                return Err(bad(format!(
                    "a {} proxy access must be weak (no scope) or \
                         relaxed/acquire/release with a scope",
                    proxy.name()
                )));
            }
        }
        Op::Ld { sem, scope, .. } | Op::St { sem, scope, .. } => {
            let is_ld = matches!(op, Op::Ld { .. });
            let ok = match sem {
                Sem::Weak | Sem::Relaxed => true,
                Sem::Acquire => is_ld,
                Sem::Release => !is_ld,
                Sem::AcqRel | Sem::Sc | Sem::Volatile => false,
            };
            if !ok {
                return Err(bad(format!(
                    "`{}` cannot be .{}",
                    if is_ld { "ld" } else { "st" },
                    sem.name()
                )));
            }
            if (*sem == Sem::Weak) != scope.is_none() {
                return Err(bad(
                    "a scope is required on strong operations and not allowed on weak ones"
                        .to_string(),
                ));
            }
        }
        Op::Atom {
            op: rop, sem, cmp, ..
        } => {
            if matches!(sem, Sem::Weak | Sem::Sc | Sem::Volatile) {
                return Err(bad(format!("`atom` cannot be .{}", sem.name())));
            }
            if (*rop == AtomOp::Cas) != cmp.is_some() {
                return Err(bad("`cmp` is required for cas and only for cas".to_string()));
            }
        }
        Op::Red { op: rop, sem, .. } => {
            if matches!(sem, Sem::Weak | Sem::Sc | Sem::Volatile) || *rop == AtomOp::Cas {
                return Err(bad(format!(
                    "`red` cannot be .{} / .{}",
                    sem.name(),
                    rop.name()
                )));
            }
        }
        Op::Fence { sem, .. } => {
            if matches!(sem, Sem::Weak | Sem::Relaxed | Sem::Volatile) {
                return Err(bad(format!("`fence` cannot be .{}", sem.name())));
            }
        }
        Op::Mov { .. } => {}
    }
    Ok(())
}

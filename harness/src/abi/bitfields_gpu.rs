//! §1.3 bit fields read back through their members on a GPU: a kernel written here in PTX
//! calls each producer's own accessors ([`bitfield_values`]'s `get_<f>`/`set_<f>`, linked by
//! the driver's JIT linker) on objects in device memory: `get_<f>` of an all-ones object, then
//! `set_<f>` of the field's lowest (signed) or top-bit (unsigned) value into a zeroed object
//! and `get_<f>` of that. The 64-bit values it stores are compared with §1.3's table
//! ([`bitfield_values::expected`]). Offline the same kernel runs through the PTX interpreter,
//! each call answered by the producer's function run on the same object bytes.

use crate::area::CaseContext;
use crate::backend::cuda::{KernelArg, LaunchConfig};
use crate::backend::producer::Producer;
use crate::outcome::CaseStatus;
use crate::ptx::exec::{Machine, MemSpace, Stop};

use super::bitfield_values::{self, FIELDS};

/// Bytes of one object (the struct fits: `bitfield_values` fills as many).
pub const OBJECT: u64 = 64;
/// Per field: the all-ones object, then the zeroed one.
const PER_FIELD: u64 = 2 * OBJECT;

/// The kernel's name.
pub const KERNEL: &str = "gpucts_bitfields";

/// The kernel: for field i, objects at `objs + 128 i` (all ones) and `+ 64` (zeroed); it
/// stores `get(ones)` at `out + 16 i` and `get` after `set(low)` at `out + 16 i + 8`.
pub fn kernel() -> String {
    let mut s = String::from(".version 8.0\n.target sm_90\n.address_size 64\n\n");
    for (n, _, _, _) in FIELDS {
        s += &format!(
            ".extern .func (.param .b64 func_retval0) get_{n}(.param .b64 get_{n}_param_0);\n\
             .extern .func set_{n}(.param .b64 set_{n}_param_0, .param .b64 set_{n}_param_1);\n"
        );
    }
    s += &format!(
        "\n.visible .entry {KERNEL}(.param .u64 objs, .param .u64 out)\n{{\n\
         \t.reg .b64 %rd<8>;\n\tld.param.u64 %rd1, [objs];\n\tld.param.u64 %rd6, [out];\n\
         \tcvta.to.global.u64 %rd2, %rd6;\n"
    );
    for (i, (n, _, w, signed)) in FIELDS.iter().enumerate() {
        let (_, low) = bitfield_values::expected(*w, *signed);
        let ones = i as u64 * PER_FIELD;
        let out = i as u64 * 16;
        s += &format!(
            "\t// {n}\n\tadd.u64 %rd3, %rd1, {ones};\n\tadd.u64 %rd4, %rd1, {};\n\
             \t{{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd3;\n\t.param .b64 r0;\n\
             \tcall.uni (r0), get_{n}, (p0);\n\tld.param.b64 %rd5, [r0];\n\t}}\n\
             \tst.global.u64 [%rd2+{out}], %rd5;\n\
             \t{{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd4;\n\t.param .b64 p1;\n\
             \tst.param.b64 [p1], {low};\n\tcall.uni set_{n}, (p0, p1);\n\t}}\n\
             \t{{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd4;\n\t.param .b64 r0;\n\
             \tcall.uni (r0), get_{n}, (p0);\n\tld.param.b64 %rd5, [r0];\n\t}}\n\
             \tst.global.u64 [%rd2+{}], %rd5;\n",
            ones + OBJECT,
            out + 8
        );
    }
    s += "\tret;\n}\n";
    s
}

/// The objects the host (or the interpreter) places: per field, all ones then zeros.
pub fn objects() -> Vec<u8> {
    let mut v = Vec::new();
    for _ in FIELDS {
        v.extend([0xffu8; OBJECT as usize]);
        v.extend([0u8; OBJECT as usize]);
    }
    v
}

/// Compare the kernel's words with §1.3's values; `Err` lists every difference.
pub fn judge(out: &[i64]) -> Result<usize, Vec<String>> {
    let mut wrong = Vec::new();
    for (i, (n, t, w, signed)) in FIELDS.iter().enumerate() {
        let (ones, low) = bitfield_values::expected(*w, *signed);
        let got = (out.get(2 * i).copied(), out.get(2 * i + 1).copied());
        if got.0 != Some(ones) {
            wrong.push(format!(
                "`{t} {n}:{w}` of an all-ones object: expected {ones}, read {:?}",
                got.0
            ));
        }
        if got.1 != Some(low) {
            wrong.push(format!(
                "`{t} {n}:{w}` after storing {low}: expected {low}, read {:?}",
                got.1
            ));
        }
    }
    if wrong.is_empty() {
        Ok(FIELDS.len())
    } else {
        Err(wrong)
    }
}

fn as_i64(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

/// The kernel run by the PTX interpreter, each call answered by the producer's function on a
/// copy of the object it points at; the words it stored.
pub fn interpret(accessors: &str) -> Result<Vec<i64>, String> {
    let ptx = kernel();
    let mut m = Machine::new(&ptx, KERNEL).map_err(|e| e.to_string())?;
    let objs = m.place(MemSpace::Global, &objects());
    let n_out = FIELDS.len() * 16;
    let out = m.place(MemSpace::Global, &vec![0u8; n_out]);
    m.set_param("objs", &objs.to_le_bytes());
    m.set_param("out", &out.to_le_bytes());
    loop {
        match m.run().map_err(|e| format!("{KERNEL}: {e}"))? {
            Stop::Ret { .. } => break,
            Stop::Call {
                callee, args, rets, ..
            } => {
                let bytes = |name: &String| -> Result<Vec<u8>, String> {
                    m.param(name)
                        .and_then(|b| b.iter().copied().collect::<Option<Vec<u8>>>())
                        .ok_or_else(|| format!("`{name}` of the call of `{callee}` unwritten"))
                };
                let arg_bytes: Vec<Vec<u8>> = args.iter().map(bytes).collect::<Result<_, _>>()?;
                let ptr = u64::from_le_bytes(
                    arg_bytes
                        .first()
                        .and_then(|b| b.as_slice().try_into().ok())
                        .ok_or_else(|| format!("`{callee}` takes no pointer"))?,
                );
                let object: Vec<u8> = m
                    .read(MemSpace::Global, ptr, OBJECT as usize)
                    .into_iter()
                    .map(|b| b.unwrap_or(0))
                    .collect();
                let decl = crate::ptx::PtxModule::parse(accessors)
                    .map_err(|e| e.to_string())?
                    .function(&callee)
                    .filter(|f| f.is_definition)
                    .cloned()
                    .ok_or_else(|| format!("the accessors define no `{callee}`"))?;
                let mut c = Machine::new(accessors, &callee).map_err(|e| e.to_string())?;
                c.write(MemSpace::Global, ptr, &object);
                for (p, b) in decl.params.iter().zip(&arg_bytes) {
                    c.set_param(&p.name, b);
                }
                match c.run().map_err(|e| format!("{callee}: {e}"))? {
                    Stop::Ret { .. } => {}
                    other => return Err(format!("{callee} calls: {other:?}")),
                }
                let after: Vec<u8> = c
                    .read(MemSpace::Global, ptr, OBJECT as usize)
                    .into_iter()
                    .map(|b| b.unwrap_or(0))
                    .collect();
                m.write(MemSpace::Global, ptr, &after);
                if let (Some(r), Some(d)) = (rets.first(), decl.returns.first()) {
                    let v = c
                        .param(&d.name)
                        .and_then(|b| b.iter().copied().collect::<Option<Vec<u8>>>())
                        .ok_or_else(|| format!("`{callee}` returned no value"))?;
                    m.set_param(r, &v);
                }
            }
        }
    }
    let words: Vec<u8> = m
        .read(MemSpace::Global, out, n_out)
        .into_iter()
        .map(|b| b.unwrap_or(0))
        .collect();
    Ok(as_i64(&words))
}

/// Link the kernel with the producer's accessors, run it, judge the words.
pub fn case(ctx: &CaseContext, producer: Producer) -> CaseStatus {
    let accessors = match bitfield_values::ptx_of(ctx, producer) {
        Ok(p) => p,
        Err(s) => return s,
    };
    if ctx.compile_only {
        return CaseStatus::compiled_only();
    }
    let s = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("no CUDA context: {e}")),
    };
    let kernel = kernel();
    let m = match s.link_ptx(&[("gpucts_bitfields", &kernel), ("accessors", &accessors)]) {
        Ok(m) => m,
        Err(e) => {
            return CaseStatus::fail_detail(
                "the driver's JIT linker links the kernel with the producer's accessors",
                format!("{producer}: cuLink* failed"),
                e.to_string(),
            )
        }
    };
    let run = || -> Result<Vec<i64>, crate::backend::cuda::DriverCallError> {
        let objs = objects();
        let o = s.buffer(objs.len())?;
        s.copy_to_device(o.ptr, &objs)?;
        let out_bytes = FIELDS.len() * 16;
        let out = s.buffer(out_bytes)?;
        s.memset(out.ptr, 0xa5, out_bytes)?;
        let f = s.function(&m, KERNEL)?;
        let cfg = LaunchConfig {
            grid: 1,
            block: 1,
            shared_bytes: 0,
        };
        // SAFETY: the kernel takes two `.u64` parameters: the objects and the output.
        unsafe { s.launch(f, cfg, &[KernelArg::Ptr(o.ptr), KernelArg::Ptr(out.ptr)]) }?;
        s.synchronize()?;
        let mut words = vec![0u8; out_bytes];
        s.copy_to_host(&mut words, out.ptr)?;
        Ok(as_i64(&words))
    };
    match run() {
        Ok(words) => match judge(&words) {
            Ok(n) => CaseStatus::pass_with(format!(
                "{n} bit fields read back on the device as §1.3 says ({producer}'s accessors)"
            )),
            Err(w) => CaseStatus::fail_detail(
                "§1.3's value range and sign, read on the device",
                w[0].clone(),
                w.join("\n"),
            ),
        },
        Err(e) => CaseStatus::fail(format!("`{KERNEL}` runs"), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::Toolchain;

    /// The kernel assembles (relocatably: the accessors are elsewhere) and lints clean; with
    /// each producer's accessors it runs in the interpreter to §1.3's values and nvJitLink
    /// links it for sm_90; with sign extension undone it does not read them back.
    #[test]
    fn kernel_assembles_interprets_and_links() {
        let ptx = kernel();
        let v = crate::abi::lint::lint_source(&ptx, "bitfields.ptx").unwrap();
        assert!(v.is_empty(), "{v:?}");
        assert!(judge(&[0; 26]).is_err());
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
        tc.ptxas(&ptx, "sm_90", &["-c"])
            .unwrap_or_else(|e| panic!("{e}\n{ptx}"));
        for p in bitfield_values::producers() {
            crate::require!(p.requires().iter().all(|c| tc.has(*c)), p.name());
            let acc = bitfield_values::compile(&tc, p).unwrap();
            let words = interpret(&acc).unwrap_or_else(|e| panic!("{}: {e}", p.name()));
            assert_eq!(judge(&words), Ok(FIELDS.len()), "{}", p.name());
            let unsigned = acc.replace("bfe.s", "bfe.u").replace("shr.s", "shr.u");
            if unsigned != acc {
                let words = interpret(&unsigned).unwrap();
                assert!(judge(&words).is_err(), "{}", p.name());
            }
            if tc.has(crate::capability::Capability::Nvjitlink) {
                use crate::backend::toolchain::LinkInputKind::Ptx;
                let inputs = [
                    (Ptx, "kernel.ptx", ptx.as_bytes()),
                    (Ptx, "accessors.ptx", acc.as_bytes()),
                ];
                tc.nvjitlink(&inputs, &["-arch=sm_90"])
                    .unwrap_or_else(|e| panic!("{}: {e}", p.name()));
            }
        }
    }
}

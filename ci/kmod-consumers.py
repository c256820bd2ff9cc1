#!/usr/bin/env python3
"""ci/kmod-consumers.py LOGS XML RELEASE [SKIP_REASON]: the consumer cases of a kmod VM run as JUnit.

Modules written by others (gdrcopy's gdrdrv, ssd-gpu-dma's libnvm, NVIDIA's nvidia-fs) are driven in the guest by
programs of ours (kmod/consumers/) that print KTAP between `=== KMOD-VM CONSUMER <name> <window>
BEGIN ===` and `... END ===` on the console; the guest writes the same markers to the kernel log,
so the kernel lines of each window are the consumer's. LOGS is a comma-separated list of console
logs (ci/kmod-vm boots once more for each case that may kill the kernel); a window's kernel
lines come from its boot's dmesg dump, or from the console when the boot died before the dump.

Each KTAP result becomes the JUnit case `gpudirect.consumer.<name>.<ktap name>` (its `# ...` lines
before it are the failure text); an expected case with no result (the kernel died during it)
fails with the window's kernel lines. Each window is one more case,
`gpudirect.consumer.<name>.<window>.kernel_log`, failed by any splat, leaked pin or contract
violation the kernel logged inside it. Properties record the nv-p2p.h release the consumers were
built against and the stand-in's personality.

A consumer's bug is a finding, reported as it is: its case fails with the evidence. A finding
listed in kmod/consumers/findings.json waives it, as gpucts waives a case, only when it is that
bug: each regex it lists for the case matches a line of the failure (the program's diagnostics
and the window's kernel lines), and the first kernel report of the window matches its `first` regex
(what follows the first report of a memory corruption is its aftermath). A waived case is
`<skipped message="waived (ID); the case failed with: ...">`; its window's kernel lines are
written to the file named by KMOD_CONSUMERS_WAIVED_LINES, so that ci/kmod-vm's check of the whole
log does not count them again; a listed finding not seen in a run is said to be stale.

With SKIP_REASON (the corpora are absent) every case is written skipped with that reason.
Prints `P F S W` (passed, failed, skipped, waived), then one `# ...` line per failure, waiver or
stale finding. Exit 0 when the file was written, 2 when a window was missing altogether.

`ci/kmod-consumers.py selftest` checks the judging on made-up logs (ci/test runs it).
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

FINDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kmod", "consumers",
                        "findings.json")
# (consumer, window, the KTAP names its program prints in that window)
WINDOWS = [
    ("gdrdrv", "callback", ["callback.pin_map_read", "callback.write_read_back",
                            "callback.free_with_live_pin", "callback.exit_with_live_pin",
                            "callback.unpin_races_free"]),
    ("gdrdrv", "persistent", ["persistent.pin_map_read", "persistent.write_read_back",
                              "persistent.free_with_live_pin", "persistent.exit_with_live_pin",
                              "persistent.unpin_races_free"]),
    ("libnvm", "callback", ["callback.map_unmap", "callback.free_with_live_map",
                            "callback.exit_with_live_map"]),
    ("libnvm", "races", ["callback.unmap_races_free"]),
    ("nvidia-fs", "safe", ["map_unmap", "free_while_registered", "exit_while_registered"]),
    ("nvidia-fs", "major2", ["major2_refused"]),
]
# the kernel lines that fail a window (ci/kmod-vm's own list for the whole log)
BAD = re.compile(r"BUG:|BUG |Oops|Poison overwritten|Redzone|Object padding|corrupted|"
                 r"pagealloc: memory corruption|WARNING:|Call Trace|[Kk]ernel panic|"
                 r"leaked pins: [1-9]|leaked dma mappings: [1-9]|API violation:|API violations: [1-9]")
KERNEL_LINE = re.compile(r"^\s*\[\s*\d+\.\d+\]")


def window(lines, name, label):
    """The (console lines, kernel lines on the console, found) of one window in one log."""
    begin = f"=== KMOD-VM CONSUMER {name} {label} BEGIN ==="
    end = f"=== KMOD-VM CONSUMER {name} {label} END ==="
    console, kernel, inside, found = [], [], False, False
    for line in lines:
        if begin in line:
            inside, found = True, True
        elif end in line:
            inside = False
        elif inside and "=== KMOD-VM DMESG BEGIN ===" in line:
            inside = False
        elif inside:
            (kernel if KERNEL_LINE.match(line) else console).append(line)
    return console, kernel, found


def dmesg_window(lines, name, label):
    """The window's lines in the boot's dmesg dump, or None when the boot has no dump."""
    if "=== KMOD-VM DMESG BEGIN ===" not in lines:
        return None
    dump = lines[lines.index("=== KMOD-VM DMESG BEGIN ==="):]
    out, inside = [], False
    for line in dump:
        if f"=== KMOD-VM CONSUMER {name} {label} BEGIN ===" in line:
            inside = True
        elif f"=== KMOD-VM CONSUMER {name} {label} END ===" in line:
            inside = False
        elif inside:
            out.append(line)
    return out


class Report:
    def __init__(self, findings):
        self.suite = ET.Element("testsuite", name="gpudirect.consumer")
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "waived": 0}
        self.notes, self.findings, self.seen, self.waived_lines = [], findings, set(), []

    def excuse(self, cid, lines, kernel_bad):
        for f in self.findings:
            if cid not in f["cases"]:
                continue
            if not all(any(re.search(p, l) for l in lines) for p in f["cases"][cid]):
                continue
            if kernel_bad and not re.search(f["first"], kernel_bad[0]):
                continue
            return f
        return None

    def case(self, cid, verdict, message="", lines=(), kernel_bad=()):
        """`lines`: what the failure's signature is looked for in (diagnostics and the
        window's kernel lines); `kernel_bad`: the window's kernel reports, in order."""
        if verdict == "failed":
            f = self.excuse(cid, list(lines), list(kernel_bad))
            if f:
                self.seen.add(f["id"])
                self.waived_lines.extend(kernel_bad)
                verdict, message = "waived", f"waived ({f['id']}); the case failed with: {message}"
        tc = ET.SubElement(self.suite, "testcase", name=cid, classname="gpudirect.consumer")
        first = message.splitlines()[0] if message else ""
        if verdict == "waived":
            ET.SubElement(tc, "skipped", message=first)
            ET.SubElement(tc, "system-out").text = message
            self.notes.append(f"# {cid}: {first}")
        elif verdict == "failed":
            ET.SubElement(tc, "failure", message=first).text = message
            self.notes.append(f"# {cid}: {first}")
        elif verdict == "skipped":
            ET.SubElement(tc, "skipped", message=message)
        self.counts[verdict] += 1


def judge_window(rep, logs, name, label, expected):
    prefix = f"gpudirect.consumer.{name}"
    for lines in logs:
        console, console_kernel, found = window(lines, name, label)
        if found:
            break
    else:
        for c in expected:
            rep.case(f"{prefix}.{c}", "failed", f"the {name} {label} window is not in the log")
        rep.case(f"{prefix}.{label}.kernel_log", "failed", "no window")
        return False
    kernel = dmesg_window(lines, name, label)
    died = kernel is None
    if died:
        kernel = console_kernel
    bad = [l for l in kernel if BAD.search(l)]
    results, diag = {}, []
    for line in console:
        m = re.match(r"^(not )?ok \d+ (\S+)(?: # SKIP (.*))?$", line)
        if not m:
            if line.startswith("#"):
                diag.append(line.lstrip("# "))
            continue
        results[m.group(2)] = (m.group(1), m.group(3), diag)
        diag = []
    for c in expected:
        cid = f"{prefix}.{c}"
        if c not in results:
            rep.case(cid, "failed", ("no result: the guest's kernel died during the case"
                     if died else "no result from the consumer's program") + "\n" + "\n".join(bad),
                     diag + kernel, bad)
            continue
        failed, skip, d = results[c]
        # the program's own reason for the failure first, its other diagnostics after
        d = sorted(d, key=lambda l: not l.startswith(c + ":"))
        if skip:
            rep.case(cid, "skipped", skip)
        elif failed:
            rep.case(cid, "failed", "\n".join(d) or "failed", d + kernel, bad)
        else:
            rep.case(cid, "passed")
    rep.case(f"{prefix}.{label}.kernel_log", "failed" if bad else "passed",
             "the kernel logged, while the consumer ran:\n" + "\n".join(bad) if bad else "",
             kernel, bad)
    return True


def judge_all(logs, skip, findings):
    rep = Report(findings)
    complete = True
    for name, label, expected in WINDOWS:
        if skip:
            for c in expected + [f"{label}.kernel_log"]:
                rep.case(f"gpudirect.consumer.{name}.{c}", "skipped", skip)
        else:
            complete &= judge_window(rep, logs, name, label, expected)
    return rep, complete


def selftest():
    """The verdicts on made-up consoles: clean, a failure, a waived finding, a finding whose
    first report is another bug, a kernel that died mid-case, and the corpora absent."""
    finding = {"id": "F-X", "cases": {"gpudirect.consumer.libnvm.callback.unmap_races_free":
                                      ["Freed in force_release"],
                                      "gpudirect.consumer.libnvm.races.kernel_log":
                                      ["Freed in force_release"]},
               "first": "Object already free"}

    def boot(windows, dump=True, kernel=()):
        out = []
        for name, label, cases in windows:
            out.append(f"=== KMOD-VM CONSUMER {name} {label} BEGIN ===")
            out += cases
            out.append(f"=== KMOD-VM CONSUMER {name} {label} END ===")
        if dump:
            out.append("=== KMOD-VM DMESG BEGIN ===")
            for name, label, _ in windows:
                out.append(f"[    1.0] === KMOD-VM CONSUMER {name} {label} BEGIN ===")
                out += [k for (n, l, k) in kernel if (n, l) == (name, label)]
                out.append(f"[    2.0] === KMOD-VM CONSUMER {name} {label} END ===")
        return out

    def ok_lines(expected):
        return [f"ok {i + 1} {c}" for i, c in enumerate(expected)]

    clean = [(n, l, ok_lines(e)) for n, l, e in WINDOWS]
    staged = ("races", "major2")  # the windows of the boots of their own
    main_boot = boot([w for w in clean if w[1] not in staged])
    races_ok = boot([w for w in clean if w[1] in staged])
    rep, complete = judge_all([main_boot, races_ok], None, [finding])
    assert complete and rep.counts == {"passed": 24, "failed": 0, "skipped": 0, "waived": 0}, rep.counts
    # a failed case, no finding for it
    bad = [(n, l, ["# callback.map_unmap: lost", "not ok 1 callback.map_unmap"] + c[1:])
           if (n, l) == ("libnvm", "callback") else (n, l, c) for n, l, c in clean]
    rep, _ = judge_all([boot([w for w in bad if w[1] not in staged]), races_ok], None, [finding])
    assert rep.counts["failed"] == 1 and "lost" in rep.notes[0], rep.notes
    # the race boot died mid-case: waived when the first report is the finding's
    nvfs_ok = boot([w for w in clean if w[1] == "major2"])
    died = boot([("libnvm", "races", ["KTAP version 1", "1..1",
                                        "[    3.0] BUG kmalloc-16: Object already free",
                                        "[    3.1] Freed in force_release_gpu_memory+0x61",
                                        "[    3.2] Kernel panic - not syncing"])], dump=False)
    rep, _ = judge_all([main_boot, died, nvfs_ok], None, [finding])
    assert rep.counts["waived"] == 2 and rep.counts["failed"] == 0, (rep.counts, rep.notes)
    assert any("BUG kmalloc-16" in l for l in rep.waived_lines)
    # ...and failed when another report comes first
    other = boot([("libnvm", "races", ["KTAP version 1", "1..1",
                                         "[    3.0] BUG: unable to handle page fault",
                                         "[    3.1] Freed in force_release_gpu_memory+0x61"])],
                 dump=False)
    rep, _ = judge_all([main_boot, other, nvfs_ok], None, [finding])
    assert rep.counts["failed"] == 2 and rep.counts["waived"] == 0, rep.counts
    # a splat in a window fails its kernel_log case
    splat = boot([w for w in clean if w[1] not in staged],
                 kernel=[("gdrdrv", "persistent", "[    1.5] WARNING: CPU: 0 at x.c:1 f+0x1")])
    rep, _ = judge_all([splat, races_ok], None, [finding])
    assert rep.counts["failed"] == 1 and "persistent.kernel_log" in rep.notes[0], rep.notes
    # a window that never ran
    rep, complete = judge_all([main_boot], None, [finding])
    assert not complete and rep.counts["failed"] == 4, rep.counts
    # the corpora absent: every case skipped, naming them
    rep, complete = judge_all([], "corpus not found", [finding])
    assert complete and rep.counts == {"passed": 0, "failed": 0, "skipped": 24, "waived": 0}
    print("kmod-consumers selftest: 7 checks passed")
    return 0


def main():
    if sys.argv[1:] == ["selftest"]:
        return selftest()
    log_paths, xml_path, release = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    skip = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    logs = [open(p, errors="replace").read().splitlines() for p in log_paths if os.path.exists(p)]
    rep, complete = judge_all(logs, skip, json.load(open(FINDINGS)))
    props = ET.Element("properties")
    ET.SubElement(props, "property", name="nv-p2p.h release", value=release)
    ET.SubElement(props, "property", name="stand-in personality", value="strict")
    rep.suite.insert(0, props)
    if not skip:
        for f in rep.findings:
            if f["id"] not in rep.seen:
                rep.notes.append(f"# {f['id']}: stale (not seen in this run)")
    c = rep.counts
    rep.suite.set("tests", str(sum(c.values())))
    rep.suite.set("failures", str(c["failed"]))
    rep.suite.set("skipped", str(c["skipped"] + c["waived"]))
    root = ET.Element("testsuites")
    root.append(rep.suite)
    ET.ElementTree(root).write(xml_path, encoding="utf-8", xml_declaration=True)
    out = os.environ.get("KMOD_CONSUMERS_WAIVED_LINES")
    if out:
        with open(out, "w") as w:
            w.writelines(l + "\n" for l in rep.waived_lines)
    print(c["passed"], c["failed"], c["skipped"], c["waived"])
    for n in rep.notes:
        print(n)
    return 0 if complete else 2


if __name__ == "__main__":
    sys.exit(main())

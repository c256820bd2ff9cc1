#!/usr/bin/env python3
"""ci/kmod-consumers.py LOG XML RELEASE [SKIP_REASON]: the consumer cases of a kmod VM run as JUnit.

Modules written by others (gdrcopy's gdrdrv) are driven in the guest by programs of ours
(kmod/consumers/) that print KTAP between `=== KMOD-VM CONSUMER <name> <mode> BEGIN ===` and
`... END ===` on the console; the guest writes the same markers to the kernel log, so the
kernel lines of each window are the consumer's. Each KTAP result becomes the JUnit case
`gpudirect.consumer.<name>.<mode>.<case>` (its `# ...` lines before it are the failure text),
and each window one more case `gpudirect.consumer.<name>.<mode>.kernel_log`, failed by any
splat, leaked pin or contract violation the kernel logged inside it. Properties record the
nv-p2p.h release the consumer was built against and the stand-in's personality.

With SKIP_REASON (the corpus is absent) every case is written skipped with that reason.
Prints `P F S` (passed, failed, skipped), then one `# case: message` line per failure.
Exit 0 when the file was written, 2 when a window had no results.
"""
import re
import sys
import xml.etree.ElementTree as ET

CONSUMERS = {"gdrdrv": ["callback", "persistent"]}
CASES = ["pin_map_read", "write_read_back", "free_with_live_pin", "exit_with_live_pin",
         "unpin_races_free"]
# the kernel lines that fail a window (ci/kmod-vm's own list for the whole log)
BAD = re.compile(r"BUG:|BUG |Oops|Poison overwritten|Redzone|Object padding|corrupted|"
                 r"pagealloc: memory corruption|WARNING:|Call Trace|[Kk]ernel panic|"
                 r"leaked pins: [1-9]|leaked dma mappings: [1-9]|API violation:|API violations: [1-9]")


def windows(lines, name, mode):
    """(console lines, kernel lines) of one consumer window."""
    begin = f"=== KMOD-VM CONSUMER {name} {mode} BEGIN ==="
    end = f"=== KMOD-VM CONSUMER {name} {mode} END ==="
    console, kernel, inside = [], [], False
    for line in lines:
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            # the kernel's lines reach the console too ([ time] prefix): tell them apart
            (kernel if re.match(r"^\s*\[\s*\d+\.\d+\]", line) else console).append(line)
    return console, kernel


def main():
    log_path, xml_path, release = sys.argv[1:4]
    skip = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    lines = open(log_path, errors="replace").read().splitlines()
    # the dmesg dump at the end holds the kernel lines in order, markers included
    dmesg = []
    if "=== KMOD-VM DMESG BEGIN ===" in lines:
        i = lines.index("=== KMOD-VM DMESG BEGIN ===")
        dmesg = lines[i:]
    suite = ET.Element("testsuite", name="gpudirect.consumer")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="nv-p2p.h release", value=release)
    ET.SubElement(props, "property", name="stand-in personality", value="strict")
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    problems, missing = [], False

    def case(cid, verdict, message=""):
        tc = ET.SubElement(suite, "testcase", name=cid, classname="gpudirect.consumer")
        if verdict == "failed":
            ET.SubElement(tc, "failure", message=message.splitlines()[0] if message else "").text = message
            problems.append(f"# {cid}: {message.splitlines()[0] if message else 'failed'}")
        elif verdict == "skipped":
            ET.SubElement(tc, "skipped", message=message)
        counts[verdict] += 1

    for name, modes in CONSUMERS.items():
        for mode in modes:
            prefix = f"gpudirect.consumer.{name}.{mode}"
            if skip:
                for c in CASES + ["kernel_log"]:
                    case(f"{prefix}.{c}", "skipped", skip)
                continue
            console, _ = windows(lines, name, mode)
            _, kernel = windows(dmesg, name, mode)
            results = [l for l in console if re.match(r"^(not )?ok \d+ ", l)]
            if not results:
                missing = True
                case(f"{prefix}.run", "failed", "no results from the consumer's program:\n"
                     + "\n".join(console[-20:]))
                continue
            diag = []
            for line in console:
                m = re.match(r"^(not )?ok \d+ (\S+)(?: # SKIP (.*))?$", line)
                if not m:
                    if line.startswith("#"):
                        diag.append(line.lstrip("# "))
                    continue
                cid = f"gpudirect.consumer.{name}.{m.group(2)}"
                if m.group(3):
                    case(cid, "skipped", m.group(3))
                elif m.group(1):
                    case(cid, "failed", "\n".join(diag) or "failed")
                else:
                    case(cid, "passed")
                diag = []
            bad = [l for l in kernel if BAD.search(l)]
            case(f"{prefix}.kernel_log", "failed" if bad else "passed",
                 "the kernel logged, while the consumer ran:\n" + "\n".join(bad) if bad else "")
    suite.set("tests", str(sum(counts.values())))
    suite.set("failures", str(counts["failed"]))
    suite.set("skipped", str(counts["skipped"]))
    ET.ElementTree(ET.Element("testsuites")).getroot().append(suite)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(xml_path, encoding="utf-8", xml_declaration=True)
    print(counts["passed"], counts["failed"], counts["skipped"])
    for p in problems:
        print(p)
    return 2 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

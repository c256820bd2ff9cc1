#!/usr/bin/env python3
"""ci/kmod-junit.py LOG FLAVOUR XML: gpucts's JUnit from a kmod VM guest's console.

The guest prints the JUnit of its `gpucts --suite gpudirect` run base64-encoded between
`=== KMOD-VM <flavour> JUNIT BEGIN ===` and `... JUNIT END ===` (ci/kmod-vm and
ci/kmod-vm-arm64). This decodes it into XML and prints one line `P F S KOK KTOT` (passed,
failed or errored, skipped, gpudirect.kmod cases passed, gpudirect.kmod cases), then one
`# FLAVOUR: case: verdict: message` line per case that failed, errored, or is a skipped
gpudirect.kmod case (the guest has everything those need, so a skip there is a problem).
Exit 0 when the JUnit was there and readable, 2 when it was missing or unreadable.
"""
import base64
import sys
import xml.etree.ElementTree as ET

log_path, flavour, xml_path = sys.argv[1:4]
begin = f"=== KMOD-VM {flavour} JUNIT BEGIN ==="
end = f"=== KMOD-VM {flavour} JUNIT END ==="
inside, b64 = False, []
for line in open(log_path, errors="replace"):
    line = line.strip()
    if line == begin:
        inside, b64 = True, []
    elif line == end:
        inside = False
    elif inside:
        b64.append(line)
try:
    data = base64.b64decode("".join(b64), validate=True)
    root = ET.fromstring(data)
except Exception as e:  # a guest that died mid-print leaves a truncated block
    print(f"# {flavour}: no readable JUnit from gpucts in the guest ({e})", file=sys.stderr)
    sys.exit(2)
if not data:
    sys.exit(2)
open(xml_path, "wb").write(data)
p = f = s = kmod_ok = kmod_total = 0
bad = []
for c in root.iter("testcase"):
    name = c.get("name", "")
    kind = next((k.tag for k in c if k.tag in ("failure", "error", "skipped")), "pass")
    kmod = name.startswith("gpudirect.kmod.")
    kmod_total += kmod
    if kind == "pass":
        p += 1
        kmod_ok += kmod
    elif kind == "skipped":
        s += 1
        if kmod:
            bad.append(f"{name}: skipped: {c.find('skipped').get('message', '')}")
    else:
        f += 1
        el = c.find(kind)
        msg = (el.get("message", "") + " " + (el.text or "")).strip().replace("\n", " | ")
        bad.append(f"{name}: {kind}: {msg[:400]}")
print(f"{p} {f} {s} {kmod_ok} {kmod_total}")
for b in bad:
    print(f"# {flavour}: {b}")

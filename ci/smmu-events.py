#!/usr/bin/env python3
"""Classify the SMMUv3 events in a guest's kernel log (ci/kmod-vm-arm64).

Linux's arm-smmu-v3 driver logs an event it does not handle as one line
"event 0x<id> received:" followed by the event's four 64-bit words, one per line
(drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c, arm_smmu_evtq_thread). For a translation
fault (event 0x10, F_TRANSLATION in the SMMUv3 architecture) word 2 is the input address,
the IOVA the device used. Each fault must be at the page of a bus address the companion
logged a raw peer DMA to (a revoked IOVA handed to edu on purpose); anything else is
unexpected. Prints "unexpected: <event>" lines and a final "expected N".
"""
import re
import sys

F_TRANSLATION = 0x10

log = open(sys.argv[1], errors="replace").read()
raw = {int(a, 16) >> 12 for a in re.findall(
    r"gpucts_p2p: raw peer DMA (?:write to|read from) bus address 0x([0-9a-f]+)", log)}
lines = log.splitlines()
seen = 0
i = 0
while i < len(lines):
    m = re.search(r"arm-smmu-v3[^:]*: event 0x([0-9a-f]+) received", lines[i])
    if not m:
        i += 1
        continue
    event = int(m.group(1), 16)
    words = []
    j = i + 1
    while j < len(lines) and len(words) < 4:
        w = re.search(r"arm-smmu-v3[^:]*:\s+0x([0-9a-f]{16})\s*$", lines[j])
        if not w:
            break
        words.append(int(w.group(1), 16))
        j += 1
    desc = f"event {event:#x} words {' '.join(f'{x:#018x}' for x in words)}"
    if event == F_TRANSLATION and len(words) == 4 and words[2] >> 12 in raw:
        seen += 1
    else:
        print("unexpected: " + desc)
    i = j
print(f"expected {seen}")

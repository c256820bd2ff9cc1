#!/usr/bin/env bash
# Seed corpora for the fuzz targets, generated from the repository's own files (issue 10
# item 4): suites, waiver lists, type descriptions, litmus tests and the PTX corpus. Writes
# fuzz/corpus/<target>/ (ignored by git); existing entries are kept.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/fuzz/corpus"
seed() { # seed TARGET FILE...
    local t=$1
    shift
    mkdir -p "$out/$t"
    for f in "$@"; do
        [ -f "$f" ] || continue
        # libFuzzer reads entries of any size; skip very large files to keep runs fast.
        [ "$(stat -c %s "$f")" -le 65536 ] || continue
        cp "$f" "$out/$t/$(echo "$f" | sed "s|^$root/||; s|/|_|g")"
    done
}
shopt -s nullglob globstar
seed suite_yaml "$root"/suites/*.yaml
seed waivers "$root"/suites/waivers/*.yaml
seed abi_types "$root"/suites/abi/*.yaml
seed litmus_yaml "$root"/suites/litmus/*.yaml
seed dat3m "$root"/suites/litmus/*.litmus
seed litmus_count "$root"/suites/litmus/*.litmus "$root"/suites/litmus/*.yaml
seed ptx_module "$root"/ptx-corpus/**/*.ptx
seed ptx_exec "$root"/ptx-corpus/**/*.ptx
seed dwarf_check "$root"/ptx-corpus/dwarf/**/*.ptx "$root"/ptx-corpus/**/*.ptx
seed prebuilt_manifest "$root"/harness/tests/fixtures/prebuilt-manifest.json
seed clause_catalogue "$root"/suites/clauses/*.yaml
seed dwarf_frame "$root"/harness/tests/fixtures/debug-frame-64.bin
# The instruction reader takes one statement: every distinct instruction line of the corpus.
mkdir -p "$out/ptx_instr"
cat "$root"/ptx-corpus/**/*.ptx 2>/dev/null |
    sed -n 's/^[[:space:]]*\([a-z][a-z0-9_.]*[[:space:]][^;]*;\).*/\1/p' |
    sort -u | head -n 2000 |
    while IFS= read -r line; do
        printf '%s' "$line" >"$out/ptx_instr/$(printf '%s' "$line" | md5sum | cut -c1-16)"
    done
for d in "$out"/*/; do
    echo "seed: $(basename "$d"): $(ls "$d" | wc -l) inputs"
done

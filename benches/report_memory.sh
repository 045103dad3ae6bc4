#!/usr/bin/env bash
# Measures analyze and report on a large history: elapsed time and peak
# memory (max RSS) next to the size of the history, so it shows whether
# memory stays bounded as the history grows. Prints a table; asserts nothing.
#
#   benches/report_memory.sh [REVISIONS...]   (default: 100000 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/common.sh
. benches/common.sh
measure() { # label, command...
    local label=$1
    shift
    timed "$@"
    printf '%-10s %-28s %8.1f s %10d KiB\n' "$n" "$label" "$secs" "$kib"
}
printf '%-10s %-28s %10s %14s\n' revisions step elapsed "max RSS"
for n in "${@:-100000 1000000}"; do
    for n in $n; do
        db="$work/h-$n.sqlite"
        measure "fill (history_load)" target/release/examples/history_load "$db" "$n"
        measure "analyze" "$bin" --db "$db" analyze
        measure "report --format json" "$bin" --db "$db" report --format json -o "$work/r.json"
        measure "report --format html" "$bin" --db "$db" report --format html -o "$work/r.html"
        printf '%-10s %-28s %10s\n' "$n" "database size" "$(du -h "$db" | cut -f1)"
    done
done

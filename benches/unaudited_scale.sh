#!/usr/bin/env bash
# Measures the audit evidence of foreign-writes at scale: analyze of a large
# history whose creates no audited request explains, every one covered by an
# audit log (one finding each), beside analyze of the same history without
# the log (the baseline, in the same run). Elapsed time, peak memory (max
# RSS) and the findings each gave; asserts nothing.
#
#   benches/unaudited_scale.sh [REVISIONS [PER_KEY]]   (default: 1000000 10:
#                                                      100,000 creates)
#
# The log holds two creates, of the history's first key and of its last
# (`examples/history_load.rs` writes one at each end), so its span covers
# every revision between; every other create is one no request explains.
set -euo pipefail
cd "$(dirname "$0")/.."
revisions=${1:-1000000}
per_key=${2:-10}
# shellcheck source=benches/common.sh
. benches/common.sh
measure() { # label, command...
    local label=$1
    shift
    timed "$@"
    printf '%-44s %8.1f s %10d KiB\n' "$label" "$secs" "$kib"
}
findings() { # db
    "$bin" --db "$1" findings --detector foreign-writes -o 'jsonpath={range [*]}{.detector}{"\n"}{end}' | wc -l
}
printf '%-44s %10s %14s\n' step elapsed "max RSS"
measure "fill ($revisions revisions, $per_key a key)" target/release/examples/history_load "$work/h.sqlite" "$revisions" "$per_key"
cp "$work/h.sqlite" "$work/logged.sqlite"
last=$((revisions + 2))
event() { # auditID, name, revision
    printf '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"%s","stage":"ResponseComplete","verb":"create","requestURI":"/api/v1/namespaces/ns-0/configmaps","user":{"username":"admin"},"sourceIPs":["192.0.2.7"],"objectRef":{"resource":"configmaps","namespace":"ns-0","name":"%s","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"responseObject":{"metadata":{"name":"%s","namespace":"ns-0","resourceVersion":"%s"}},"requestReceivedTimestamp":"2026-11-29T08:00:00.000000Z","stageTimestamp":"2026-11-29T08:00:00.100000Z"}\n' "$1" "$2" "$2" "$3"
}
{ event first cm-0 2; event last last "$last"; } >"$work/audit.log"
measure "attribute (2 requests)" "$bin" --db "$work/logged.sqlite" attribute --audit-log "$work/audit.log" --no-analyze
measure "analyze, no audit log (baseline)" "$bin" --db "$work/h.sqlite" analyze
measure "analyze, every create covered by the log" "$bin" --db "$work/logged.sqlite" analyze
printf '%-44s %10s\n' "foreign-writes findings, baseline" "$(findings "$work/h.sqlite")"
printf '%-44s %10s\n' "foreign-writes findings, with the log" "$(findings "$work/logged.sqlite")"

# Shared by the measuring scripts in benches/ (sourced, from the repository's
# root): a release build of the tool and of the history generator, a scratch
# folder `$work` removed on exit, and `timed CMD...`, which runs CMD (its
# output dropped, its errors shown when it fails) and sets `$secs` and `$kib`
# to its elapsed time and peak memory (max RSS).
cargo build --release --quiet --example history_load --bin etcd-inspector
bin=target/release/etcd-inspector
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timed() {
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
    read -r secs kib <"$work/time"
}

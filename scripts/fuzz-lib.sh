# scripts/fuzz-lib.sh — what scripts/fuzz.sh --long and scripts/fuzz-bundle.sh
# import both do once a long run has ended: merge its finds into the
# committed seeds and append its line to results/fuzz_long.tsv; and the
# list of drivers (fuzz.sh, fuzz-table.sh). Sourced,
# not run. The table in docs/security.md is made from that file by
# scripts/fuzz-table.sh.
#
# FUZZ_TSV names another file than results/fuzz_long.tsv (tests of the
# scripts use it, so that they do not add lines to the committed one).

# fuzz_drivers REPO_ROOT: every driver's name, as tests/fuzz/ declares them.
fuzz_drivers() {
  sed -n 's/^at_fuzz_driver(\([a-z_0-9]*\) .*/\1/p' "$1"/tests/fuzz/CMakeLists.txt "$1"/tests/fuzz/*.cmake | sort -u
}

# fuzz_tsv REPO_ROOT: the results file, created with its header if missing.
fuzz_tsv() {
  local tsv=${FUZZ_TSV:-$1/results/fuzz_long.tsv}
  mkdir -p "$(dirname "$tsv")"
  [ -s "$tsv" ] || printf 'date\tcommit\tdriver\texecutions\tseconds\texec_per_s\tseeds_before\tseeds_after\tcrashes\treached\tprocesses\n' > "$tsv"
  echo "$tsv"
}

# fuzz_merge REPO_ROOT DRIVER NEW_DIR: libFuzzer -merge=1 of NEW_DIR into the
# driver's committed seeds (only inputs that add coverage are kept), with
# the driver built in build-fuzz/.
fuzz_merge() {
  local here=$1 d=$2 new=$3
  (cd "$here/build-fuzz" && "./tests/fuzz/$d" -merge=1 "$here/tests/fuzz/corpus/${d#fuzz_}" "$new" >/dev/null 2>&1)
}

# fuzz_record REPO_ROOT DATE COMMIT DRIVER EXECUTIONS SECONDS SEEDS_BEFORE
#             CRASHES PROCESSES RUNS
# appends the run's line (seeds after = the seeds now; reached = executions
# >= RUNS) and prints it as a sentence.
fuzz_record() {
  local here=$1 date=$2 commit=$3 d=$4 execs=$5 secs=$6 before=$7 crashes=$8 n=$9 runs=${10}
  local tsv after reached=no
  tsv=$(fuzz_tsv "$here")
  after=$(ls "$here/tests/fuzz/corpus/${d#fuzz_}" | wc -l)
  [ "$execs" -ge "$runs" ] && reached=yes
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$date" "$commit" "$d" "$execs" "$secs" \
    $((execs / (secs > 0 ? secs : 1))) "$before" "$after" "$crashes" "$reached" "$n" >> "$tsv"
  echo "$d: $execs executions by $n process(es) in ${secs}s, seeds $before -> $after, crashes $crashes"
}

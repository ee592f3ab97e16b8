#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz over their committed corpora for a bounded time each.
# Usage: tests/fuzz/run.sh FUZZ_BUILD_DIR SECONDS_PER_TARGET [TARGET...]   (default: all five)
# Build first: cmake -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
#   -DCUMULUS_CUDA=OFF -DCUMULUS_FUZZ=ON -DCUMULUS_TESTS=OFF -DCUMULUS_BENCH=OFF && cmake --build build/fuzz \
#   --target fuzz_data_file fuzz_stl fuzz_checkpoint fuzz_job fuzz_set
# New inputs go to a scratch corpus ($FUZZ_WORK, default a temporary folder) beside the committed
# one, which is only read. A crash, a sanitizer report, a leak, a timeout (-timeout) or an
# allocation over -malloc_limit_mb fails the run; the input that did it is left as
# $FUZZ_WORK/<target>-crash-*, to be added to tests/fuzz/corpus/<target>/ with its fix and a named test.
# Long campaigns (docs/input-limits.md): SECONDS_PER_TARGET=1800 and FUZZ_WORK=a kept folder;
# on a loaded machine FUZZ_TIMEOUT=60 (seconds per input; 10 by default) avoids false timeouts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
seconds=$2
shift 2
targets=("$@")
((${#targets[@]})) || targets=(fuzz_data_file fuzz_stl fuzz_checkpoint fuzz_job fuzz_set)
work=${FUZZ_WORK:-$(mktemp -d)}
mkdir -p "$work"
# Leaks: libFuzzer checks after every input that allocated more than it freed (-detect_leaks=1,
# the default), which is where a leak of the reader shows. The check at exit is off: in the
# targets that start MPI it crashes LeakSanitizer's thread tracer (Open MPI's threads), and what it
# would add is Open MPI's and HDF5's start-up, suppressed anyway (lsan.supp).
# intercept_tls_get_addr=0: scripts/test says why (LeakSanitizer's dynamic-TLS tracking crashes at
# exit on some layouts of a binary that loads Open MPI's plugins).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/lsan.supp:print_suppressions=0:leak_check_at_exit=0}
export OMPI_MCA_plm=isolated OMPI_MCA_btl_vader_single_copy_mechanism=none  # a singleton MPI with no daemon
export TMPDIR=$work
status=0
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  mkdir -p "$work/$name"
  max_len=4096
  mode=(-max_total_time="$seconds")
  if [ "$name" = checkpoint ]; then
    max_len=65536  # the smallest real checkpoints are ~10 kB
    # Byte-level mutation of HDF5 files finds faults in the HDF5 library itself within seconds
    # (docs/input-limits.md lists them): CI replays the corpus (real checkpoints, their structural
    # variants, every past finding of cumulus'); a campaign (FUZZ_HDF5=mutate) forks, keeps going
    # past crashes, and leaves each crashing input for triage by its stack.
    if [ "${FUZZ_HDF5:-replay}" = mutate ]; then
      mode+=(-fork=1 -ignore_crashes=1 -ignore_ooms=0)
    else
      mode=(-runs=0)
    fi
  fi
  echo "fuzz: $t for ${seconds} s over tests/fuzz/corpus/$name (${mode[*]})"
  # Inputs run in the folder of the job-file targets' relative paths (md.data_file etc.).
  if ! (cd "$work" && "$build/tests/fuzz/$t" "${mode[@]}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
          -malloc_limit_mb=1024 -max_len=$max_len -print_final_stats=1 -artifact_prefix="$work/$name-" \
          "$work/$name" "$here/corpus/$name" 2>"$work/$name.log"); then
    status=1
    echo "fuzz: $t FAILED; the log's end ($work/$name.log):"
    tail -n 40 "$work/$name.log"
  fi
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb" "$work/$name.log" || true
done
exit $status

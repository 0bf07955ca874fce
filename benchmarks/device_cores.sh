#!/usr/bin/env bash
# Issue 16's many-core and first-use figures, in one call on a lent machine with more cores
# (CPU only), within a few minutes of device time.
#
# Run from the repository root with a python3 that has numpy, numba, pandas, scipy and
# scikit-learn (fastbias is imported from this checkout, PYTHONPATH); logs go to $OUT
# (default ./device-out). Every step has its own time limit, so that a slow step still
# leaves the others' figures. TBB is optional: TBB_LIB names a folder of the checkout
# holding `libtbb.so.12` (the `tbb` wheel's lib/); the scaling steps then run as a user
# with TBB on the loader's path does (rounds on Numba's threads), and one step runs the
# pool alone, as a plain `pip install fastbias` does.
#
# 1. First use, on 4 cores a process: each variant's import + first call in a fresh
#    process with an empty Numba cache (bench_first_use.py), three groups of variants side
#    by side on cores 0-3, 4-7 and 8-11, while cores 12-15 compile the scaling steps'
#    kernels into their own cache (so that no later step waits for a compile).
# 2. Scaling (bench_threads.py, every process pinned): 1.8M and 18M rows x 24 on 1, 2, 8
#    and 16 cores; where the 16-core call's time goes (call_profile.py); the pool alone;
#    100M rows on 16 cores.
# 3. compare_reference.py: fastbias against the sklearn/scipy loop in one run.
#
# Optional: OLD names a folder holding another fastbias tree (e.g. `git archive BASE fastbias`
# unpacked there): the bootstrap variants' first use then also runs on it, side by side with
# this checkout's, on cores 8-11 (the other variants share cores 0-3), for a before/after
# figure from one lease. AGREE=1 ends with threads_agree.py (every kind of call, the same table
# on 1, 2, 8 and 16 threads). TRIAL="MODULE:NAME=INT ..." adds call_profile.py on the top core
# count with those constants set, beside the default.
#
#   TBB_LIB=.tbb bash benchmarks/device_cores.sh
#   TBB_LIB=.tbb OLD=.oldtree HUGE=0 AGREE=1 bash benchmarks/device_cores.sh
#   SMALL=100000 BIG=300000 HUGE=0 CORES="1 2" REF_ROWS=100000 bash benchmarks/device_cores.sh
set -u
out=${OUT:-device-out}
mkdir -p "$out"
py=${PYTHON:-python3}
small=${SMALL:-1804875}
big=${BIG:-18000000}
huge=${HUGE:-100000000}
cores=${CORES:-"1 2 8 16"}
top=${cores##* }
ref_rows=${REF_ROWS:-$small}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset OMP_WAIT_POLICY GOMP_SPINCOUNT FASTBIAS_NUMBA_THREADS FASTBIAS_FIRST_CALL
tbb=""
if [ -n "${TBB_LIB:-}" ]; then tbb="$PWD/$TBB_LIB"; fi
# run a command with TBB on the loader's path (where TBB_LIB is given)
with_tbb() { LD_LIBRARY_PATH="$tbb${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
# run a command on the CPUs FIRST-LAST (its children inherit them)
on_cpus() {
  "$py" -c 'import os, sys; a, b = map(int, sys.argv[1].split("-"))
os.sched_setaffinity(0, range(a, b + 1)); os.execvp(sys.argv[2], sys.argv[2:])' "$@"
}
cache=$(mktemp -d)
chmod 700 "$cache"
{
  echo "## machine"
  nproc
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|max MHz|L3"
  free -g | head -2
  uname -r
  "$py" -c "import sys, numpy, numba, pandas, scipy, sklearn; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'pandas', pandas.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__)"
  with_tbb "$py" -c "import numba, numpy as np
@numba.njit(parallel=True)
def total(a):
    t = 0.0
    for i in numba.prange(a.size):
        t += a[i]
    return t
total(np.ones(4)); print('numba threading layer with TBB_LIB:', numba.threading_layer())" 2>&1 | tail -1
} 2>&1 | tee "$out/machine.txt"

# 1. first use (the group on 0-3 also gives the float32 figure of earlier leases)
old=""
if [ -n "${OLD:-}" ]; then old="$PWD/$OLD"; fi
if [ "$(nproc)" -ge 16 ] && [ -n "$old" ]; then
  first="1 2 3"
  on_cpus 0-3 timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" \
    --variants float32 float64 weighted delong --warm-repeats 3 >"$out/first_use_1.md" 2>&1 &
  on_cpus 4-7 timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" \
    --variants bootstrap weighted-bootstrap --warm-repeats 3 >"$out/first_use_2.md" 2>&1 &
  # (run from the OLD folder: a `python -c` child imports from its working directory first)
  (cd "$old" && on_cpus 8-11 env PYTHONPATH="$old" timeout 240 "$py" \
    "$OLDPWD/benchmarks/bench_first_use.py" --rows "$small" --variants bootstrap \
    weighted-bootstrap --warm-repeats 3) >"$out/first_use_3.md" 2>&1 &
  with_tbb on_cpus 12-15 env NUMBA_CACHE_DIR="$cache" timeout 240 "$py" -m fastbias._warm_up \
    counting native weighted delong bootstrap >"$out/warm_up.txt" 2>&1 &
  wait
  echo "(first_use_3: the OLD tree, $OLD)"
elif [ "$(nproc)" -ge 16 ]; then
  first="1 2 3"
  on_cpus 0-3 timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" \
    --variants float32 float64 --warm-repeats 3 >"$out/first_use_1.md" 2>&1 &
  on_cpus 4-7 timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" \
    --variants weighted delong --warm-repeats 3 >"$out/first_use_2.md" 2>&1 &
  on_cpus 8-11 timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" \
    --variants weighted-bootstrap bootstrap --warm-repeats 3 >"$out/first_use_3.md" 2>&1 &
  with_tbb on_cpus 12-15 env NUMBA_CACHE_DIR="$cache" timeout 240 "$py" -m fastbias._warm_up \
    counting native >"$out/warm_up.txt" 2>&1 &
  wait
else  # a small machine (a dry run): one after another
  first="1"
  timeout 240 "$py" benchmarks/bench_first_use.py --rows "$small" --variants float32 \
    weighted-bootstrap --warm-repeats 1 >"$out/first_use_1.md" 2>&1
  with_tbb env NUMBA_CACHE_DIR="$cache" timeout 240 "$py" -m fastbias._warm_up counting native \
    >"$out/warm_up.txt" 2>&1
fi
for i in $first; do cat "$out/first_use_$i.md"; done
export NUMBA_CACHE_DIR="$cache"

# 2. scaling
# shellcheck disable=SC2086
with_tbb timeout 150 "$py" benchmarks/bench_threads.py --rows "$small" "$big" --cores $cores \
  --repeats 9 2>&1 | tee "$out/threads.md"
with_tbb timeout 60 "$py" benchmarks/call_profile.py --rows "$small" --cores 1 "$top" \
  --repeats 30 2>&1 | tee "$out/profile.md"
if [ -n "${TRIAL:-}" ]; then
  # shellcheck disable=SC2086
  with_tbb timeout 60 "$py" benchmarks/call_profile.py --rows "$small" --cores "$top" \
    --repeats 30 --set $TRIAL 2>&1 | tee "$out/profile_trial.md"
fi
if [ "${POOL:-1}" = 1 ]; then
  # shellcheck disable=SC2086
  timeout 60 "$py" benchmarks/bench_threads.py --rows "$small" --cores ${cores#* } --repeats 9 \
    2>&1 | tee "$out/threads_pool.md"
fi
if [ "$huge" -gt 0 ]; then
  with_tbb timeout 120 "$py" benchmarks/bench_threads.py --rows "$huge" --cores "$top" \
    --repeats 3 2>&1 | tee "$out/threads_huge.md"
fi

# 3. against the loop (a plain install: no TBB)
timeout 100 "$py" benchmarks/compare_reference.py --rows "$ref_rows" --skip-subprocess \
  --repeats 21 2>&1 | tee "$out/compare.txt"
if [ "${AGREE:-0}" = 1 ]; then
  with_tbb timeout 150 "$py" benchmarks/threads_agree.py --rows 2000000 2>&1 | tee "$out/agree.txt"
fi

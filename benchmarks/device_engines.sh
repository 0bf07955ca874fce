#!/usr/bin/env bash
# Issue 16 on a lent many-core machine: fastbias's pool against the rounds on Numba's threads
# (GNU OpenMP, which fastbias now asks to wait passively, and Intel TBB), then the pool's
# scaling at 1.8M, 18M and 100M rows, and first use. One call, each step with its own limit.
#
# Run from the repository root (fastbias from this checkout); logs go to $OUT (default
# ./device-out). TBB is optional: TBB_LIB names a folder holding libtbb.so.12 (the `tbb`
# wheel's lib/), e.g. carried into the checkout.
#
#   TBB_LIB=.tbb bash benchmarks/device_engines.sh
#   SMALL=200000 BIG=400000 HUGE=0 CORES="1 2" bash benchmarks/device_engines.sh   # a dry run
set -u
out=${OUT:-device-out}
mkdir -p "$out"
py=${PYTHON:-python3}
small=${SMALL:-1804875}
big=${BIG:-18000000}
huge=${HUGE:-100000000}
cores=${CORES:-"1 2 8 16"}
many=${MANY:-"8 16"}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
unset OMP_WAIT_POLICY GOMP_SPINCOUNT
NUMBA_CACHE_DIR=$(mktemp -d)
export NUMBA_CACHE_DIR
{
  echo "## machine"
  nproc
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L3"
  free -g | head -2
  uname -r
  "$py" -c "import sys, numpy, numba, pandas; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'pandas', pandas.__version__)"
} 2>&1 | tee "$out/machine.txt"
# shellcheck disable=SC2086
timeout 170 "$py" benchmarks/job_sizes.py --rows "$small" --engine numba pool \
  --jobs-per-worker 4 --min-scale 1 --cores $many --repeats 15 2>&1 | tee "$out/engines_omp.md"
if [ -n "${TBB_LIB:-}" ]; then
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH="$PWD/$TBB_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" NUMBA_THREADING_LAYER=tbb \
    timeout 80 "$py" benchmarks/job_sizes.py --rows "$small" --engine numba pool \
    --jobs-per-worker 4 --min-scale 1 --cores $many --repeats 15 2>&1 | tee "$out/engines_tbb.md"
fi
# shellcheck disable=SC2086
timeout 130 "$py" benchmarks/bench_threads.py --rows "$small" "$big" --cores $cores \
  --repeats 9 2>&1 | tee "$out/threads.md"
timeout 60 "$py" benchmarks/bench_first_use.py --rows "$small" --variants float32 \
  --warm-repeats 3 2>&1 | tee "$out/first_use.md"
if [ "$huge" -gt 0 ]; then
  # shellcheck disable=SC2086
  timeout 90 "$py" benchmarks/bench_threads.py --rows "$huge" --cores ${many##* } --repeats 3 \
    2>&1 | tee "$out/threads_huge.md"
fi

#!/usr/bin/env bash
# Issue 16's many-core figures, in one call on a lent machine with more cores (CPU only).
#
# Run from the repository root with a python3 that has numpy, numba, pandas, scipy and
# scikit-learn (fastbias is imported from this checkout, PYTHONPATH); logs go to $OUT
# (default ./device-out). Every step has its own time limit, so that a slow step still
# leaves the others' figures. The Numba cache starts empty (a private directory): the
# first step waits for the kernels to compile before timing them.
#
#   bash benchmarks/device_cores.sh
#   SIZES="100000" BIG=300000 CORES="1 2" REF_ROWS=100000 bash benchmarks/device_cores.sh
set -u
out=${OUT:-device-out}
mkdir -p "$out"
py=${PYTHON:-python3}
sizes=${SIZES:-"1804875 18000000"}
big=${BIG:-100000000}
cores=${CORES:-"1 2 4 8 16"}
ref_rows=${REF_ROWS:-1804875}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
NUMBA_CACHE_DIR=$(mktemp -d)
export NUMBA_CACHE_DIR
{
  echo "## machine"
  nproc
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|max MHz|L3"
  free -g | head -2
  uname -r
  "$py" -c "import sys, numpy, numba, pandas, scipy, sklearn; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'pandas', pandas.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__)"
} 2>&1 | tee "$out/machine.txt"
# word splitting of $sizes and $cores is intended
# shellcheck disable=SC2086
timeout 150 "$py" benchmarks/bench_threads.py --rows $sizes --cores $cores --repeats 15 \
  --stages 2>&1 | tee "$out/threads.md"
# shellcheck disable=SC2086
timeout 120 "$py" benchmarks/bench_threads.py --rows "$big" --cores $cores --repeats 5 \
  --stages 2>&1 | tee "$out/threads_big.md"
# 1.8M rows under other cuts of the stages' work (fewer, larger jobs: issue 16's 8 ms target)
# shellcheck disable=SC2086
timeout 90 "$py" benchmarks/job_sizes.py --cores $cores --repeats 9 2>&1 | tee "$out/job_sizes.md"
# the opt-in rounds on Numba's threads (FASTBIAS_NUMBA_THREADS=1) against the pool, as shipped
# (from 8 threads and up to 250,000 rows a thread), with GNU OpenMP's threads told not to spin
# shellcheck disable=SC2086
OMP_WAIT_POLICY=passive timeout 120 "$py" benchmarks/job_sizes.py --engine numba pool \
  --jobs-per-worker 4 --min-scale 1 --cores $cores --repeats 9 2>&1 | tee "$out/engines.md"
OMP_WAIT_POLICY=passive timeout 90 "$py" benchmarks/job_sizes.py --rows 18000000 --engine numba \
  pool --jobs-per-worker 4 --min-scale 1 --cores 8 16 --repeats 5 2>&1 | tee "$out/engines_18m.md"
timeout 100 "$py" benchmarks/compare_reference.py --rows "$ref_rows" --skip-subprocess 2>&1 \
  | tee "$out/compare.txt"
timeout 60 "$py" benchmarks/bench_first_use.py --rows "$ref_rows" --variants float32 \
  --warm-repeats 3 2>&1 | tee "$out/first_use.md"

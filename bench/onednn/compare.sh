#!/usr/bin/env bash
# Debian's oneDNN against PyPI's, op class by op class on braid's zoo shapes (bench/onednn/README.md).
#
#   bash bench/onednn/compare.sh [ROUNDS] [FILTER]     # defaults: 3 rounds, every case
#
# Builds bench/onednn/onednn_ops.cc three times:
#   debian  /usr: libdnnl-dev 2.6.3 (GNU OpenMP), what braid linked before oneDNN 3.2
#   gomp    PyPI onednn-devel-cpu-gomp 2023.2.0: oneDNN 3.2.0, GNU OpenMP (the last PyPI build
#           with an OpenMP runtime)
#   pypi    PyPI onednn-devel 2026.1.0: oneDNN 3.13.2, the current one; a SYCL build whose CPU
#           engine runs on Intel's OpenCL CPU runtime (intel-opencl-rt) and TBB threads
# and runs them interleaved: each round runs every (library, threads) pair as its own process,
# the library order rotating per round, 1 thread pinned to CPU 0 and 2 threads to CPUs 0,1
# (taskset: TBB takes its thread count from the affinity mask; the OpenMP builds also call
# omp_set_num_threads as braid does). Prints the medians over rounds and the ratios
# (summarize.py); raw samples in $OUT_DIR/raw.csv. Not a test: it measures and prints.
set -euo pipefail
cd "$(dirname "$0")"
ROUNDS=${1:-3}
FILTER=${2:-}
VENVS=${ONEDNN_VENVS:-/tmp/onednn-venvs}
OUT_DIR=${OUT_DIR:-/tmp/onednn-bench}
MIN_MS=${MIN_MS:-150}
mkdir -p "$VENVS" "$OUT_DIR"

venv() {  # venv NAME PACKAGE==VERSION
  local dir=$VENVS/$1
  if [ ! -f "$dir/.installed-$2" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q --disable-pip-version-check "$2"
    touch "$dir/.installed-$2"
  fi
}
# LIBS="debian gomp": leave out PyPI's 2026.1 (a 2 GB venv, and not adoptable: README.md).
read -ra libs <<<"${LIBS:-debian gomp pypi}"
venv gomp onednn-devel-cpu-gomp==2023.2.0
[[ " ${libs[*]} " == *" pypi "* ]] && venv pypi onednn-devel==2026.1.0

# braid itself now uses PyPI's oneDNN 3.2 (make deps); the 2.6 baseline needs Debian's package.
if [ ! -f /usr/include/oneapi/dnnl/dnnl.hpp ]; then
  echo "compare.sh: the debian build needs Debian's oneDNN 2.6: sudo apt-get install libdnnl-dev" >&2
  exit 1
fi

lock=()
command -v flock >/dev/null && lock=(flock /tmp/braid-build.lock)
build() {  # build NAME [g++ flags...]
  local bin=$OUT_DIR/ops_$1
  shift
  if [ ! -x "$bin" ] || [ onednn_ops.cc -nt "$bin" ]; then
    echo "building $bin" >&2
    "${lock[@]}" g++ -std=c++20 -O2 onednn_ops.cc -o "$bin" "$@" -ldnnl
  fi
}
build debian -fopenmp
build gomp -fopenmp -I"$VENVS/gomp/include" -L"$VENVS/gomp/lib" -Wl,-rpath,"$VENVS/gomp/lib"
[[ " ${libs[*]} " == *" pypi "* ]] &&
  build pypi -I"$VENVS/pypi/include" -L"$VENVS/pypi/lib" -Wl,-rpath-link,"$VENVS/pypi/lib"

run() {  # run LIB THREADS
  local cpus=0
  [ "$2" -ge 2 ] && cpus=0-$(($2 - 1))
  local args=(--threads "$2" --min-ms "$MIN_MS")
  [ -n "$FILTER" ] && args+=(--filter "$FILTER")
  case $1 in
    pypi)  # libdnnl's own dependencies (libsvml, libsycl, ...) and the OpenCL CPU device: the
           # wheel's .icd names a path of Intel's build machine, so name the runtime directly.
      LD_LIBRARY_PATH=$VENVS/pypi/lib OCL_ICD_FILENAMES=$VENVS/pypi/lib/libintelocl.so \
        taskset -c "$cpus" "$OUT_DIR/ops_pypi" "${args[@]}" 2> >(grep -v '^onednn_verbose' >&2) ;;
    *) taskset -c "$cpus" "$OUT_DIR/ops_$1" "${args[@]}" ;;
  esac
}

# The machine is shared: before each process, wait (up to IDLE_WAIT s) until the CPUs were at
# least IDLE_PCT % idle over one second, so a 2-thread run is not measured against a compiler.
IDLE_PCT=${IDLE_PCT:-80}
IDLE_WAIT=${IDLE_WAIT:-180}
wait_idle() {
  local start=$SECONDS a b
  while :; do
    read -ra a < <(grep '^cpu ' /proc/stat)
    sleep 1
    read -ra b < <(grep '^cpu ' /proc/stat)
    local total=0 idle=$((b[4] + b[5] - a[4] - a[5])) k
    for k in 1 2 3 4 5 6 7 8; do total=$((total + b[k] - a[k])); done
    if ((total > 0 && 100 * idle >= IDLE_PCT * total)); then return; fi
    if ((SECONDS - start > IDLE_WAIT)); then
      echo "  (CPUs still busy after ${IDLE_WAIT}s: measuring anyway)" >&2
      return
    fi
  done
}

raw=$OUT_DIR/raw.csv
: >"$raw"
for ((r = 0; r < ROUNDS; r++)); do
  for t in 1 2; do
    for ((i = 0; i < ${#libs[@]}; i++)); do
      lib=${libs[$(((i + r) % ${#libs[@]}))]}
      wait_idle
      echo "round $((r + 1))/$ROUNDS: $lib, $t thread(s)" >&2
      run "$lib" "$t" | sed "s/^/$r,/" >>"$raw"
    done
  done
done
python3 summarize.py "$raw"
echo
STAT=min python3 summarize.py "$raw"

#!/bin/bash
# Issue 14's checks on a GPU, prepared for a short device lease. Build the bundle here first
# (`bash ../shared/tools/gpu-bundle.sh`, then `bash scripts/gpu_conformance_bundle.sh` for the
# conformance suite), carry `.gpu`, and on the GPU machine, from the project
# root, one part per call (each well under 10 minutes on an H100):
#   bash scripts/gpu_check.sh OUT tests      # CUDA tests, `braid run` defaults, IOS under cuda:0
#   bash scripts/gpu_check.sh OUT bench      # every scheduler, measured cost and sim:h100's
#   bash scripts/gpu_check.sh OUT eager      # the eager path and the calibration series
#   bash scripts/gpu_check.sh OUT precision  # issue 29: TF32/FP16/BF16 outputs and timings
#   bash scripts/gpu_check.sh OUT peers      # issue 29: PyTorch in FP16/BF16 beside braid
#   bash scripts/gpu_check.sh OUT serve      # issue 29: braid serve and braid top on cuda:0
#   bash scripts/gpu_check.sh OUT batch      # issue 29: batch 8 and 32, predicted beside measured
#   bash scripts/gpu_check.sh OUT exported   # issue 29: 5 exported models in every precision
#   bash scripts/gpu_check.sh OUT kernels    # Nsight Compute kernel lists, FP32 sequential
# (no part: tests bench eager). Every step runs under its own time limit and the script goes on
# when one fails; OUT/summary.txt lists each step's exit status and time, the other files what it
# printed. The device tool brings back at most 8 files: write OUT elsewhere and tar it into $OUT;
# TAR_TO=FILE does that at the end (OUT/exported left out), and PART_LIMIT=S (seconds) cuts every
# step's limit to what is left of S, skipping steps once under 10 s are left, so that a part
# always ends, and is packed, inside one device call:
#   PART_LIMIT=540 TAR_TO=$OUT/gc.tar.xz bash scripts/gpu_check.sh /tmp/gc precision
# The script exits 1 when any step failed (its summary line says which), 0 otherwise.
# precision: PRECISIONS (default "fp16 fp32 bf16 tf32"), PRECISION_TEST=0 skips the test; serve:
# SERVE_PRECISIONS (default "fp32 fp16"), SERVE_MODELS (default "googlenet,resnet50"),
# SERVE_DEVICE (default cuda:0; `SERVE_DEVICE=cpu SERVE_PRECISIONS=fp32 BRAID_BIN_DIR=build` tries
# the part on a machine without a GPU); peers:
# PEER_PRECISIONS (default "fp16 bf16"), PEER_FLAGS (e.g. --channels-last, --batch 8), PEER_TAG
# (file suffix), PEER_MODELS (torchvision names, default all four), PEER_LIMIT (seconds a step,
# default 120; torch.compile's max-autotune compiled SqueezeNet alone for 223 s in FP16:
# PEER_MODELS=squeezenet1_0 PEER_PRECISIONS=fp16 PEER_FLAGS="--compile-modes max-autotune"
# PEER_LIMIT=450 PEER_TAG=_mat, one model a call); batch: BATCHES (default "8 32"), BATCH_PRECISIONS (default "fp32 fp16");
# exported: EXPORTED (default "resnet50 mobilenet_v3_large vit_b_16 swin_t bert_base"); its
# models (about 1 GB) are written under OUT/exported: leave that folder out of the tar. devices/measured/h100_2026-11-27/README.md has the calls of 2026-11-27.
# Nothing here is judged: docs/gpu.md says what the numbers should be set beside.
set -uo pipefail
out=${1:-${OUT:-gpu_check}}
parts=${2:-tests bench eager}
mkdir -p "$out"
root=$(pwd)
if [[ -z ${BRAID_BIN_DIR:-} ]]; then
  b=$(mktemp -d)
  tar -C "$b" -xJf "$root/.gpu/bundle.tar.xz" || { echo "no .gpu/bundle.tar.xz (run gpu-bundle.sh)"; exit 2; }
  BRAID_BIN_DIR=$b/bin
  export BRAID_DEVICES_DIR=$b/devices
  # Where cuDNN 9 and CUDA 13 were on the H100 machines seen so far (gpu-bundle.sh's header).
  cuda=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda-13.0/targets/x86_64-linux/lib
  export LD_LIBRARY_PATH=$b/lib:/usr/lib/x86_64-linux-gnu:$cuda:${LD_LIBRARY_PATH:-}
fi
export BRAID_CACHE_DIR=${BRAID_CACHE_DIR:-$(mktemp -d)}  # a fresh cache: every search measured
braid=$BRAID_BIN_DIR/braid
models="tv_inception_v3 googlenet resnet50 tv_squeezenet1_0 inception_v3 squeezenet"
algos=sequential,greedy,lios,nimble,opara,ios
models4="tv_inception_v3 googlenet resnet50 tv_squeezenet1_0"
tv_models="inception_v3 googlenet resnet50 squeezenet1_0"

failed=0
# A GPU test binary whose CUDA runtime sees no device skips every test and exits 0: that step
# is marked failed here (its output names the reason, "no CUDA device (...)").
require_device() {  # require_device NAME: after step NAME
  if grep -q 'no CUDA device' "$out/$1.txt" 2>/dev/null; then
    failed=1
    printf '%-28s rc=%-3s %4ss  %s\n' "$1.device" 1 0 "skipped its tests: no CUDA device" |
      tee -a "$out/summary.txt"
  fi
}
step() {  # step NAME LIMIT_S COMMAND...: runs it, its output in OUT/NAME.txt
  local name=$1 limit=$2
  shift 2
  if [[ -n ${PART_LIMIT:-} ]]; then
    local left=$((PART_LIMIT - SECONDS))
    if ((left < 10)); then
      failed=1
      printf '%-28s rc=%-3s %4ss  skipped: PART_LIMIT=%s reached\n' "$name" "-" 0 "$PART_LIMIT" |
        tee -a "$out/summary.txt"
      return
    fi
    ((limit > left)) && limit=$left
  fi
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  ((rc == 0)) || failed=1
  printf '%-28s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" | tee -a "$out/summary.txt"
}

load_counts() {  # load_counts NAME: braid load's counts per model (OUT/NAME.json) in the summary
  python3 - "$out/$1.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)  # the step's own row says it failed
for m in report["models"]:
    print(f"{'  ' + m['name']:<28} {m['ok']}/{m['due']} answered, {m['unsent']} not sent, "
          f"{sum(m['errors'].values())} failed; p50 {m['latency_us']['p50'] / 1e3:.1f} ms, "
          f"{m['throughput']:.1f}/s")
PY
}

tests() {
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  step exec_cuda_test 180 "$BRAID_BIN_DIR/exec_cuda_test"
  require_device exec_cuda_test
  step gpu_profiler_test 120 "$BRAID_BIN_DIR/gpu_profiler_test"
  step cuda_issue_program_test 60 "$BRAID_BIN_DIR/cuda_issue_program_test"
  # `braid run MODEL --device cuda:0`, no other flag: auto, graph replay (within 3% of the best).
  for m in $models; do
    step "run_default.$m" 60 "$braid" run "$m" --device cuda:0 --iters 200 --warmup 20 --json
  done
  # IOS under measured stage costs on tv_inception_v3: its search time (<= 10 s) and its plan.
  step ios_cuda_cost 120 "$braid" schedule tv_inception_v3 --algo ios --cost cuda:0 \
    -o "$out/tv_inception_v3.ios.cuda.json" --json
  step nimble_cuda_cost 60 "$braid" schedule tv_inception_v3 --algo nimble --cost cuda:0 \
    -o "$out/tv_inception_v3.nimble.cuda.json"
  # Issue 31 item 1: IOS's operator merge as one cuDNN convolution (Compiler::compile_merge),
  # priced by GpuProfiler::merge_latency and run by the executor, against sequential; never run
  # on a GPU before this step (bench/README.md, "ios-merge after the merged kernel").
  step bench_merge_cuda 240 "$braid" bench inception_v3 googlenet squeezenet --device cuda:0 \
    --algos sequential,ios-merge --cost cuda:0 --iters 100 --warmup 10 \
    --json-file "$out/bench_merge_cuda.json"
}

bench() {
  # Every scheduler under the measured cost, and under the simulator's graph-priced cost (plans
  # searched since 2026-11-26's pricing, never run on a GPU before), predicted beside measured.
  step bench_cuda_cost 330 "$braid" bench $models --device cuda:0 --algos "auto,$algos" \
    --iters 200 --warmup 20 --json-file "$out/bench_cuda_cost.json"
  # Issue 31 item 3: Opara's launch order from the kernels each unit launches on this GPU
  # (GpuProfiler::unit_resources: cuDNN's, cuBLAS's and braid's kernels read from the driver)
  # against Nimble, graph replay; the stage costs come from bench_cuda_cost's cache (same
  # BRAID_CACHE_DIR). Never run on a GPU before this step. On 2026-11-24's H100, when cuda:0
  # answered no resources, Opara ran 0.996 / 2.218 / 2.346 ms vs Nimble's 0.826 / 2.029 / 2.119.
  step opara_cuda_cost 150 "$braid" bench googlenet inception_v3 resnet50 --device cuda:0 \
    --cost cuda:0 --algos sequential,nimble,opara --iters 200 --warmup 20 \
    --json-file "$out/opara_cuda_cost.json"
  step bench_sim_cost 240 "$braid" bench $models --device cuda:0 --cost sim:h100 \
    --algos "auto,$algos" --iters 200 --warmup 20 --json-file "$out/bench_sim_cost.json"
}

eager() {
  # The eager path, p10/p90 kept (the simulator's eager rows are not reproduced: docs/simulator.md).
  step bench_eager 360 "$braid" bench $models --device cuda:0 --cost sim:h100 --eager \
    --algos "$algos" --iters 100 --warmup 10 --json-file "$out/bench_eager.json"
  step calibrate 120 "$braid" calibrate h100 "$out/calibration.json" --measure cuda:0 \
    -o "$out/h100_calibrated.json"
}

precision() {
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  # Every zoo model in TF32/FP16/BF16 against the CPU's FP32 (bounds in the test), then the
  # single-op cases in each precision, 16-bit I/O at the executor's edges (SixteenBit*,
  # Fp16Model*), NHWC 16-bit convolutions (Nhwc*) and cuBLASLt's bias epilogues (GemmEpilogue*
  # for values, TakesCublasLtBiasEpilogues* for whether they are taken: its `[ epilogue ]` lines).
  # PRECISION_TEST=0 leaves it out.
  if [[ ${PRECISION_TEST:-1} == 1 ]]; then
    step precision_test 300 "$BRAID_BIN_DIR/exec_cuda_test" \
      --gtest_filter='*Precision*:*ConvTranspose*:*Resize*:*CnnOps*:*IndexOps*:*SixteenBit*:*Fp16Model*:*Nhwc*:*Epilogue*'
    require_device precision_test
  fi
  # The ONNX backend node tests on cuda:0 in every precision (tests/conformance/README.md),
  # packed by scripts/gpu_conformance_bundle.sh; its last lines are the per-backend summary.
  if [[ -f $root/.gpu/conformance.tar.xz && $root/.gpu/conformance.tar.xz -ot $root/.gpu/bundle.tar.xz ]]; then
    failed=1
    echo "conformance_cuda: .gpu/conformance.tar.xz is older than the bundle: it would test old code (bash scripts/gpu_conformance_bundle.sh)" |
      tee -a "$out/summary.txt"
  elif [[ -f $root/.gpu/conformance.tar.xz ]]; then
    local c
    c=$(mktemp -d)
    tar -C "$c" -xJf "$root/.gpu/conformance.tar.xz"
    step conformance_cuda 150 env BRAID_ONNX_NODE_TEST_DIR="$c/node" \
      BRAID_CONFORMANCE_BACKENDS=cuda0_fp32,cuda0_tf32,cuda0_fp16,cuda0_bf16 \
      "$c/bin/onnx_node_test" --gtest_brief=1
    require_device conformance_cuda
    tail -30 "$out/conformance_cuda.txt"
  else
    echo "conformance_cuda: no .gpu/conformance.tar.xz (bash scripts/gpu_conformance_bundle.sh)" |
      tee -a "$out/summary.txt"
  fi
  # Each precision: auto and sequential, plans under the simulator's (FP32) cost so that nothing
  # is profiled; graph replay, medians of 100 runs, input and output copies included.
  for p in ${PRECISIONS:-fp16 fp32 bf16 tf32}; do
    step "bench_$p" 90 "$braid" bench $models4 --device cuda:0 --cost sim:h100 --precision "$p" \
      --algos auto,sequential --iters 100 --warmup 10 --json-file "$out/bench_$p.json"
  done
  # Beside the H100 run of 2026-11-27 (before NHWC, measured algorithms and the 2026-11-29
  # fusions): same GPU model, another lease.
  local stored=$root/devices/measured/h100_2026-11-27
  for p in ${PRECISIONS:-fp16 fp32 bf16 tf32}; do
    [[ -f $stored/bench_$p.json && -f $out/bench_$p.json ]] || continue
    python3 "$root/scripts/compare_bench.py" "$stored/bench_$p.json" "$out/bench_$p.json" \
      --labels "2026-11-27 $p" "now $p" | tee "$out/compare_$p.md"
  done
  # FP16 again with each convolution's cuDNN algorithm chosen by timing (--cudnn-benchmark, as
  # PyTorch's cudnn.benchmark), never run on a GPU before 2026-11-28's build.
  step bench_fp16_cudnn_benchmark 90 "$braid" bench $models4 --device cuda:0 --cost sim:h100 \
    --precision fp16 --cudnn-benchmark --algos auto,sequential --iters 100 --warmup 10 \
    --json-file "$out/bench_fp16_cudnn_benchmark.json"
}

batch() {
  # Issue 29: braid at batch 8 and 32 (auto and sequential, graph replay), each row's sim:h100
  # prediction beside its measurement: the data a batch fit of the simulator needs
  # (docs/simulator.md, "Batch >= 8 on the H100"), and the batch-8 rows of the peer table.
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  for b in ${BATCHES:-8 32}; do
    for p in ${BATCH_PRECISIONS:-fp32 fp16}; do
      step "bench_b${b}_$p" 120 "$braid" bench $models4 --device cuda:0 --cost sim:h100 \
        --precision "$p" --batch "$b" --algos auto,sequential --iters 50 --warmup 5 \
        --json-file "$out/bench_b${b}_$p.json"
    done
  done
}

exported() {
  # Issue 29: torchvision models and BERT exported with this machine's PyTorch
  # (scripts/export_torchvision.py, random weights, seeded inputs), then on cuda:0 in FP32, TF32,
  # FP16 and BF16 against the CPU executor (exported_models_cuda_test), then timed under auto in
  # FP16 and BF16. The export uses the machine's own libraries, as the peers part does.
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  local dir=$out/exported names=${EXPORTED:-resnet50 mobilenet_v3_large vit_b_16 swin_t bert_base}
  step python_versions 30 env -u LD_LIBRARY_PATH python3 -c "import importlib.util as u, torch, torchvision; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'onnx', 'present' if u.find_spec('onnx') else 'absent')"
  step export_models 240 env -u LD_LIBRARY_PATH python3 "$root/scripts/export_torchvision.py" \
    --out "$dir" $names
  step exported_cuda_test 300 env BRAID_EXPORTED_MODELS_DIR="$dir" BRAID_EXPORTED_MODELS="${names// /,}" \
    "$BRAID_BIN_DIR/exported_models_cuda_test"
  require_device exported_cuda_test
  grep '^\[ exported \]' "$out/exported_cuda_test.txt"
  local files=()
  for n in $names; do [[ -f $dir/$n.onnx ]] && files+=("$dir/$n.onnx"); done
  ((${#files[@]} > 0)) || { echo "bench_exported: no model was exported" | tee -a "$out/summary.txt"; failed=1; return; }
  for p in fp16 bf16; do
    step "bench_exported_$p" 150 "$braid" bench "${files[@]}" --device cuda:0 --cost sim:h100 \
      --precision "$p" --algos auto,sequential --iters 50 --warmup 5 \
      --json-file "$out/bench_exported_$p.json"
  done
}

kernels() {
  # The kernels a sequential FP32 inference launches, each replayed alone by Nsight Compute, as
  # devices/measured/h100_kernels.json was taken (its `how`): what shows the 2026-11-29 fusions
  # (residual Add, bias epilogues, in-place Concats, Pad+AveragePool) and what the simulator's
  # per_op_kernels should be refitted to (docs/simulator.md). One CSV per model.
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  local ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for m in $models4; do
    step "kernels.$m" 150 "$ncu" --clock-control none --cache-control none --csv \
      --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic \
      "$braid" run "$m" --device cuda:0 --algo sequential --cost sim:h100 --eager --iters 1 \
      --warmup 0
  done
  # The lists as h100_kernels.json holds them, and per kernel family beside it (what shrank).
  local gpu
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  step kernels_json 30 python3 "$root/scripts/ncu_kernels.py" convert "$out"/kernels.*.txt \
    -o "$out/kernels.json" --device "${gpu:-unknown}"
  step kernels_compare 30 python3 "$root/scripts/ncu_kernels.py" compare \
    "$root/devices/measured/h100_kernels.json" "$out/kernels.json"
  grep '^###' "$out/kernels_compare.txt" | tee -a "$out/summary.txt"
}

# start_server NAME ARGS...: `braid serve ARGS` in the background, its output in OUT/NAME.txt;
# sets server_pid and server_url (HOST:PORT) once it listens, or fails after 240 s.
start_server() {
  local name=$1
  shift
  "$braid" serve "$@" --port 0 --grpc-port -1 >"$out/$name.txt" 2>&1 &
  server_pid=$!
  server_url=
  local t0=$SECONDS
  while ((SECONDS - t0 < 240)) && kill -0 "$server_pid" 2>/dev/null; do
    server_url=$(sed -n 's|.*listening on http://\([0-9.]*:[0-9]*\).*|\1|p' "$out/$name.txt" | head -1)
    [[ -n $server_url ]] && break
    sleep 1
  done
  local rc=0
  [[ -n $server_url ]] || { rc=1; kill "$server_pid" 2>/dev/null; }
  ((rc == 0)) || failed=1
  printf '%-28s rc=%-3s %4ss  braid serve %s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" | tee -a "$out/summary.txt"
  return $rc
}
stop_server() {  # SIGTERM, then the exit status of a drained server (0) in the summary
  kill -TERM "$server_pid" 2>/dev/null
  local t0=$SECONDS
  timeout 60 tail --pid="$server_pid" -f /dev/null
  kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid"  # stuck draining: the lease goes on
  wait "$server_pid"
  local rc=$?
  ((rc == 0)) || failed=1
  printf '%-28s rc=%-3s %4ss  SIGTERM\n' "stop.$1" "$rc" "$((SECONDS - t0))" | tee -a "$out/summary.txt"
}

serve() {
  # braid serve and braid top on the GPU, never run there before issue 29: each precision's
  # answers against a CPU server's on the same request (scripts/serve_outputs.py; FP16/BF16 with
  # their tolerance), then 20 s of `braid load`; braid top's policies for 20 s.
  step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  local smodels=${SERVE_MODELS:-googlenet,resnet50} pattern=
  for m in ${smodels//,/ }; do pattern+="${pattern:+,}$m:100"; done
  local common=(--models "$smodels" --scheduler ios --cost sim:h100) dev=${SERVE_DEVICE:-cuda:0}
  start_server serve_cpu "${common[@]}" --device cpu || return
  step ask_cpu 120 python3 "$root/scripts/serve_outputs.py" ask "$server_url" "$smodels" "$out/answers_cpu.json"
  stop_server serve_cpu
  for p in ${SERVE_PRECISIONS:-fp32 fp16}; do
    start_server "serve_$p" "${common[@]}" --device "$dev" --precision "$p" || continue
    step "ask_$p" 60 python3 "$root/scripts/serve_outputs.py" ask "$server_url" "$smodels" "$out/answers_$p.json"
    local tol=(--atol 1e-3 --rtol 1e-3)
    [[ $p == fp32 ]] || tol=(--atol 2e-2 --rtol 2e-2)
    step "compare_$p" 30 python3 "$root/scripts/serve_outputs.py" compare "$out/answers_cpu.json" \
      "$out/answers_$p.json" "${tol[@]}"
    step "load_$p" 120 "$braid" load "$server_url" --pattern "$pattern" --duration 20 \
      --json "$out/load_$p.json"
    load_counts "load_$p"
    stop_server "serve_$p"
  done
  local tmodels=()
  for m in ${smodels//,/ }; do tmodels+=(-m "$m:400"); done
  for p in ${SERVE_PRECISIONS:-fp32 fp16}; do
    step "top_$p" 150 "$braid" top "${tmodels[@]}" --device "$dev" --precision "$p" --cost sim:h100 \
      --policy static,sync,top-heuristic --duration 20 --json "$out/top_$p.json"
  done
}

peers() {
  # PyTorch eager and CUDA Graph in the same precision as braid, one interleaved run each.
  # PEER_FLAGS go to gpu_peers.py (e.g. --channels-last), PEER_TAG names their files.
  # PyTorch gets the machine's own libraries; braid the bundle's, through a wrapper that also
  # schedules under the simulator's cost (nothing profiled: the lease is short).
  local wrap=$out/braid.sh
  printf '#!/bin/sh\nexport LD_LIBRARY_PATH=%s BRAID_DEVICES_DIR=%s BRAID_CACHE_DIR=%s\nexec %s "$@" --cost sim:h100\n' \
    "${LD_LIBRARY_PATH:-}" "${BRAID_DEVICES_DIR:-}" "$BRAID_CACHE_DIR" "$braid" >"$wrap"
  chmod +x "$wrap"
  for p in ${PEER_PRECISIONS:-fp16 bf16}; do
    step "peers_$p${PEER_TAG:-}" "${PEER_LIMIT:-120}" env -u LD_LIBRARY_PATH python3 "$root/bench/gpu_peers.py" ${PEER_MODELS:-$tv_models} \
      --braid "$wrap" --precision "$p" --algos auto --rounds 3 --iters 100 \
      --compile-modes none ${PEER_FLAGS:-} --json "$out/peers_$p${PEER_TAG:-}.json" \
      --markdown "$out/peers_$p${PEER_TAG:-}.md"
  done
}

for part in $parts; do
  case $part in
    tests | bench | eager | precision | peers | serve | batch | exported | kernels) "$part" ;;
    *) echo "unknown part '$part' (known: tests, bench, eager, precision, peers, serve, batch, exported, kernels)"; exit 2 ;;
  esac
done
echo "results in $out (summary.txt)"
cat "$out/summary.txt"
if [[ -n ${TAR_TO:-} ]]; then
  tar -C "$(dirname "$out")" --exclude="$(basename "$out")/exported" -cJf "$TAR_TO" "$(basename "$out")" &&
    echo "packed into $TAR_TO"
fi
exit $failed

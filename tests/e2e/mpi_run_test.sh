#!/usr/bin/env bash
# The multi-device executor end to end (issue 7): for every zoo model, a HIOS-LP schedule over
# two devices run by `mpirun -np 2 braid run MODEL --schedule multi.json` gives outputs
# identical to the single-device run; a schedule naming more devices than ranks fails on every
# rank with a clear error and no hang.
# Usage: mpi_run_test.sh BRAID MPIEXEC SCRATCH_DIR
set -euo pipefail
braid=$1 mpiexec=$2 scratch=$3
mkdir -p "$scratch"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
sha() { python3 -c 'import json,sys; print(json.load(sys.stdin)["outputs_sha256"])'; }
failed=0
# The link between two ranks, measured, prices the transfers of the schedules below.
"$mpiexec" -np 2 "$braid" transfers -o "$scratch/transfers.json" >/dev/null
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["gbps"] > 0 and j["latency_us"] >= 0, j' \
  "$scratch/transfers.json" && echo "ok   transfers measured: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(round(j["latency_us"],2), "us +", round(j["gbps"],2), "GB/s")' "$scratch/transfers.json")"
for model in squeezenet googlenet inception_v3 randwire nasnet resnet50 bert; do
  "$braid" schedule "$model" --algo hios-lp --devices 2 --cost roofline \
    --transfers "$scratch/transfers.json" -o "$scratch/$model.json" >/dev/null
  # BERT is a chain of layers: HIOS rightly keeps it on one device; the others are split.
  if [ "$model" != bert ] && ! grep -q '"device":1' "$scratch/$model.json"; then
    echo "FAIL $model: nothing on device 1"; failed=1
  fi
  two=$(timeout 600 "$mpiexec" -np 2 "$braid" run "$model" --schedule "$scratch/$model.json" \
        --iters 1 --warmup 0 --json | sha)
  one=$("$braid" run "$model" --algo sequential --cost roofline --iters 1 --warmup 0 --json | sha)
  if [ "$two" = "$one" ]; then echo "ok   $model: 2 ranks == 1 device ($one)"
  else echo "FAIL $model: 2 ranks $two, 1 device $one"; failed=1; fi
done
"$braid" schedule squeezenet --algo hios-lp --devices 3 --cost roofline -o "$scratch/three.json" >/dev/null
set +e
err=$(timeout 120 "$mpiexec" -np 2 "$braid" run squeezenet --schedule "$scratch/three.json" 2>&1 >/dev/null)
code=$?
set -e
if [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && [ "$(grep -c 'run with -np 3' <<<"$err")" -eq 2 ]; then
  echo "ok   3-device schedule on 2 ranks: both ranks say 'run with -np 3' (exit $code)"
else
  echo "FAIL 3-device schedule on 2 ranks: exit $code, stderr: $err"; failed=1
fi
# A rank that dies: the other gives up on its receive after BRAID_MPI_TIMEOUT_S (or mpirun
# ends the job first); either way the run ends with an error, not a hang.
set +e
start=$(date +%s)
err=$(BRAID_MPI_TIMEOUT_S=5 BRAID_MPI_TEST_EXIT_RANK=1 timeout 120 "$mpiexec" -np 2 "$braid" run \
      squeezenet --schedule "$scratch/squeezenet.json" --iters 1 --warmup 0 2>&1 >/dev/null)
code=$?
set -e
if [ "$code" -ne 0 ] && [ "$code" -ne 124 ]; then
  echo "ok   a dead rank ends the run in $(( $(date +%s) - start )) s (exit $code)"
else
  echo "FAIL a dead rank: exit $code, stderr: $err"; failed=1
fi
# A rank alive but silent: only the receive timeout can end it; every rank is aborted.
set +e
start=$(date +%s)
err=$(BRAID_MPI_TIMEOUT_S=3 BRAID_MPI_TEST_STALL_RANK=1 timeout 120 "$mpiexec" -np 2 "$braid" run \
      squeezenet --schedule "$scratch/squeezenet.json" --iters 1 --warmup 0 2>&1 >/dev/null)
code=$?
set -e
if [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && grep -q "from rank 1 after 3 s" <<<"$err"; then
  echo "ok   a silent rank: rank 0's receive times out in $(( $(date +%s) - start )) s and aborts all (exit $code)"
else
  echo "FAIL a silent rank: exit $code, stderr: $err"; failed=1
fi
exit $failed

"""scripts/ncu_kernels.py, which turns `gpu_check.sh OUT kernels`' Nsight Compute CSVs into
devices/measured/h100_kernels.json's form and sets them beside the stored list. No GPU here: the
CSV below is written in ncu's --csv layout (one row per kernel and metric, after what the
profiled program printed); the stored file is the real H100 list."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/ncu_kernels.py"
STORED = ROOT / "devices/measured/h100_kernels.json"

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def rows(kernel_id, name, block, grid, metrics):
    return [f'"{kernel_id}","4242","braid","127.0.0.1","{name}","1","7","{block}","{grid}","0",'
            f'"9.0","Command line profiler metrics","{m}","{unit}","{v}"'
            for m, unit, v in metrics]


def write_csv(path, kernels):
    lines = ["==PROF== Connected to process 4242 (braid)",
             "resnet50 sequential on cuda:0: 2.1 ms",  # the program's own output comes first
             HEADER]
    for i, (name, duration) in enumerate(kernels):
        lines += rows(i, name, "(256, 1, 1)", "(98, 1, 1)",
                      [("gpu__time_duration.sum", "nsecond", duration),
                       ("launch__block_size", "", "256"), ("launch__grid_size", "", "98"),
                       ("launch__registers_per_thread", "register/thread", "40"),
                       ("launch__shared_mem_per_block_dynamic", "byte/block", "0"),
                       ("launch__shared_mem_per_block_static", "byte/block", "0")])
    path.write_text("\n".join(lines) + "\n")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def test_converts_ncu_csv_into_the_stored_form_and_compares(tmp_path):
    conv = ("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_"
            "stage4_warpsize2x2x1_g1_tensor16x8x16")
    relu = "void braid::exec::cuda::<unnamed>::unary_kernel<__half>(braid::Unary, const T1 *, T1 *, long)"
    write_csv(tmp_path / "kernels.resnet50.txt",
              [(conv, "12,480"), (relu, "2,016"), (conv, "20,000")])
    out = tmp_path / "kernels.json"
    r = run("convert", tmp_path / "kernels.resnet50.txt", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "resnet50: 3 kernels, 34.5 us" in r.stdout
    doc = json.loads(out.read_text())
    kernels = doc["models"]["resnet50"]
    assert [k["kernel"] for k in kernels] == [conv, relu, conv]
    assert kernels[0]["gpu__time_duration.sum"] == "12,480"
    assert kernels[1]["grid"] == "(98, 1, 1)" and kernels[1]["block"] == "(256, 1, 1)"
    assert set(kernels[0]) == set(json.loads(STORED.read_text())["models"]["resnet50"][0])

    r = run("compare", STORED, out)
    assert r.returncode == 0, r.stderr
    # The stored FP32 list: 109 kernels, 16 Adds (binary_kernel) and 16 ReLUs (unary_kernel).
    assert "### resnet50: 109 -> 3 kernels, 2227.0 -> 34.5 us" in r.stdout
    assert "| binary_kernel | 16 | 123.8 | 0 | 0.0 |" in r.stdout
    assert "| unary_kernel | 16 | 57.2 | 1 | 2.0 |" in r.stdout
    assert "| convolution (cuDNN) | 53 | 1944.1 | 2 | 32.5 |" in r.stdout


def test_a_file_without_ncu_rows_is_left_out_by_name(tmp_path):
    bad = tmp_path / "kernels.squeezenet.txt"
    bad.write_text("==ERROR== the profiler could not start\n")
    r = run("convert", bad, "-o", tmp_path / "k.json")
    assert r.returncode == 2
    assert "kernels.squeezenet.txt: no ncu CSV header" in r.stderr
    assert not (tmp_path / "k.json").exists()
    # Beside a good one: the good model is written, the exit status says one was left out.
    write_csv(tmp_path / "kernels.googlenet.txt", [("void braid::pool2d_kernel<float>()", "6,272")])
    r = run("convert", bad, tmp_path / "kernels.googlenet.txt", "-o", tmp_path / "k.json")
    assert r.returncode == 1, r.stderr
    assert list(json.loads((tmp_path / "k.json").read_text())["models"]) == ["googlenet"]

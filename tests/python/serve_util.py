"""Starting `braid serve` from the Python tests (test_serve_triton.py, test_fp16_io.py)."""
import os
import pathlib
import re
import subprocess
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BRAID = pathlib.Path(os.environ.get("BRAID_BINARY_DIR", ROOT / "build")) / "braid"


def start_serve(args):
    """Starts braid serve with `args` (no gRPC unless `--grpc-port` is among them); returns
    (process, host:port) once it listens. process.grpc_url is the gRPC host:port or None, and
    process.rest collects what it prints after (read on, so that the pipe never fills)."""
    grpc = [] if "--grpc-port" in args else ["--grpc-port", "-1"]
    proc = subprocess.Popen([str(BRAID), "serve", "--port", "0", *grpc, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        m = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if m:
            g = re.search(r"gRPC on ([\d.]+:\d+)", line)
            proc.grpc_url = g.group(1) if g else None
            proc.rest = []
            threading.Thread(target=lambda: proc.rest.extend(proc.stdout), daemon=True).start()
            return proc, f"{m.group(1)}:{m.group(2)}"
    proc.kill()
    pytest.fail("braid serve did not start: " + "".join(lines) + proc.stderr.read())

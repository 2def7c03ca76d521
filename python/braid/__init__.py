"""braid: DNN inference that runs independent operators side by side.

An ONNX Runtime-shaped session over braid's scheduler and executors::

    import braid, numpy as np
    s = braid.InferenceSession("inception_v3")          # a zoo name, an .onnx path or ONNX bytes
    x = np.random.rand(*s.get_inputs()[0].shape).astype(np.float32)
    (y,) = s.run(None, {s.get_inputs()[0].name: x})
    s.schedule                                          # the schedule it runs, as plain data

What matches ONNX Runtime and what differs: docs/python.md.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _braid

__all__ = ["InferenceSession", "NodeArg", "ModelMetadata", "IOBinding", "Server", "StagePricer", "schedule", "validate", "bench", "BraidError",
           "InvalidArgument", "InvalidModel", "Unsupported", "InvalidSchedule", "NotFound"]


class BraidError(RuntimeError):
    """An error from braid; its subclasses say which kind."""


class InvalidArgument(BraidError, ValueError):
    """A bad option, flag or request."""


class InvalidModel(BraidError, ValueError):
    """A malformed model (not ONNX, a cycle, a shape mismatch, a missing weight)."""


class Unsupported(BraidError, NotImplementedError):
    """A well-formed model or option braid does not support (an op type, an attribute value)."""


class InvalidSchedule(BraidError, ValueError):
    """A schedule that violates the model's dependences or the format."""


class NotFound(BraidError, LookupError):
    """A file, zoo model or scheduler name that does not exist."""


_ERRORS = {"invalid argument": InvalidArgument, "invalid model": InvalidModel,
           "unsupported": Unsupported, "invalid schedule": InvalidSchedule,
           "not found": NotFound}


def _error_class(code: str) -> type:
    return _ERRORS.get(code, BraidError)


_ONNX_TYPES = {"float32": "tensor(float)", "float16": "tensor(float16)",
               "bfloat16": "tensor(bfloat16)", "int64": "tensor(int64)", "bool": "tensor(bool)"}
# The arrays each type is exchanged as. NumPy has no bfloat16: a BF16 model's tensors are float32
# arrays (inputs rounded to bfloat16 when read, outputs holding bfloat16 values); ml_dtypes'
# bfloat16 arrays are taken too.
_NUMPY_TYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float32,
                "int64": np.int64, "bool": np.bool_}


@dataclass(frozen=True)
class NodeArg:
    """A model input or output, as onnxruntime.NodeArg describes one."""
    name: str
    shape: list
    # ONNX Runtime's spelling: "tensor(float)", "tensor(float16)", "tensor(bfloat16)",
    # "tensor(int64)", "tensor(bool)"
    type: str


@dataclass(frozen=True)
class ModelMetadata:
    """What the model says about itself, as onnxruntime.ModelMetadata gives it (a zoo model's
    producer is "braid" and its graph name the zoo name)."""
    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict


# ONNX Runtime's execution providers braid stands in for, and the device each means.
_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider")


def _device_of(providers, provider_options) -> str:
    """The device an ONNX Runtime providers list asks for: its first entry (braid runs a whole
    model on one device; ORT's later entries are fallbacks for ops the first cannot run)."""
    if isinstance(providers, str):
        providers = [providers]
    providers = list(providers)
    if not providers:
        raise ValueError("providers is empty")
    first = providers[0]
    name, options = first if isinstance(first, (tuple, list)) else (first, None)
    if options is None and provider_options:
        options = provider_options[0]
    if name not in _PROVIDERS:
        raise ValueError(f"unknown provider '{name}' (braid stands in for "
                         f"{', '.join(_PROVIDERS)})")
    if name == "CPUExecutionProvider":
        return "cpu"
    return f"cuda:{int((options or {}).get('device_id', 0))}"


def _options(scheduler="auto", device="cpu", threads=None, cost=None, schedule=None,
             options: Mapping[str, Any] | None = None, precision: str = "fp32") -> _braid.Options:
    o = _braid.Options()
    o.scheduler = scheduler
    o.device = device
    o.precision = precision
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        o.threads_per_stream = int(threads)
    if cost is not None:
        o.cost = cost
    if schedule is not None:
        o.schedule_json = _schedule_text(schedule)
    known = {"batch", "image_size", "streams", "pin_threads"}
    for key, value in (options or {}).items():
        if key not in known:
            raise ValueError(f"unknown option '{key}' (known: {', '.join(sorted(known))})")
        setattr(o, key, bool(value) if key == "pin_threads" else int(value))
        if key == "batch":
            o.batch_given = True
    return o


def _dim_value(value, where: str) -> int:
    """A dimension given in Python: a whole number >= 1 (bool and float refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: a dimension must be an int, got {type(value).__name__}")
    if int(value) < 1:
        raise ValueError(f"{where}: a dimension must be >= 1, got {value}")
    return int(value)


def _set_input_shapes(o: _braid.Options, shapes, dims) -> None:
    """shapes={"x": [1, 3, 48, 320]} and dims={"width": 320}: an ONNX model's dynamic input dims,
    as --shape and --dim give them (ONNX Runtime's free dimension overrides by name)."""
    if shapes is not None:
        if not isinstance(shapes, Mapping):
            raise TypeError(f"shapes must be a dict of input name -> shape, "
                            f"got {type(shapes).__name__}")
        o.shapes = {str(name): [_dim_value(d, f"shapes['{name}']") for d in shape]
                    for name, shape in shapes.items()}
    if dims is not None:
        if not isinstance(dims, Mapping):
            raise TypeError(f"dims must be a dict of dim name -> value, got {type(dims).__name__}")
        o.dims = {str(name): _dim_value(v, f"dims['{name}']") for name, v in dims.items()}


def _schedule_text(schedule) -> str:
    """A schedule given as data (a dict), as JSON text, or as a path to a .json file."""
    if isinstance(schedule, Mapping):
        return json.dumps(schedule)
    if isinstance(schedule, (str, os.PathLike)) and os.path.exists(schedule):
        with open(schedule, encoding="utf-8") as f:
            return f.read()
    if isinstance(schedule, str):
        return schedule
    raise TypeError(f"schedule must be a dict, JSON text or a path, got {type(schedule).__name__}")


def _model_arg(model):
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if isinstance(model, os.PathLike):
        return os.fspath(model)
    if isinstance(model, str):
        return model
    raise TypeError(f"model must be a zoo name, an .onnx path or ONNX bytes, "
                    f"got {type(model).__name__}")


class InferenceSession:
    """One model loaded, scheduled and prepared once, then run many times (ONNX Runtime's
    InferenceSession). `model` is a zoo name, an .onnx path or ONNX bytes. `scheduler` is "auto"
    (measure the best candidates here and keep the fastest, cached as `braid run` does) or a
    scheduler's name; `schedule` (a dict, JSON text or a path) runs that schedule instead.
    `options`: {"batch": N, "image_size": N (zoo CNNs), "streams": N, "pin_threads": bool (pin
    each lane to its CPUs, as `braid run` does; off by default)}. An ONNX model's dynamic input
    dims are fixed at load: `shapes` {"x": [1, 3, 48, 320]} gives inputs' whole shapes, `dims`
    {"width": 320} every dim of that dim_param (ONNX Runtime's free dimension overrides); a
    dynamic dim left unfixed (but the batch, which options["batch"] fills) is an error naming it.
    `precision` ("fp32", "tf32", "fp16", "bf16") is what a cuda:N session computes in (16-bit
    weights and activations, FP32 accumulation; inputs and outputs stay float32), and what a
    sim: session's time is priced in; the CPU takes "fp32" only.
    run() releases the GIL: several threads may run one session at once."""

    def __init__(self, model, sess_options=None, providers=None, provider_options=None, *,
                 scheduler: str = "auto", device: str | None = None, threads: int | None = None,
                 cost: str | None = "cpu", schedule=None,
                 options: Mapping[str, Any] | None = None,
                 shapes: Mapping[str, Sequence[int]] | None = None,
                 dims: Mapping[str, int] | None = None, precision: str = "fp32"):
        if providers is not None:
            wanted = _device_of(providers, provider_options)
            if device is not None and device != wanted:
                raise ValueError(f"device '{device}' and providers {list(providers)} disagree")
            device = wanted
        if sess_options is not None and threads is None:
            # ONNX Runtime's SessionOptions (or any object with its attribute): its intra-op
            # threads are each stream's OpenMP threads; 0 is ORT's "default".
            threads = getattr(sess_options, "intra_op_num_threads", 0) or None
        o = _options(scheduler, device or "cpu", threads, cost, schedule, options, precision)
        _set_input_shapes(o, shapes, dims)
        self._session = _braid.Session(_model_arg(model), o)
        self._inputs = [NodeArg(n, list(s), _ONNX_TYPES[t]) for n, s, t in self._session.inputs]
        self._outputs = [NodeArg(n, list(s), _ONNX_TYPES[t]) for n, s, t in self._session.outputs]
        self._input_dtypes = [t for _, _, t in self._session.inputs]

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """The ONNX Runtime provider that matches this session's device."""
        return ["CPUExecutionProvider" if self._session.device == "cpu"
                else "CUDAExecutionProvider"]

    def get_provider_options(self) -> dict:
        device = self._session.device
        if device == "cpu":
            return {"CPUExecutionProvider": {}}
        return {"CUDAExecutionProvider": {"device_id": device.split(":")[1]}}

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(**self._session.metadata())

    def io_binding(self) -> "IOBinding":
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: "IOBinding", run_options=None) -> None:
        """Runs with the inputs bound to `iobinding` (read in place) and keeps its bound
        outputs there (IOBinding.get_outputs / copy_outputs_to_cpu)."""
        if run_options is not None:
            raise NotImplementedError("run_options are not supported")
        if iobinding._session is not self:
            raise ValueError("the IOBinding belongs to another session")
        iobinding._run()

    @property
    def schedule(self) -> dict:
        """The schedule this session runs (braid.schedule/1, docs/schedule-format.md)."""
        return json.loads(self._session.schedule_json())

    @property
    def schedule_summary(self) -> str:
        """Which scheduler made the schedule (auto: the winner and its measured speedup)."""
        return self._session.schedule_summary

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options=None) -> list[np.ndarray]:
        """The outputs named (None: all, in the model's order) for `input_feed` (input name ->
        array). float32 outputs are views of the session's own buffers (no copy): each run's
        buffers stay alive while any of its arrays does, and are reused after."""
        if run_options is not None:
            raise NotImplementedError("run_options are not supported")
        outputs = self._session.run(_feed_arrays(self._inputs, self._input_dtypes, input_feed))
        if output_names is None:
            return outputs
        index = {a.name: i for i, a in enumerate(self._outputs)}
        missing = [n for n in output_names if n not in index]
        if missing:
            raise ValueError(f"unknown output '{missing[0]}' (the model gives "
                             f"{', '.join(index)})")
        return [outputs[index[n]] for n in output_names]

    def profile(self, input_feed: Mapping[str, Any] | None = None, runs: int = 1) -> list[dict]:
        """One inference (after a warm-up; the last of `runs`) unit by unit: dicts with "unit",
        "lane", "begin_us", "end_us", "duration_us" (from the run's start), in the order units
        ended. Without `input_feed`, uniform [-1, 1] inputs."""
        feed = input_feed if input_feed is not None else self._random_feed()
        return self._session.profile(_feed_arrays(self._inputs, self._input_dtypes, feed), runs)

    def trace(self, path, input_feed: Mapping[str, Any] | None = None, runs: int = 1) -> None:
        """Writes `runs` inferences as a Chrome trace (chrome://tracing, Perfetto): a lane per
        stream, a slice per unit."""
        feed = input_feed if input_feed is not None else self._random_feed()
        self._session.trace(_feed_arrays(self._inputs, self._input_dtypes, feed),
                            os.fspath(path), runs)

    def _random_feed(self) -> dict:
        rng = np.random.default_rng(1)
        return {a.name: (rng.integers(0, 2, a.shape).astype(_NUMPY_TYPES[t])
                         if t in ("int64", "bool")
                         else rng.uniform(-1, 1, a.shape).astype(_NUMPY_TYPES[t]))
                for a, t in zip(self._inputs, self._input_dtypes)}


class IOBinding:
    """ONNX Runtime's IOBinding on the CPU: inputs bound once and read in place by every
    run_with_iobinding; outputs bound by name, optionally into a caller's buffer (a copy into it
    after each run). Made by InferenceSession.io_binding()."""

    def __init__(self, session: InferenceSession):
        self._session = session
        self._inputs: dict[str, np.ndarray] = {}
        self._outputs: dict[str, np.ndarray | None] = {}  # name -> the caller's buffer, if any
        self._results: list[np.ndarray] = []

    def _check(self, name, args, what):
        if name not in {a.name for a in args}:
            raise ValueError(f"unknown {what} '{name}' (the model has "
                             f"{', '.join(a.name for a in args)})")

    @staticmethod
    def _cpu_only(device_type, device_id):
        if str(device_type).lower() != "cpu" or int(device_id) != 0:
            raise NotImplementedError(f"braid binds CPU buffers only, not {device_type}:"
                                      f"{device_id}")

    @staticmethod
    def _wrap(buffer_ptr, element_type, shape) -> np.ndarray:
        """The caller's buffer at `buffer_ptr` as an array (no copy)."""
        dtype = np.dtype(element_type)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = (ctypes.c_char * nbytes).from_address(int(buffer_ptr))
        return np.frombuffer(raw, dtype=dtype).reshape(shape)

    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._check(name, self._session.get_inputs(), "input")
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name: str, device_type, device_id, element_type, shape,
                   buffer_ptr) -> None:
        self._cpu_only(device_type, device_id)
        self._check(name, self._session.get_inputs(), "input")
        self._inputs[name] = self._wrap(buffer_ptr, element_type, shape)

    def bind_output(self, name: str, device_type="cpu", device_id=0, element_type=None,
                    shape=None, buffer_ptr=None) -> None:
        self._cpu_only(device_type, device_id)
        self._check(name, self._session.get_outputs(), "output")
        buffer = None
        if buffer_ptr is not None:
            arg = next(a for a in self._session.get_outputs() if a.name == name)
            if element_type is None or shape is None or list(shape) != arg.shape:
                raise ValueError(f"output '{name}': a buffer needs element_type and the "
                                 f"output's shape {arg.shape}")
            buffer = self._wrap(buffer_ptr, element_type, shape)
        self._outputs[name] = buffer

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def get_outputs(self) -> list[np.ndarray]:
        """The bound outputs of the last run, in the order they were bound (arrays, where ONNX
        Runtime gives OrtValues)."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray]:
        return [r.copy() for r in self._results]

    def _run(self) -> None:
        names = list(self._outputs)
        results = self._session.run(names, self._inputs)
        for name, result in zip(names, results):
            if self._outputs[name] is not None:
                self._outputs[name][...] = result
        self._results = [self._outputs[n] if self._outputs[n] is not None else r
                         for n, r in zip(names, results)]


def _feed_arrays(args: Sequence[NodeArg], dtypes: Sequence[str],
                 input_feed: Mapping[str, Any]) -> list[np.ndarray]:
    """`input_feed` checked against the model's inputs (names, dtypes, shapes) and in their
    order, as C-contiguous arrays of their dtype: the arrays themselves where they already are
    (the session then reads them in place), else a C-contiguous copy."""
    arrays = []
    names = {a.name for a in args}
    for key in input_feed:
        if key not in names:
            raise ValueError(f"unknown input '{key}' (the model takes "
                             f"{', '.join(a.name for a in args)})")
    for arg, dtype in zip(args, dtypes):
        if arg.name not in input_feed:
            raise ValueError(f"missing input '{arg.name}' (shape {arg.shape}, {arg.type})")
        x = np.asarray(input_feed[arg.name])
        if dtype == "bfloat16" and x.dtype.name == "bfloat16":  # ml_dtypes': widened exactly
            x = x.astype(np.float32)
        if x.dtype != _NUMPY_TYPES[dtype]:
            raise TypeError(f"input '{arg.name}': dtype {x.dtype}, expected {arg.type} "
                            f"({np.dtype(_NUMPY_TYPES[dtype]).name})")
        if list(x.shape) != arg.shape:
            raise ValueError(f"input '{arg.name}': shape {list(x.shape)}, expected {arg.shape}")
        arrays.append(np.ascontiguousarray(x))
    return arrays


def schedule(model: str, algo: str = "ios", *, cost: str = "cpu", streams: int = 10,
             options: Mapping[str, Any] | None = None) -> dict:
    """A schedule of `model` (a zoo name or .onnx path) by scheduler `algo` under cost model
    `cost`, as plain data (braid.schedule/1)."""
    o = _options(cost=cost, options=dict(options or {}, streams=streams))
    return json.loads(_braid.search_schedule(os.fspath(model), algo, o))


def validate(model: str, schedule) -> dict:
    """Checks `schedule` (a dict, JSON text or path) against `model`: {"valid": bool, "errors":
    [...], "warnings": [...]} with the validator's messages (they name stages and units)."""
    diagnostics = _braid.validate_schedule(os.fspath(model), _schedule_text(schedule), _options())
    errors = [m for s, m in diagnostics if s == "error"]
    return {"valid": not errors, "errors": errors,
            "warnings": [m for s, m in diagnostics if s == "warning"]}


class StagePricer:
    """The cost model braid schedules `model` under (`cost`, as --cost names it), asked for
    stages by unit name: another optimizer's stages priced by the function braid's own
    schedulers use (bench/ios_reference.py prices IOS's reference optimizer with it)::

        p = braid.StagePricer("squeezenet", cost="sim:v100")
        p.stage_latencies([[["fire2/expand1x1"], ["fire2/expand3x3"]]])   # one stage, µs
        p.stage_latencies([([["fire2/squeeze"], ["fire2/bypass"]], True)])  # a merge stage
        p.schedule_latency(braid.schedule("squeezenet", "ios", cost="sim:v100"))  # µs
    """

    def __init__(self, model: str, *, cost: str = "cpu",
                 options: Mapping[str, Any] | None = None):
        self._pricer = _braid.StagePricer(os.fspath(model), _options(cost=cost, options=options))

    @property
    def cost(self) -> str:
        return self._pricer.cost

    @property
    def units(self) -> list[tuple[str, str, list[str]]]:
        """(name, op signature, successors' names) per unit, in braid's unit order."""
        return self._pricer.units

    def stage_latencies(self, stages) -> list[float]:
        """µs per stage. A stage is a list of groups of unit names (run concurrently, each
        group's units in order), or (groups, merge) where merge=True prices the units as one
        merged kernel."""
        rows = []
        for stage in stages:
            if isinstance(stage, tuple):
                groups, merge = stage
            else:
                groups, merge = stage, False
            rows.append(([list(g) for g in groups], bool(merge)))
        return self._pricer.stage_latencies(rows)

    def schedule_latency(self, schedule) -> float:
        """The predicted latency (µs) of a schedule (a dict, JSON text or path), as `braid
        schedule` reports it; InvalidSchedule if it does not fit the model."""
        return self._pricer.schedule_latency(_schedule_text(schedule))


def bench(models: Iterable[str], algos: Sequence[str] = ("sequential", "greedy"), *,
          cost: str = "roofline", device: str = "cpu", iters: int = 10, warmup: int = 2,
          streams: int = 10, threads: int | None = None, measure: bool = True,
          options: Mapping[str, Any] | None = None) -> list[dict]:
    """Schedulers side by side on models, as `braid bench` runs them: one flat dict per (model,
    algorithm) with search_ms, predicted_ms, predicted_speedup, measured_ms / measured_p10_ms /
    measured_p90_ms (the schedules of a model timed interleaved), measured_speedup (over
    sequential), streams, gap_to_optimal, error; the model's lower bounds (critical_path_ms,
    work_ms, bound_ms, priced by bound_cost_model) and measured_over_bound / predicted_over_bound.
    `pandas.DataFrame(braid.bench(...))` reads it."""
    o = _options(threads=threads, cost=cost, options=dict(options or {}, streams=streams))
    rows = json.loads(_braid.bench_rows([os.fspath(m) for m in models], list(algos), o, device,
                                        int(iters), int(warmup), bool(measure)))
    flat = []
    for r in rows:
        m = r.pop("measured_ms", None)
        if m is not None:
            r["measured_ms"], r["measured_p10_ms"], r["measured_p90_ms"] = \
                m["median"], m["p10"], m["p90"]
        b = r.pop("bounds")
        r["bound_cost_model"], r["critical_path_ms"], r["bound_ms"] = \
            b["cost_model"], b["critical_path_ms"], b["max_ms"]
        r["work_ms"] = b.get("work_ms")
        flat.append(r)
    return flat


class Server:
    """TOP's multi-model runtime in-process (docs/top.md): each model has its queue; the policy
    dequeues tasks into instances that advance block by block, blocks of several models combined.
    `submit` returns a concurrent.futures.Future of the task's outputs (a list of arrays, as
    InferenceSession.run gives). Use it as a context manager, or call close().

        with braid.Server(["squeezenet", ("resnet50", "stages")], policy="top-heuristic") as srv:
            futures = [srv.submit("squeezenet", {"input": x}) for x in batch]
            outputs = [f.result() for f in futures]
    """

    def __init__(self, models: Sequence, *, policy: str = "top-heuristic", device: str = "cpu",
                 scheduler: str = "sequential", cost: str | None = None, H: int = 4,
                 queue_capacity: int = 0, options: Mapping[str, Any] | None = None):
        specs = []
        for m in models:
            name, blocks = (m, "") if isinstance(m, (str, os.PathLike)) else m
            specs.append((os.fspath(name), blocks))
        o = _options(scheduler=scheduler, device=device, cost=cost or "", options=options)
        self._server = _braid.Server(specs, policy, o, int(H), int(queue_capacity))
        self.models = list(self._server.models)
        self._inputs = {}
        for i, name in enumerate(self.models):
            described = self._server.inputs(i)
            self._inputs[name] = ([NodeArg(n, list(s), _ONNX_TYPES[t]) for n, s, t in described],
                                  [t for _, _, t in described])

    def get_inputs(self, model: str) -> list[NodeArg]:
        return list(self._model(model)[0])

    def _model(self, model: str):
        if model not in self._inputs:
            raise ValueError(f"unknown model '{model}' (serving {', '.join(self.models)})")
        return self._inputs[model]

    def submit(self, model: str, input_feed: Mapping[str, Any],
               timeout_us: float = 0) -> concurrent.futures.Future:
        """Queues one task. The future's result is the outputs; its exception is a BraidError
        for a task that failed, timed out while queued (`timeout_us`), or was cancelled, and
        submit raises InvalidArgument at once when the model's queue is full or the server is
        closed."""
        args, dtypes = self._model(model)
        arrays = _feed_arrays(args, dtypes, input_feed)
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()

        def done(status, outputs, error, queue_us, run_us):
            if status == "done":
                future.set_result(outputs)
            else:
                future.set_exception(BraidError(f"model '{model}': task {status}"
                                                + (f": {error}" if error else "")))

        status = self._server.submit(self.models.index(model), arrays, float(timeout_us), done)
        if status != "accepted":
            raise InvalidArgument(f"model '{model}': not accepted ({status})")
        return future

    def close(self, cancel: bool = False) -> None:
        """No new tasks; waits for the accepted ones (with `cancel`, answers them cancelled)."""
        self._server.close(cancel)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

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

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _braid

__all__ = ["InferenceSession", "NodeArg", "schedule", "validate", "BraidError",
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


_ONNX_TYPES = {"float32": "tensor(float)", "int64": "tensor(int64)", "bool": "tensor(bool)"}
_NUMPY_TYPES = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}


@dataclass(frozen=True)
class NodeArg:
    """A model input or output, as onnxruntime.NodeArg describes one."""
    name: str
    shape: list
    type: str  # ONNX Runtime's spelling: "tensor(float)", "tensor(int64)", "tensor(bool)"


def _options(scheduler="auto", device="cpu", threads=None, cost=None, schedule=None,
             options: Mapping[str, Any] | None = None) -> _braid.Options:
    o = _braid.Options()
    o.scheduler = scheduler
    o.device = device
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        o.threads_per_stream = int(threads)
    if cost is not None:
        o.cost = cost
    if schedule is not None:
        o.schedule_json = _schedule_text(schedule)
    known = {"batch", "image_size", "streams"}
    for key, value in (options or {}).items():
        if key not in known:
            raise ValueError(f"unknown option '{key}' (known: {', '.join(sorted(known))})")
        setattr(o, key, int(value))
        if key == "batch":
            o.batch_given = True
    return o


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
    `options`: {"batch": N, "image_size": N (zoo CNNs), "streams": N}. run() releases the GIL:
    several threads may run one session at once."""

    def __init__(self, model, *, scheduler: str = "auto", device: str = "cpu",
                 threads: int | None = None, cost: str | None = "cpu", schedule=None,
                 options: Mapping[str, Any] | None = None):
        self._session = _braid.Session(
            _model_arg(model), _options(scheduler, device, threads, cost, schedule, options))
        self._inputs = [NodeArg(n, list(s), _ONNX_TYPES[t]) for n, s, t in self._session.inputs]
        self._outputs = [NodeArg(n, list(s), _ONNX_TYPES[t]) for n, s, t in self._session.outputs]
        self._input_dtypes = [t for _, _, t in self._session.inputs]

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

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
        arrays = []
        names = {a.name for a in self._inputs}
        for key in input_feed:
            if key not in names:
                raise ValueError(f"unknown input '{key}' (the model takes "
                                 f"{', '.join(a.name for a in self._inputs)})")
        for arg, dtype in zip(self._inputs, self._input_dtypes):
            if arg.name not in input_feed:
                raise ValueError(f"missing input '{arg.name}' (shape {arg.shape}, {arg.type})")
            x = np.asarray(input_feed[arg.name])
            if x.dtype != _NUMPY_TYPES[dtype]:
                raise TypeError(f"input '{arg.name}': dtype {x.dtype}, expected {arg.type} "
                                f"({np.dtype(_NUMPY_TYPES[dtype]).name})")
            if list(x.shape) != arg.shape:
                raise ValueError(f"input '{arg.name}': shape {list(x.shape)}, expected {arg.shape}")
            if dtype == "int64" and x.size and int(np.abs(x).max()) > 2 ** 24:
                raise ValueError(f"input '{arg.name}': values beyond ±2^24 are not exact in "
                                 f"braid's float tensors")
            # float32 C-contiguous arrays go in as they are; the executor copies them once into
            # the request's arena (its memory plan places the inputs).
            arrays.append(np.ascontiguousarray(x, dtype=np.float32))
        outputs = self._session.run(arrays)
        if output_names is None:
            return outputs
        index = {a.name: i for i, a in enumerate(self._outputs)}
        missing = [n for n in output_names if n not in index]
        if missing:
            raise ValueError(f"unknown output '{missing[0]}' (the model gives "
                             f"{', '.join(index)})")
        return [outputs[index[n]] for n in output_names]


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

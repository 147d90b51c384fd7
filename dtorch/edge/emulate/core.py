"""`dtorch-edge emulate`: run a bundle on an emulated board and measure what decides a deployment.

1. The bundle: `--bundle dist/<board>` (its manifest must name the board), or built from `--model` first
   (dtorch.edge.build, incremental: an unchanged model rebuilds nothing).
2. The runner: local (QEMU user mode here) or docker (the same in a FROM scratch container, --network none), or any
   other runner module of this package (runner.py finds them); `auto` takes docker when an engine answers, else
   local, and says which.
3. Inputs: the `--data` .npy files (each one run's input), else the model's bundled test vector, else zeros.
4. Figures, all labelled "emulated" (QEMU's time is not the board's):
   - parity: every input run on the board's dtorch-run vs the host runtime (same bits) and vs eager (the bundled
     test vector's output, or an `eager` function's) within 1e-5 x the output scale, and the board's fast kernels
     (its SIMD set where the board's ISA has one) vs the host's portable outputs within the same tolerance: PASS/FAIL;
   - cold start: exec of a fresh dtorch-run to its first output (its {"event": "first_output"} line), median of N;
   - latency: p50/p90/p99 of M in-process runs after a warm-up (dtorch-run --bench M);
   - guest instructions per inference (local runner): the count of `--repeat 2` minus that of `--repeat 1`, from the
     project's TCG plugin; deterministic, so it is the figure to compare across changes;
   - peak memory: the runtime's high-water mark (heap incl. the arena, plus the mapped model) from dtorch-run, the
     emulator process's peak RSS, and whether the model fits the board's RAM (FAIL when it does not);
   - sizes of dtorch-run and of the bundle;
   - an estimate of the board's own latency (estimate.py), labelled "estimate".
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import EmulateError, RunnerUnavailable
from .runner import CAP_INSTRUCTIONS, Runner, RunResult, runners

__all__ = ["EmulationReport", "emulate", "make_runner", "PARITY_TOLERANCE"]

PARITY_TOLERANCE = 1e-5  # vs eager: max abs error relative to the output scale (the runtime's float32 contract)


@dataclass
class EmulationReport:
    board: str
    runner: str
    emulator: str
    model: str
    bundle: str
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def parity_pass(self) -> bool:
        return bool(self.figures.get("parity", {}).get("pass"))

    @property
    def fits(self) -> bool:
        return bool(self.figures.get("memory", {}).get("fits", True))

    @property
    def accelerator_pass(self) -> bool:
        """The simulated accelerator plan (--backend) gave the CPU run's bits (True without one)."""
        acc = self.figures.get("accelerator")
        return acc is None or bool(acc.get("outputs_bit_identical_to_cpu"))

    def to_json(self) -> dict[str, Any]:
        return {"board": self.board, "runner": self.runner, "emulator": self.emulator,
                "emulated": self.figures.get("label") != "native",
                "model": self.model, "bundle": self.bundle, **self.figures}

    def lines(self) -> list[str]:
        if self.figures.get("kind") == "firmware":
            from .firmware import firmware_lines

            return firmware_lines(self)
        from .report import human_lines

        return human_lines(self)


def make_runner(name: str, board: Any, profile: Any, bundle: Path, workdir: Path,
                log: Callable[[str], None] = print) -> Runner:
    """The runner called `name` (auto, or one of runner.runners(): local, docker, ...), checked; auto says which
    one it took and why."""
    found = runners()
    if name != "auto" and name not in found:
        raise EmulateError(f"unknown runner {name!r}; the runners are {', '.join(['auto', *found])}")
    if name == "auto":
        return _auto_runner(found, board, profile, bundle, workdir, log)
    r = found[name](board, profile, bundle, workdir)
    r.check()
    return r


def _auto_runner(found: dict[str, type[Runner]], board: Any, profile: Any, bundle: Path, workdir: Path,
                 log: Callable[[str], None]) -> Runner:
    """The first runner, by falling auto priority, that is available and passes its check; else the fallback (the
    lowest priority), with the reasons the others were passed over."""
    order = sorted((c for c in found.values() if c.auto_priority is not None), key=lambda c: -(c.auto_priority or 0))
    if not order:
        raise EmulateError("no runner can be taken by --runner auto; name one with --runner")
    *preferred, fallback = order
    passed_over: list[str] = []
    for cls in preferred:
        ok, why = cls.available(board, profile)
        if ok:
            r = cls(board, profile, bundle, workdir)
            try:
                r.check()
            except RunnerUnavailable as e:
                passed_over.append(str(e))
                continue
            log(f"runner: {cls.name} (auto: {why})")
            return r
        passed_over.append(why)
    log(f"runner: {fallback.name} (auto: {'; '.join(passed_over) or 'the only runner auto takes'})")
    r = fallback(board, profile, bundle, workdir)
    r.check()
    return r


def _load_bundle(board: Any, bundle: Path, model: Path | None) -> tuple[Path, dict[str, Any]]:
    if not bundle.is_dir():
        raise EmulateError(f"bundle not found: {str(bundle)!r}; build one with dtorch-edge build --board {board.name} "
                           f"--model MODEL.dtm")
    manifest_path = bundle / "manifest.json"
    if not (bundle / "dtorch-run").is_file() or not manifest_path.is_file():
        raise EmulateError(f"{str(bundle)!r} is not a bundle (it lacks dtorch-run or manifest.json); build one with "
                           f"dtorch-edge build --board {board.name} --model MODEL.dtm")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as e:
        raise EmulateError(f"cannot read {manifest_path}: {e}") from None
    built_for = manifest.get("board")
    if built_for != board.name:
        raise EmulateError(f"the bundle {str(bundle)!r} was built for board {built_for!r}, not {board.name!r}; build "
                           f"one for {board.name} (dtorch-edge build --board {board.name} --model MODEL.dtm) or give "
                           f"--board {built_for}")
    models = [m["file"] for m in manifest.get("models", [])]
    if model is None:
        if "model.dtm" not in models:
            raise EmulateError(f"the bundle {str(bundle)!r} holds several models ({', '.join(models)}); say which with "
                               f"--model")
        return bundle / "model.dtm", manifest
    from ..._fileio import sha256_file

    digest = sha256_file(model)
    if not any(m.get("sha256") == digest for m in manifest.get("models", [])):
        raise EmulateError(f"model {str(model)!r} is not in the bundle {str(bundle)!r} (its sha256 matches none of "
                           f"{', '.join(models)}); rebuild the bundle with this model")
    return next(bundle / m["file"] for m in manifest["models"] if m.get("sha256") == digest), manifest


def _inputs(dtm: Any, data: Sequence[str | os.PathLike[str]]) -> list[tuple[str, list[np.ndarray]]]:
    """(label, arrays) per run: the data files, else the bundled test vector, else zeros of the input shapes."""
    from ..build import BuildError, sample_files, zero_inputs

    try:
        files = sample_files(data)
    except BuildError as e:
        raise EmulateError(str(e)) from None
    if files and len(dtm.inputs) != 1:
        raise EmulateError(f"--data feeds single-input models; this one has {len(dtm.inputs)} inputs")
    runs: list[tuple[str, list[np.ndarray]]] = []
    for f in files:
        try:
            runs.append((f.name, [np.load(f, allow_pickle=False)]))
        except (OSError, ValueError) as e:
            raise EmulateError(f"cannot read {f}: {e}") from None
    if runs:
        return runs
    if dtm.test_vector is not None:
        return [("bundled test vector", [np.asarray(a) for a in dtm.test_vector["inputs"]])]
    return [("zeros (no data and no bundled test vector)", zero_inputs(dtm))]


def _json_lines(r: RunResult, what: str) -> dict[str, Any]:
    if r.returncode != 0:
        raise EmulateError(f"{what} failed on the emulated board: {r.last_error_line()}")
    report = None
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") and '"event": "report"' in line:
            report = json.loads(line)
    if report is None:
        raise EmulateError(f"{what}: dtorch-run printed no report (is the bundle's dtorch-run older than this dtorch? "
                           f"rebuild it with dtorch-edge build)")
    return report


def _scale(ref: np.ndarray) -> float:
    return max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)


def _max_rel(got: np.ndarray, ref: np.ndarray) -> float:
    """The largest difference of got from ref, relative to ref's scale (0 for empty outputs)."""
    return float(np.max(np.abs(got.astype(np.float64) - ref))) / _scale(ref) if ref.size else 0.0


def emulate(board: str, *, model: str | os.PathLike[str] | None = None, bundle: str | os.PathLike[str] | None = None,
            runner: str = "auto", runs: int = 5, bench_runs: int = 20, data: Sequence[str | os.PathLike[str]] = (),
            timeout: float = 600.0, threads: int = 1, count_instructions: bool = True, out: str | os.PathLike[str] = "dist",
            eager: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None, log: Callable[[str], None] = print,
            progress: bool = True, root: str | os.PathLike[str] | None = None,
            kernels: str = "fast", backend: str | None = None) -> EmulationReport:
    """Run a bundle (or build one from `model`) on `board`'s emulator and measure it; see the module docstring.
    `eager(inputs) -> outputs` is the reference for inputs without one in the file; `root` is another resource
    root for the board and profile files (tests). `kernels`: the policy the cold start, latency and instruction runs
    use ("fast": the board's SIMD set where it has one; "exact": the portable bits); parity checks both.
    `backend`: an accelerator backend (dtorch.backends, e.g. "npu-sim"): its plan of the model is simulated on the
    host on the same inputs (outputs checked bit for bit against the CPU run) and its estimated latency reported
    beside the emulated figures (figures["accelerator"])."""
    if kernels not in ("fast", "exact"):
        raise EmulateError(f"kernels must be 'fast' or 'exact', not {kernels!r}")
    from ..._export.errors import DtmFormatError
    from ..._export.reader import read_dtm
    from ..boards import BoardError, load_board
    from .estimate import estimate_latency, model_work
    from .profiles import profile_for

    if runs < 1 or bench_runs < 1:
        raise EmulateError("--runs and --bench-runs must be >= 1")
    if threads < 1:
        raise EmulateError("--threads must be >= 1")
    try:
        b = load_board(board, root)
    except BoardError as e:
        raise EmulateError(str(e)) from None
    profile = profile_for(b, root)  # a board nothing here emulates is refused first
    if b.bare_metal and backend is not None:
        raise EmulateError(f"--backend: board {b.name} is a microcontroller without an accelerator backend")
    backends = None if b.bare_metal else _accelerator(b, backend)  # checked before anything is built
    model_path = Path(model).resolve() if model is not None else None
    if model_path is not None and not model_path.is_file():
        raise EmulateError(f"model not found: {str(model_path)!r}; export one with dt.export(model, example, "
                           f"'model.dtm')")
    if bundle is None and model_path is None:
        raise EmulateError("give --model MODEL.dtm (a bundle is built for it) or --bundle dist/<board>")
    if b.bare_metal:  # a microcontroller: its firmware under qemu-system-arm (emulate/firmware.py)
        if data:
            raise EmulateError(f"board {b.name} runs its firmware's bundled test vector; --data does not apply")
        from .firmware import emulate_firmware

        return emulate_firmware(b, model=model_path, bundle=Path(bundle) if bundle is not None else None,
                                out=Path(out), timeout=timeout, count_instructions=count_instructions, log=log,
                                progress=progress, kernels=kernels)
    bundle_dir = (Path(bundle) if bundle is not None else Path(out) / b.name).resolve()

    with tempfile.TemporaryDirectory(prefix="dtorch-emulate-") as d:
        work = Path(d)
        os.chmod(work, 0o777)  # a container may run as another user
        r = make_runner(runner, b, profile, bundle_dir, work, log=log)  # checked before anything is built
        if bundle is None:
            from ..build import BuildError, build_bundle

            try:
                build_bundle(b.name, [model_path], out=out, log=log, progress=progress, data=data, compare_full=False,
                             agent=False)  # an emulation bundle: flash is not its purpose
            except BuildError as e:
                raise EmulateError(str(e)) from None
        dtm_path, manifest = _load_bundle(b, bundle_dir, model_path)
        try:
            dtm = read_dtm(dtm_path)
        except DtmFormatError as e:
            raise EmulateError(f"model {str(dtm_path)!r}: {e}") from None
        samples = _inputs(dtm, data)
        r.prepare()
        log(f"emulating {b.name} with the {r.describe()} runner (figures are emulated, not the board's)")
        model_arg = r.bundle(dtm_path.name)
        try:
            figures = _measure(r, b, dtm, dtm_path, model_arg, samples, work, runs=runs, bench_runs=bench_runs,
                               timeout=timeout, threads=threads, count_instructions=count_instructions, eager=eager,
                               progress=progress, kernels=kernels)
        finally:
            r.close()
    files = {p.name: p.stat().st_size for p in bundle_dir.iterdir() if p.is_file()}
    figures["size"] = {"dtorch_run_bytes": files.get("dtorch-run", 0), "bundle_bytes": sum(files.values()),
                       "files": files}
    batch_scale = 1.0
    if dtm.inputs:
        ex = dtm.tensors[dtm.inputs[0]].example_shape
        got = samples[0][1][0].shape
        if ex and got and ex[0]:
            batch_scale = got[0] / ex[0]
    est = estimate_latency(b, model_work(dtm, batch_scale))
    figures["estimate"] = est
    figures["toolchain"] = manifest.get("toolchain")
    if backends is not None:
        from ...backends import BackendError, make_plan, simulation_figures

        try:
            plan = make_plan(dtm, b, *backends, batch_scale=batch_scale)
            figures["accelerator"] = simulation_figures(plan, dtm, [arrays for _, arrays in samples])
        except BackendError as e:
            raise EmulateError(f"--backend {backend}: {e}") from None
    return EmulationReport(board=b.name, runner=r.name, emulator=b.emulator.summary(), model=str(dtm_path),
                           bundle=str(bundle_dir), figures=figures)


def _accelerator(board: Any, name: str | None) -> tuple[Any, Any] | None:
    """(the board's cpu backend, the accelerator backend `name`) for --backend, or None without one (or for "cpu":
    the emulated figures are the CPU's)."""
    if name is None or name == "cpu":
        return None
    from ...backends import BackendError, discover

    registry = discover()
    try:
        return registry.get("cpu", board), registry.get(name, board)
    except BackendError as e:
        raise EmulateError(str(e)) from None


def _measure(r: Runner, b: Any, dtm: Any, dtm_path: Path, model_arg: str, samples: list[tuple[str, list[np.ndarray]]],
             work: Path, *, runs: int, bench_runs: int, timeout: float, threads: int, count_instructions: bool,
             eager: Callable[[list[np.ndarray]], list[np.ndarray]] | None, progress: bool,
             kernels: str = "fast") -> dict[str, Any]:
    import dtorch.runtime as rt

    mode = "native" if b.emulator.kind == "native" else "emulated"  # the host board runs for real
    steps = len(samples) + runs + 1 + (2 if count_instructions and CAP_INSTRUCTIONS in r.capabilities else 0)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=steps, desc=f"emulating {b.name}", unit="run", leave=False)

    def step() -> None:
        if bar is not None:
            bar.update(1)

    def input_args(k: int, arrays: list[np.ndarray]) -> list[str]:
        args = []
        for j, a in enumerate(arrays):
            name = f"in_{k}_{j}.npy"
            np.save(work / name, np.ascontiguousarray(a))
            os.chmod(work / name, 0o644)
            args += ["--input", r.work(name)]
        return args

    sample_args = [input_args(k, arrays) for k, (_, arrays) in enumerate(samples)]  # written once, run many times

    try:
        # parity: every sample, board dtorch-run (exact kernels: the portable bits) vs the host runtime and eager;
        # then the board's fast kernels (its SIMD set, e.g. neon64) vs the same portable outputs, within tolerance
        host = rt.InferenceSession(str(dtm_path), kernels="portable")
        names = [i.name for i in host.get_inputs()]
        worst_host = worst_eager = worst_fast = 0.0
        bits_equal, eager_ok, eager_checked, fast_ok = True, True, 0, True
        digests = []
        for k, (label, arrays) in enumerate(samples):
            outs = [f"out_{k}_{j}.npy" for j in range(len(dtm.outputs))]
            args = [model_arg, *sample_args[k], "--kernels", "exact", "--json", "--threads", str(threads)]
            for o in outs:
                args += ["--output", r.work(o)]
            res = r.run(args, timeout=timeout)
            _json_lines(res, f"the run on {label}")
            got = [np.load(work / o) for o in outs]
            digests.append([hashlib.sha256(g.tobytes()).hexdigest() for g in got])
            want = host.run(None, dict(zip(names, arrays)))
            for g, w in zip(got, want):
                bits_equal &= g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()
                if g.shape == w.shape:
                    worst_host = max(worst_host, float(np.max(np.abs(g.astype(np.float64) - w))) if g.size else 0.0)
            fast_args = [model_arg, *sample_args[k], "--kernels", "fast", "--json", "--threads", str(threads)]
            for o in outs:
                fast_args += ["--output", r.work(o)]
            _json_lines(r.run(fast_args, timeout=timeout), f"the fast-kernel run on {label}")
            for o, w in zip(outs, want):
                g = np.load(work / o)
                w = np.asarray(w)
                err = _max_rel(g, w)
                if not np.issubdtype(w.dtype, np.floating):
                    err = 0.0 if g.tobytes() == w.tobytes() else float("inf")  # integer outputs: the same values
                worst_fast = max(worst_fast, err if g.shape == w.shape else float("inf"))
                fast_ok &= g.shape == w.shape and err <= PARITY_TOLERANCE
            ref = None
            if eager is not None:
                ref = eager(arrays)
            elif label == "bundled test vector":
                ref = [np.asarray(a) for a in dtm.test_vector["outputs"]]
            if ref is not None:
                eager_checked += 1
                for g, e in zip(got, ref):
                    e = np.asarray(e)
                    err = _max_rel(g, e)
                    worst_eager = max(worst_eager, err)
                    eager_ok &= g.shape == e.shape and err <= PARITY_TOLERANCE
            step()
        parity = {"inputs": [label for label, _ in samples], "host_bits_equal": bool(bits_equal),
                  "output_sha256": digests,
                  "vs_host_max_abs": worst_host,
                  "vs_eager_max_rel": worst_eager if eager_checked else None, "eager_checked": eager_checked,
                  "eager_tolerance": PARITY_TOLERANCE,
                  "fast_vs_portable_max_rel": worst_fast, "fast_tolerance": PARITY_TOLERANCE,
                  "pass": bool(bits_equal and eager_ok and fast_ok), "label": mode}

        # cold start: fresh processes to their first output
        first_args = [model_arg, *sample_args[0], "--json", "--threads", str(threads), "--kernels", kernels]
        walls, inside = [], []
        for _ in range(runs):
            res = r.run(first_args, timeout=timeout)
            _json_lines(res, "the cold-start run")
            if res.first_output_s is None:
                raise EmulateError("dtorch-run printed no first_output event; rebuild the bundle with this dtorch")
            walls.append(res.first_output_s * 1e3)
            for line in res.stdout.splitlines():
                if '"event": "first_output"' in line:
                    inside.append(float(json.loads(line)["ms"]))
            step()
        cold = {"median_ms": statistics.median(walls), "samples_ms": walls, "runs": runs,
                "in_process_median_ms": statistics.median(inside) if inside else None,
                "what": ("exec of a fresh dtorch-run under the emulator to its first output" +
                         (" (includes the container's start)" if r.name == "docker" else "")),
                "label": mode}

        # latency and memory: one process, M timed runs after a warm-up
        res = r.run([*first_args, "--bench", str(bench_runs)], timeout=timeout)
        rep = _json_lines(res, "the latency run")
        step()
        lat = dict(rep["latency_ms"])
        lat["label"] = mode
        mem = dict(rep["memory"])
        ram = b.ram_mb * 2**20
        # VmHWM as the process saw it: exec starts a new address space, so it is the emulator's (or dtorch-run's on a
        # native board) alone, without the pages of the Python process that started it.
        mem["emulator_process_peak_rss_bytes"] = mem.pop("process_peak_rss_bytes", None)
        mem.update({"board_ram_bytes": ram, "fits": mem["runtime_peak_bytes"] <= ram,
                    "what": "runtime peak = heap high-water (arena, outputs, inputs, runtime state) + the mapped "
                            "model file; the emulator process's RSS includes QEMU itself",
                    "label": mode})

        # guest instructions per inference
        insns: dict[str, Any] = {"per_inference": None, "label": mode}
        if not count_instructions:
            insns["note"] = "not counted (--no-instructions)"
        elif b.emulator.kind == "native":
            insns["note"] = "not counted: the host board runs natively, without an emulator to count guest instructions"
        elif CAP_INSTRUCTIONS not in r.capabilities:
            insns["note"] = f"the {r.name} runner cannot count instructions (use --runner local)"
        else:
            base = [model_arg, *sample_args[0], "--threads", "1", "--kernels", kernels]
            counts = []
            for n in (1, 2):
                c = r.run([*base, "--repeat", str(n)], timeout=timeout, count_instructions=True)
                if c.returncode != 0 or c.instructions is None:
                    raise EmulateError(f"the counted run failed: {c.last_error_line()}")
                counts.append(c.instructions)
                step()
            insns.update({"per_inference": counts[1] - counts[0], "process_total_repeat1": counts[0],
                          "what": "guest instructions of --repeat 2 minus --repeat 1 (TCG plugin, threads 1, "
                                  "address-space randomization off)"})
    finally:
        if bar is not None:
            bar.close()
    return {"parity": parity, "cold_start": cold, "latency_ms": lat, "memory": mem, "instructions": insns,
            "threads": threads, "kernels": kernels, "label": mode}

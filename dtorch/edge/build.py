"""`dtorch-edge build`: a model (or several) -> a bundle for a board in dist/<board>/.

1. The op list: the models' own lists (their union), an ops.yaml (which must cover every model), or ``all``.
2. The plan (dtorch.edge.build_plan): board file, toolchain (the board's first installed family or
   ``--toolchain``), flags, the kernel files of the listed operators.
3. SCons builds it (``python -m SCons board=... toolchain=... ops=...``, an argv, never a shell string) into
   build/<board>/<toolchain>/<op-set>/; a second build of the same inputs is a no-op and says so.
4. Verification: the host build of the same op list runs every model (its bundled test vector when it has one,
   else zeros of the model's input shapes), so a kernel missing from the list fails here, not on the device.
5. dist/<board>/: dtorch-run, dtorch-agent (Linux boards: the device agent of runtime/apps/agent/PROTOCOL.md, from
   the same runtime objects, so with the same runtime and op-set hashes), the model(s), manifest.json (board,
   toolchain and version, flags, dtorch and runtime versions, runtime and op-set hashes, model sha256s, op list, size
   and sha256 of every file), bundle.txt (what `dtorch-edge flash` sends: PROTOCOL.md section 5; with `sign=KEY`
   Ed25519-signed for an agent started with --pubkey) and a size report:
   the pruned binary vs the full runtime for the same board and toolchain, and bytes per kernel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fileio import pid_alive, sha256_file, write_atomic
from .oplist import OpList, OpListError

__all__ = ["BuildError", "BuildResult", "build_bundle", "sample_files", "zero_inputs"]


class BuildError(RuntimeError):
    """A build that failed: the message is one line saying what and what to do."""


@dataclass
class BuildResult:
    board: str
    toolchain: str
    dist: Path
    binary_bytes: int
    full_bytes: int | None
    up_to_date: bool
    verified: list[str]
    manifest: dict[str, Any]
    kernel_bytes: dict[str, int] = field(default_factory=dict)
    agent_bytes: int | None = None  # dtorch-agent's, None when the bundle has none

    def to_json(self) -> dict[str, Any]:
        return {"board": self.board, "toolchain": self.toolchain, "dist": str(self.dist),
                "binary_bytes": self.binary_bytes, "agent_bytes": self.agent_bytes,
                "full_runtime_bytes": self.full_bytes,
                "up_to_date": self.up_to_date, "verified": self.verified, "kernel_bytes": self.kernel_bytes,
                "manifest": self.manifest}


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, mode)


def _first_error(output: str) -> str:
    """The compiler's (or linker's, or SCons's) first error line."""
    lines = output.splitlines()
    for pattern in (r"\berror\b:", r"\berror\b", r"undefined reference", r"\*\*\*"):
        for line in lines:
            if re.search(pattern, line, re.I) and not line.lstrip().startswith(("/usr/bin", "g++ ", "clang")):
                return line.strip()
    return lines[-1].strip() if lines else "(no output)"


def _scons(root: Path, args: Sequence[str], *, jobs: int, question: bool = False,
           on_line: Callable[[str], None] | None = None) -> tuple[int, str]:
    argv = [sys.executable, "-m", "SCons", "-Q", f"-j{jobs}", *(["-q"] if question else []), *args]
    proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    out = []
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if on_line is not None:
            on_line(line)
    return proc.wait(), "".join(out)


def _op_list(models: Sequence[Path], ops: str | None) -> OpList:
    from .._export.errors import DtmFormatError

    model_ops: OpList | None = None
    for m in models:
        try:
            one = OpList.from_model(m)
        except DtmFormatError as e:
            raise BuildError(f"model {str(m)!r}: {e}") from None
        model_ops = one if model_ops is None else model_ops.union(one)
    if ops is None or ops == "":
        if model_ops is None:
            raise BuildError("nothing to build: give --model MODEL.dtm (one or more) or --ops ops.yaml|all")
        return model_ops
    if ops == "all":
        return OpList.everything()
    try:
        listed = OpList.from_yaml(ops)
    except OpListError as e:
        raise BuildError(str(e)) from None
    if model_ops is not None:
        missing = model_ops.missing_from(listed)
        if missing:
            raise BuildError(f"{ops} lacks {', '.join(missing)}, which the model needs; add it to the op list or "
                             f"record one with: dtorch-edge ops record --model MODEL.dtm --data SAMPLES")
    return listed


def _kernel_bytes(plan: Any, root: Path, workdir: Path) -> dict[str, int]:
    """Bytes of code and data each kernel adds: its kernel file compiled with the build's flags but without LTO
    (an LTO link map no longer attributes code to source files), measured with the toolchain's `size`. A file the
    build itself compiled without LTO (a build without LTO, or a kernel set whose flags say -fno-lto: the x86-64
    sets) is measured in the build's own object instead of compiling it again."""
    size_tool = plan.found.tools.get("size")
    if not size_tool:
        return {}
    lto = any(f.startswith("-flto") for f in plan.compile_flags)
    flags = [f for f in plan.compile_flags if not f.startswith("-flto")]
    inc = [*("-I" + str(root / d) for d in plan.include_dirs), "-DNDEBUG"]
    out: dict[str, int] = {}
    for src in plan.sources:
        if not src.rel.startswith("kernels/"):
            continue
        obj = root / plan.object_path(src)
        if (lto and "-fno-lto" not in src.extra_flags) or not obj.is_file():
            obj = workdir / (src.rel.replace("/", "_") + ".o")
            r = subprocess.run([*plan.found.cxx, *flags, *src.extra_flags, *inc, "-c", str(src.path), "-o", str(obj)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                continue
        sz = subprocess.run([*size_tool, "-A", str(obj)], capture_output=True, text=True)
        total = 0
        for line in sz.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit() and parts[0].startswith((".text", ".rodata", ".data")):
                total += int(parts[1])
        out[src.rel] = total
    return out


def sample_files(data: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The .npy files `data` names: files as given, folders as their .npy files (sorted); BuildError for an item
    that names none."""
    files: list[Path] = []
    for item in data:
        p = Path(item)
        found = sorted(p.glob("*.npy")) if p.is_dir() else [p] if p.is_file() else []
        if not found:
            raise BuildError(f"sample inputs not found: {str(p)!r} (give .npy files or a folder of them)")
        files += found
    return files


def zero_inputs(dtm: Any) -> list[Any]:
    """Zeros of a read model's (dtorch._export.reader.DtmFile) input shapes, dynamic dimensions at 1."""
    import numpy as np

    out = []
    for t in dtm.inputs:
        info = dtm.tensors[t]
        out.append(np.zeros([d if isinstance(d, int) and d >= 0 else 1 for d in info.dims], dtype=info.dtype))
    return out


def _last_line(r: subprocess.CompletedProcess[str]) -> str:
    """The last line a failed dtorch-run printed (its one-line error), or its exit status."""
    text = (r.stderr or r.stdout).strip()
    return text.splitlines()[-1] if text else f"exit {r.returncode}"


def _verify(exe: Path, models: Sequence[Path], workdir: Path, data: Sequence[Path] = ()) -> list[str]:
    """Runs each model with the host build of the op list, on the sample inputs in `data` (.npy files, one batch
    each, for single-input models) and on its bundled test vector or zeros of its input shapes; returns what was
    checked."""
    from .._export.reader import read_dtm

    done = []
    for m in models:
        for sample in data:
            r = subprocess.run([str(exe), str(m), "--input", str(sample), "--output", str(workdir / "out.npy")],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise BuildError(f"the pruned runtime (host build of the same op list) failed on {m.name} with "
                                 f"{sample}: {_last_line(r)}")
        if data:
            done.append(f"{m.name}: {len(data)} sample input file(s)")
        f = read_dtm(m)
        if f.test_vector is not None:
            cmd = [str(exe), str(m), "--self-test", "--kernels", "exact"]
            what = f"{m.name}: bundled test vector"
        else:
            import numpy as np

            inputs = []
            for k, zeros in enumerate(zero_inputs(f)):
                p = workdir / f"verify_{m.stem}_{k}.npy"
                np.save(p, zeros)
                inputs += ["--input", str(p)]
            cmd = [str(exe), str(m), *inputs, "--bench", "1"]
            what = f"{m.name}: zeros of its input shapes (no bundled test vector)"
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise BuildError(f"the pruned runtime (host build of the same op list) failed on {m.name}: "
                             f"{_last_line(r)}")
        done.append(what)
    return done


def _imported(model: Path, out: Path, log: Callable[[str], None]) -> Path:
    """An .onnx model given to the build: imported (dtorch.onnx.import_model) to OUT/imported/<name>.dtm."""
    from ..onnx import OnnxImportError, import_model

    dst = out / "imported" / f"{model.stem}.dtm"
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        report = import_model(model, dst)
    except OnnxImportError as e:
        raise BuildError(f"{model}: {e}") from None
    except OSError as e:
        raise BuildError(f"cannot write the imported model {dst}: {e}") from None
    log(f"imported {model.name} -> {dst} ({report.onnx_nodes} ONNX nodes -> {report.nodes_after_passes} runtime "
        f"nodes)")
    return dst.resolve()


def build_bundle(board: str, models: Sequence[str | os.PathLike[str]] = (), *, ops: str | None = None,
                 toolchain: str | None = None, out: str | os.PathLike[str] = "dist", jobs: int | None = None,
                 verify: bool = True, compare_full: bool = True, log: Callable[[str], None] = print,
                 progress: bool = True, data: Sequence[str | os.PathLike[str]] = (),
                 profile: str | None = None, sign: str | os.PathLike[str] | None = None,
                 agent: bool = True, kernels: str = "fast") -> BuildResult:
    from .. import __version__
    from .boards import BoardError
    from .build_plan import CORE_FLAGS, PlanError, make_plan
    from .resources import resource_root
    from .toolchains import ToolchainError

    root = resource_root()
    model_paths = [Path(m).resolve() for m in models]
    for m in model_paths:
        if not m.is_file():
            raise BuildError(f"model not found: {str(m)!r}; export one with dt.export(model, example, 'model.dtm')")
    model_paths = [_imported(m, Path(out), log) if m.suffix.lower() == ".onnx" else m for m in model_paths]
    try:
        from .boards import load_board

        target = load_board(board, root)
    except BoardError as e:
        raise BuildError(str(e)) from None
    if target.bare_metal:
        return _build_firmware(target, model_paths, ops=ops, toolchain=toolchain, out=Path(out),
                               jobs=jobs or os.cpu_count() or 1, log=log, kernels=kernels)
    op_list = _op_list(model_paths, ops)
    samples = sample_files(data)
    try:
        plan = make_plan(board, toolchain=toolchain, ops=op_list, root=root, profile=profile, kernels=kernels)
        host_plan = None if plan.board.name == "host" or not verify else make_plan("host", ops=op_list, root=root)
    except (BoardError, ToolchainError, PlanError, OpListError) as e:
        raise BuildError(str(e)) from None
    dist = Path(out) / plan.board.name
    _check_out(Path(out), dist)  # before any work: a build of minutes must not fail at its last step
    if sign is not None:
        _signing_key(sign)  # the key (and PyNaCl) checked before the build, too
    jobs = jobs or os.cpu_count() or 1

    def ops_file(p: Any) -> Path:  # the op list SCons reads (the same plan, so the same variant folder)
        path = root / p.variant / "ops.yaml"
        text = p.ops.to_yaml("op list of this build (written by dtorch-edge build)")
        if not path.exists() or path.read_text() != text:
            _write_atomic(path, text.encode())
        return path

    def scons_args(p: Any, agent: bool) -> list[str]:
        return [f"board={p.board.name}", f"toolchain={p.toolchain.family}", f"ops={ops_file(p)}",
                *([f"profile={p.profile}"] if p.profile_overridden else []), *([] if agent else ["agent=0"]),
                *([f"kernels={p.kernels}"] if p.kernels != "fast" else [])]

    def run_build(p: Any, what: str, agent: bool = False) -> bool:
        """Builds plan `p` (with its dtorch-agent when `agent`); returns True when it was already up to date."""
        args = scons_args(p, agent)
        if _scons(root, args, jobs=jobs, question=True)[0] == 0:
            return True
        bar = None
        if progress:
            from tqdm import tqdm

            steps = len(p.sources) + 1 + (len(p.agent_sources) + 1 if agent else 0)
            bar = tqdm(total=steps, desc=f"building {what}", unit="step", leave=False)

        def on_line(line: str) -> None:
            if bar is not None and (" -c " in line or " -o " in line):
                bar.update(1)

        rc, text = _scons(root, args, jobs=jobs, on_line=on_line)
        if bar is not None:
            bar.close()
        if rc != 0:
            raise BuildError(f"building {what} failed: {_first_error(text)}")
        return False

    log(f"board {plan.board.name} ({plan.board.arch}), toolchain {plan.toolchain.family} ({plan.found.version}), "
        f"profile {plan.profile}, {len(op_list.entries())} op(s): {', '.join(op_list.entries())}; kernel sets: "
        f"{', '.join(['portable', *plan.kernel_sets])}")
    for note in plan.kernel_set_notes:
        log(note)
    up_to_date = run_build(plan, f"dtorch-run for {plan.board.name}", agent=agent)
    exe = root / plan.variant / "dtorch-run"
    agent_exe: Path | None = root / plan.variant / "dtorch-agent"
    log(f"{'up to date, nothing rebuilt' if up_to_date else 'built'}: {exe.relative_to(root)}")
    if not plan.has_agent:
        agent_exe = None
    elif not agent:
        agent_exe = None
        log("no dtorch-agent in this bundle (--no-agent): `dtorch-edge flash` cannot serve it")
    elif agent_exe is not None and agent_exe.is_file() and _sodium_ready():
        log(f"{'up to date' if up_to_date else 'built'}: {agent_exe.relative_to(root)}")
    else:
        agent_exe = None
        log("warning: the bundle has no dtorch-agent: libsodium's sources are not fetched (run: python -m "
            "dtorch.edge.third_party, or scripts/setup.sh), so `dtorch-edge flash` cannot serve this bundle")

    verified: list[str] = []
    if verify and model_paths:
        vplan = plan if host_plan is None else host_plan
        if host_plan is not None:
            run_build(host_plan, "the host check build")
        with tempfile.TemporaryDirectory() as d:
            verified = _verify(root / vplan.variant / "dtorch-run", model_paths, Path(d), samples)
        log(f"verified the op list on the host: {'; '.join(verified)}")

    full_bytes = None
    if compare_full and not op_list.all_ops:
        full = make_plan(plan.board, toolchain=plan.toolchain.family, ops=OpList.everything(), root=root,
                         profile=plan.profile, kernels=plan.kernels)
        run_build(full, f"the full runtime for {plan.board.name} (size comparison)")
        full_bytes = (root / full.variant / "dtorch-run").stat().st_size
    with tempfile.TemporaryDirectory() as d:
        kernel_bytes = _kernel_bytes(plan, root, Path(d))

    # The bundle is written into a folder beside the target and swapped in whole: the target is always the old
    # bundle or the new one, never a mix (a build killed here leaves a hidden folder the next build removes).
    stage = Path(tempfile.mkdtemp(prefix=f".{dist.name}.build-{os.getpid()}-", dir=dist.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(stage, 0o777 & ~umask)  # a bundle folder like mkdir makes one (mkdtemp's is 0700)
    try:
        result = _write_bundle(stage, plan, exe, model_paths, op_list, full_bytes, kernel_bytes, verified,
                               up_to_date, __version__, CORE_FLAGS, agent_exe, sign)
        _swap_in(stage, dist)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    result.dist = dist
    return result


def _sodium_ready() -> bool:
    from .third_party import ThirdPartyError, libsodium_source

    try:
        libsodium_source(fetch=False)
    except ThirdPartyError:
        return False
    return True


def model_entries(models: dict[str, Path]) -> list[dict[str, Any]]:
    """The manifest's `models`: each file, its sha256 and its precision ("int8" when it runs int8 operators, else
    "float32"); an int8 model whose inputs and outputs (names, dtypes, dimensions; a dynamic dimension matches any) are
    those of a float32 model in the same bundle names it as its `float_fallback`, the model a deployment switches back
    to."""
    from .._export.reader import read_dtm

    def signature(dtm: Any) -> list[tuple[str, str, list[int | str]]]:
        return [(dtm.tensors[i].name, dtm.tensors[i].dtype, list(dtm.tensors[i].dims))
                for i in (*dtm.inputs, -1, *dtm.outputs) if i >= 0] + [("", "", [len(dtm.inputs)])]

    def same(a: list[Any], b: list[Any]) -> bool:  # names, dtypes, ranks; each dim equal or dynamic in either
        return len(a) == len(b) and all(
            na == nb and da == db and len(sa) == len(sb) and all(
                x == y or isinstance(x, str) or isinstance(y, str) for x, y in zip(sa, sb))
            for (na, da, sa), (nb, db, sb) in zip(a, b))

    entries, sigs = [], {}
    for name, path in models.items():
        dtm = read_dtm(path)
        int8 = any(e.endswith(":int8") for e in dtm.op_list)
        entries.append({"file": name, "sha256": sha256_file(path), "precision": "int8" if int8 else "float32"})
        sigs[name] = signature(dtm)
    for e in entries:
        if e["precision"] == "int8":
            fallback = [f["file"] for f in entries
                        if f["precision"] == "float32" and same(sigs[f["file"]], sigs[e["file"]])]
            if fallback:
                e["float_fallback"] = fallback[0]
    return entries


def bundle_text(plan: Any, models: dict[str, Path]) -> str:
    """bundle.txt (runtime/apps/agent/PROTOCOL.md section 5): the bundle as the agent installs it. Its files are the
    models (the first is the one the agent runs); the binaries are not among them (the agent runs the models)."""
    lines = ["dtorch-bundle 1", f"board {plan.board.name}", f"runtime_hash {plan.runtime_hash}",
             f"opset_hash {plan.opset_hash}", f"runtime_version {plan.runtime_version}", f"model {next(iter(models))}"]
    lines += [f"file {name} {sha256_file(p)} {p.stat().st_size}" for name, p in models.items()]
    return "\n".join(lines) + "\n"


def sign_bundle_text(text: str, key: str | os.PathLike[str]) -> str:
    """bundle.txt with its `signature` line (PROTOCOL.md section 5): the Ed25519 signature of `text` by the key in
    the file `key` (its 32-byte seed, raw or as 64 hex digits), made with PyNaCl (libsodium). An agent started with
    `--pubkey` (the matching public key: `bundle_public_key`) activates only bundles signed so."""
    return text + f"signature {_signing_key(key).sign(text.encode()).signature.hex()}\n"


def bundle_public_key(key: str | os.PathLike[str]) -> str:
    """The public key (64 hex digits, what `dtorch-agent --pubkey FILE` reads) of the signing key in the file `key`."""
    return bytes(_signing_key(key).verify_key).hex()


def _signing_key(key: str | os.PathLike[str]) -> Any:
    try:
        from nacl.signing import SigningKey
    except ImportError:
        raise BuildError("signing a bundle needs PyNaCl (libsodium's Python binding): pip install pynacl") from None
    try:
        raw = Path(key).read_bytes()
    except OSError as e:
        raise BuildError(f"cannot read the signing key {str(key)!r}: {e.strerror or e}") from None
    if len(raw) != 32:
        try:
            raw = bytes.fromhex(raw.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            raw = b""
    if len(raw) != 32:
        raise BuildError(f"the signing key {str(key)!r} is neither 32 raw bytes nor 64 hex digits (an Ed25519 seed)")
    return SigningKey(raw)


def _build_firmware(board: Any, models: Sequence[Path], *, ops: str | None, toolchain: str | None, out: Path,
                    jobs: int, log: Callable[[str], None], kernels: str) -> BuildResult:
    """A bare-metal board: one firmware ELF for one model (dtorch/edge/firmware.py), swapped into out/<board>."""
    from .firmware import FirmwareError, build_firmware
    from .resources import resource_root

    if len(models) != 1:
        raise BuildError(f"board {board.name} is a microcontroller: its firmware holds one model in flash; give "
                         f"exactly one --model (got {len(models)})")
    if ops is not None:
        raise BuildError(f"board {board.name} builds a firmware for its model's own operators; --ops does not apply")
    dist = out / board.name
    _check_out(out, dist)
    stage = Path(tempfile.mkdtemp(prefix=f".{dist.name}.build-{os.getpid()}-", dir=dist.parent))
    root = resource_root()
    log(f"board {board.name} ({board.arch}, bare metal: {board.mcu.flash_kb} KiB flash, {board.mcu.ram_kb} KiB RAM), "
        f"firmware for {models[0].name}")
    try:
        manifest = build_firmware(board, models[0], stage, toolchain=toolchain, jobs=jobs, log=log, kernels=kernels,
                                  run_scons=lambda args: _scons(root, args, jobs=jobs))
        _swap_in(stage, dist)
    except FirmwareError as e:
        raise BuildError(str(e)) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    log(f"built: {dist / 'firmware.elf'}")
    sizes = manifest["sizes"]
    return BuildResult(board=board.name, toolchain=manifest["toolchain"], dist=dist, binary_bytes=sizes["flash"],
                       full_bytes=None, up_to_date=False, verified=[], manifest=manifest)


def _check_out(out: Path, dist: Path) -> None:
    """--out must be (or become) a folder this process can write into: say so in one line before the build."""
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise BuildError(f"--out {str(out)!r}: {str(p)!r} is a file, not a folder; choose another --out")
            break
    try:
        dist.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=dist.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BuildError(f"--out {str(out)!r} is not a folder this build can write into: "
                         f"{e.strerror or e}; choose another --out") from None
    if dist.exists() and not dist.is_dir():
        raise BuildError(f"{str(dist)!r} is a file, not a bundle folder; remove it or choose another --out")
    _remove_stale_stages(dist)


def _remove_stale_stages(dist: Path) -> None:
    """Hidden stage folders of builds into `dist` that were killed (their pid is gone)."""
    pattern = re.compile(re.escape(f".{dist.name}.build-") + r"(\d+)-.*")
    for e in dist.parent.iterdir():
        m = pattern.fullmatch(e.name)
        if m is not None and e.is_dir() and not pid_alive(int(m.group(1))):
            shutil.rmtree(e, ignore_errors=True)



def _swap_in(stage: Path, dist: Path) -> None:
    """Make `stage` the bundle at `dist`: one atomic exchange of the two folders where the kernel offers it
    (renameat2 RENAME_EXCHANGE), else two renames (the old bundle moved aside, the new one in)."""
    if not dist.exists():
        os.rename(stage, dist)
        return
    if _exchange(stage, dist):
        return  # `stage` now holds the old bundle; the caller removes it
    aside = Path(tempfile.mkdtemp(prefix=f".{dist.name}.build-{os.getpid()}-old-", dir=dist.parent))
    os.rename(dist, aside / "bundle")
    os.rename(stage, dist)
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _set_bytes(kernel_bytes: dict[str, int]) -> dict[str, int]:
    """Kernel object bytes per kernel set (kernels/<set>/...), portable first."""
    out: dict[str, int] = {}
    for rel, n in kernel_bytes.items():
        parts = rel.split("/")
        name = parts[1] if len(parts) > 2 and parts[0] == "kernels" else "other"
        out[name] = out.get(name, 0) + n
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != "portable", kv[0])))


def _write_bundle(dist: Path, plan: Any, exe: Path, model_paths: Sequence[Path], op_list: OpList,
                  full_bytes: int | None, kernel_bytes: dict[str, int], verified: list[str], up_to_date: bool,
                  version: str, core_flags: Sequence[str], agent: Path | None = None,
                  sign: str | os.PathLike[str] | None = None) -> BuildResult:
    files: dict[str, Path] = {"dtorch-run": exe}
    if agent is not None:
        files["dtorch-agent"] = agent
    models: dict[str, Path] = {}
    if len(model_paths) == 1:
        models["model.dtm"] = model_paths[0]
    else:
        for m in model_paths:
            models[m.name] = m
    files.update(models)
    binaries = ("dtorch-run", "dtorch-agent")
    for name, src in files.items():
        _write_atomic(dist / name, src.read_bytes(), 0o755 if name in binaries else 0o644)
    if models:
        text = bundle_text(plan, {n: dist / n for n in models})
        _write_atomic(dist / "bundle.txt", (text if sign is None else sign_bundle_text(text, sign)).encode())
    binary_bytes = exe.stat().st_size
    agent_bytes = agent.stat().st_size if agent is not None else None
    manifest = {
        "board": plan.board.name, "arch": plan.board.arch,
        "toolchain": {"name": plan.toolchain.family, "version": plan.found.version},
        "profile": plan.profile,
        "kernels": plan.kernels, "kernel_sets": ["portable", *plan.kernel_sets],
        "flags": {"cxxflags": list(plan.compile_flags), "core_cxxflags": list(core_flags),
                  "ldflags": list(plan.link_flags),
                  "libs": list(plan.flags.libs), "lto": plan.flags.lto},
        "dtorch_version": version, "runtime_version": plan.runtime_version,
        "runtime_hash": plan.runtime_hash, "opset_hash": plan.opset_hash,
        "ops": op_list.entries(),
        "models": model_entries(models),
        "files": {n: {"bytes": (dist / n).stat().st_size, "sha256": sha256_file(dist / n)} for n in files},
        "sizes": {"dtorch_run_bytes": binary_bytes, "dtorch_agent_bytes": agent_bytes, "full_runtime_bytes": full_bytes,
                  "pruned_vs_full": None if not full_bytes else round(binary_bytes / full_bytes, 4),
                  "kernel_bytes": kernel_bytes, "kernel_set_bytes": _set_bytes(kernel_bytes),
                  "kernel_bytes_method": "each kernel file compiled with the build's flags without LTO, "
                                         "sections .text/.rodata/.data measured with size -A"},
        "verified": verified,
        "bundle_signed": sign is not None,
    }
    _write_atomic(dist / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    report = [f"# Size report: {plan.board.name} ({plan.toolchain.family})", "",
              f"- dtorch-run (pruned, stripped, static): {binary_bytes:,} bytes",
              f"- dtorch-agent (the device agent: the same runtime, pruned the same way): {agent_bytes:,} bytes"
              if agent_bytes is not None else "- dtorch-agent: (not in this bundle)",
              f"- full runtime, same board and toolchain: {full_bytes:,} bytes" if full_bytes else
              "- full runtime: (not built)",
              *[f"- kernel set {name}: {n:,} bytes of kernel objects"
                + (" (the SIMD set's cost in size; the portable kernels stay for the exact policy and the cases "
                   "the set hands back)" if name != "portable" else "")
                for name, n in _set_bytes(kernel_bytes).items()],
              "", "| kernel file | bytes (non-LTO object) |", "|---|---:|"]
    report += [f"| {k} | {v:,} |" for k, v in sorted(kernel_bytes.items(), key=lambda kv: -kv[1])]
    _write_atomic(dist / "size_report.md", ("\n".join(report) + "\n").encode())
    return BuildResult(board=plan.board.name, toolchain=plan.toolchain.family, dist=dist, binary_bytes=binary_bytes,
                       full_bytes=full_bytes, up_to_date=up_to_date, verified=verified, manifest=manifest,
                       kernel_bytes=kernel_bytes, agent_bytes=agent_bytes)

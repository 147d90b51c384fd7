"""How emulated figures are shown: the human lines of one run, and a board matrix as Markdown, JSON and a PNG chart.
Every emulated figure carries the word "emulated"; the board estimate carries "estimate"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["accelerator_lines", "bench_markdown", "bench_chart", "human_lines", "write_bench_report"]


def _mb(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f} MiB"


def _kb(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 1024:.0f} KiB"


def human_lines(rep: Any) -> list[str]:
    f = rep.figures
    p, c, lat, mem, ins = f["parity"], f["cold_start"], f["latency_ms"], f["memory"], f["instructions"]
    tag = f.get("label", "emulated")
    eager = ("n/a (no eager reference: export with bundle_example=True)" if p["vs_eager_max_rel"] is None
             else f"{p['vs_eager_max_rel']:.2e} x output scale (tolerance {p['eager_tolerance']:g})")
    lines = [f"{rep.board}: {rep.runner} runner, {rep.emulator}; all figures {tag} unless marked estimate",
             f"  parity ({tag}): {'PASS' if p['pass'] else 'FAIL'}: host runtime bits "
             f"{'identical' if p['host_bits_equal'] else 'DIFFER'} (max abs diff {p['vs_host_max_abs']:.2e}), vs eager "
             f"{eager}; fast kernels vs portable {p.get('fast_vs_portable_max_rel', 0.0):.2e} x output scale "
             f"(tolerance {p.get('fast_tolerance', 1e-5):g}); {len(p['inputs'])} input(s)",
             f"  cold start ({tag}): {c['median_ms']:.1f} ms median of {c['runs']} fresh processes "
             f"({c['what']}); inside dtorch-run {c['in_process_median_ms']:.1f} ms",
             f"  latency ({tag}): p50 {lat['p50']:.2f} ms, p90 {lat['p90']:.2f} ms, p99 {lat['p99']:.2f} ms over "
             f"{lat['runs']} runs, {lat['threads']} thread(s), {f.get('kernels', 'fast')} kernels"]
    if ins.get("per_inference") is not None:
        lines.append(f"  guest instructions per inference ({tag}, deterministic): {ins['per_inference']:,}")
    else:
        lines.append(f"  guest instructions: {ins.get('note', 'not counted')}")
    lines.append(f"  peak memory ({tag}): runtime {_mb(mem['runtime_peak_bytes'])} (heap {_mb(mem['heap_peak_bytes'])}"
                 f" incl. arena {_mb(mem['arena_bytes'])}, model {_mb(mem['model_bytes'])}); emulator process RSS "
                 f"{_mb(mem.get('emulator_process_peak_rss_bytes'))}; board RAM {_mb(mem['board_ram_bytes'])}: "
                 + ("fits" if mem["fits"] else "FAIL: the model does not fit"))
    s = f["size"]
    lines.append(f"  size: dtorch-run {_kb(s['dtorch_run_bytes'])}, bundle {_kb(s['bundle_bytes'])}")
    est = f.get("estimate")
    if est:
        lines.append(f"  latency on the real board (estimate, not measured): {est['latency_ms']:.2f} ms "
                     f"({est['basis']})")
    else:
        lines.append("  latency on the real board (estimate): n/a (the board file gives no CPU figures)")
    acc = f.get("accelerator")
    if acc:
        lines += accelerator_lines(acc)
    return lines


def accelerator_lines(acc: dict[str, Any]) -> list[str]:
    """The lines of a simulated accelerator plan (emulate --backend): named a simulation, its times estimates."""
    name = acc["backend"]
    subs = acc["subgraphs"]
    same = ("bit-identical to the CPU run" if acc["outputs_bit_identical_to_cpu"] else "DIFFER from the CPU run")
    lines = [f"  {name} (simulation, latencies are estimates): {acc['nodes_on_backend']} of {acc['nodes']} nodes in "
             f"{len(subs)} subgraph{'s' if len(subs) != 1 else ''}, {acc['transfers']} transfers "
             f"({acc['transfer_bytes']} bytes); outputs {same} on {acc['inputs']} input(s)"]
    total = acc.get("estimate_total_ms")
    if total is not None:
        parts = ", ".join(f"{k} {v:.3f} ms" for k, v in acc["estimate_ms"].items())
        cpu = acc.get("cpu_only_estimate_ms")
        vs = f" vs {cpu:.3f} ms on the CPU alone (estimate)" if cpu is not None else ""
        lines.append(f"  latency with {name} (estimate, not measured): {total:.3f} ms ({parts}){vs}")
    for k, s in enumerate(subs):
        est = s.get("estimate") or {}
        if est:
            lines.append(f"    subgraph {k}: nodes {s['nodes'][0]}-{s['nodes'][-1]}: {est['latency_ms']:.3f} ms "
                         f"(estimate: compute {est['compute_ms']:.3f}, memory {est['memory_ms']:.3f}, launch "
                         f"{est['launch_ms']:.3f}; {est['macs'] / 1e6:.2f} M MACs)")
    if acc.get("basis"):
        lines.append(f"    basis: {acc['basis']}")
    for fb in acc.get("fallbacks", []):
        lines.append(f"    node {fb['node']} {fb['op']} on the CPU: {fb['category']}: {fb['reason']}")
    return lines


def bench_markdown(reports: list[Any]) -> str:
    head = ("| board | runner | parity | cold start ms (emulated) | latency p50 / p90 / p99 ms (emulated) | "
            "instructions / inference (emulated) | runtime peak MiB (emulated) | fits RAM | dtorch-run KiB | "
            "bundle KiB | board latency ms (estimate) |\n|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|")
    rows = []
    for r in reports:
        f = r.figures
        lat, ins, est = f["latency_ms"], f["instructions"]["per_inference"], f.get("estimate")
        ins_s = "n/a" if ins is None else f"{ins:,}"
        est_s = "n/a" if not est else f"{est['latency_ms']:.2f}"
        rows.append(f"| {r.board} | {r.runner} | {'PASS' if f['parity']['pass'] else 'FAIL'} | "
                    f"{f['cold_start']['median_ms']:.1f} | {lat['p50']:.2f} / {lat['p90']:.2f} / {lat['p99']:.2f} | "
                    f"{ins_s} | {f['memory']['runtime_peak_bytes'] / 2**20:.1f} | "
                    f"{'yes' if f['memory']['fits'] else 'NO'} | {f['size']['dtorch_run_bytes'] / 1024:.0f} | "
                    f"{f['size']['bundle_bytes'] / 1024:.0f} | {est_s} |")
    return head + "\n" + "\n".join(rows) + "\n"


def bench_chart(reports: list[Any], path: Path) -> None:
    """Three bar charts side by side: emulated latency (with the board estimate), runtime peak memory, binary and
    bundle size, one bar group per board."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    boards = [r.board for r in reports]
    x = list(range(len(boards)))
    fig, axes = plt.subplots(1, 3, figsize=(4.2 * 3, 3.8))
    lat = [r.figures["latency_ms"]["p50"] for r in reports]
    est = [(r.figures.get("estimate") or {}).get("latency_ms", 0.0) for r in reports]
    w = 0.38
    axes[0].bar([i - w / 2 for i in x], lat, w, label="p50 under QEMU (emulated)")
    axes[0].bar([i + w / 2 for i in x], est, w, label="real board (estimate)")
    axes[0].set_title("latency, ms (log scale)")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[1].bar(x, [r.figures["memory"]["runtime_peak_bytes"] / 2**20 for r in reports], 0.6)
    axes[1].set_title("runtime peak memory, MiB (emulated)")
    axes[2].bar([i - w / 2 for i in x], [r.figures["size"]["dtorch_run_bytes"] / 1024 for r in reports], w,
                label="dtorch-run")
    axes[2].bar([i + w / 2 for i in x], [r.figures["size"]["bundle_bytes"] / 1024 for r in reports], w, label="bundle")
    axes[2].set_title("size, KiB")
    axes[2].legend(fontsize=7)
    for ax in axes:
        ax.set_xticks(x)
        ax.set_xticklabels(boards, rotation=20, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{Path(reports[0].model).name}: emulated boards (QEMU); estimates marked", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


def write_bench_report(reports: list[Any], folder: Path) -> dict[str, Path]:
    """bench.md, bench.json and bench.png in `folder` (written atomically)."""
    from ..._fileio import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    md = folder / "bench.md"
    js = folder / "bench.json"
    png = folder / "bench.png"
    model = Path(reports[0].model).name if reports else "?"
    text = (f"# Emulated boards: {model}\n\nEvery figure but the last column is measured under QEMU (emulated), "
            f"not on the boards; the last column is an estimate from each board file's CPU figures.\n\n"
            + bench_markdown(reports))
    write_atomic(md, text.encode())
    write_atomic(js, (json.dumps([r.to_json() for r in reports], indent=2) + "\n").encode())
    tmp = folder / ".bench.png.tmp"
    bench_chart(reports, tmp)
    tmp.replace(png)
    return {"markdown": md, "json": js, "chart": png}

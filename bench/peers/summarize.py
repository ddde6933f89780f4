#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Turns one configuration's run folder of bench/peers/run_all.sh into the
markdown tables of docs/benchmarks.md (printed to stdout), ending with the
issue-17 targets: each measured, its goal, and whether it is met.
  /usr/bin/python3 bench/peers/summarize.py OUT/avx512/runs

A run's tokens/s is the median over its timed steps (step 1 is warm-up); a
configuration's is the median over its runs, with min and max. "vs peer" is the
median over rounds of (zerodp run / PyTorch run of the same round), so runs
taken under the same load are compared. Peak RSS per rank: PyTorch and zerodp
MPI ranks are processes (getrusage / GNU time, per process, max over ranks);
zerodp thread ranks share one process, whose peak RSS is divided by N.
"""
import glob
import json
import os
import re
import statistics as st
import sys

MB = 1e6


def zerodp_run(path):
    # The metrics file (docs/train.md): a header record, one per step, a final one.
    recs = [r for r in (json.loads(line) for line in open(path)) if "step" in r]
    # GNU time's lines: their own file (run_all.sh), or the log of older runs.
    base = path[:-len(".jsonl")]
    log = open(base + ".rss").read() if os.path.exists(base + ".rss") else open(base + ".log").read()
    rss = [int(x) for x in re.findall(r"rss_kb=(\d+)", log)]
    tps = [r["tokens_per_s"] for r in recs[1:]] or [recs[0]["tokens_per_s"]]
    ranks = len(recs[-1]["memory"])
    thread = "thread" in os.path.basename(path) or "n1" in os.path.basename(path)
    per_rank_rss = rss[0] * 1024 / ranks if thread and len(rss) == 1 else max(rss) * 1024
    return {"tps": st.median(tps), "loss": [r["loss"] for r in recs], "rss": per_rank_rss,
            "states": max(m["model_states"] for m in recs[-1]["memory"]),
            "peak_ledger": max(sum(v["peak"] for v in m.values() if isinstance(v, dict)) for m in recs[-1]["memory"])}


def torch_run(path):
    d = json.load(open(path))
    secs = d["step_seconds"][1:] or d["step_seconds"]
    return {"tps": st.median(d["tokens_per_step"] / s for s in secs), "loss": d["loss"],
            "rss": max(d["rss_kb"]) * 1024, "states": None, "peak_ledger": None}


def runs(folder, prefix):
    out = {}
    for p in sorted(glob.glob(os.path.join(folder, prefix + "-r*.json*"))):
        rep = int(re.search(r"-r(\d+)\.json", p).group(1))
        try:
            out[rep] = torch_run(p) if p.endswith(".json") else zerodp_run(p)
        except (ValueError, KeyError, IndexError, OSError) as e:  # a failed run (logged by run_all.sh)
            print(f"(skipped {os.path.basename(p)}: {e})\n")
    return out


def fmt_mb(x):
    return "-" if x is None else f"{x / MB:,.0f}"


def precision_label(folder):
    """fp32, or the bf16 products of PRECISION=bf16 (PyTorch's JSON says autocast bf16)."""
    for name in sorted(os.listdir(folder)):
        if name.startswith("torch-") and name.endswith(".json"):
            if json.load(open(os.path.join(folder, name))).get("autocast") == "bf16":
                return "bf16 products: zerodp --compute bf16, PyTorch autocast"
            return "fp32"
    return "fp32"


def main():
    folder = sys.argv[1]
    configs = [("PyTorch DDP (gloo)", "torch-ddp", None), ("zerodp stage 0, thread", "zerodp-thread-s0", "torch-ddp"),
               ("zerodp stage 0, MPI", "zerodp-mpi-s0", "torch-ddp"),
               ("PyTorch DDP + ZeroRedundancyOptimizer", "torch-zero1", None),
               ("zerodp stage 1, thread", "zerodp-thread-s1", "torch-zero1"),
               ("zerodp stage 1, MPI", "zerodp-mpi-s1", "torch-zero1"),
               ("zerodp stage 2, thread", "zerodp-thread-s2", "torch-ddp"),
               ("zerodp stage 2, MPI", "zerodp-mpi-s2", "torch-ddp"),
               ("zerodp stage 3, thread", "zerodp-thread-s3", "torch-ddp"),
               ("zerodp stage 3, MPI", "zerodp-mpi-s3", "torch-ddp")]
    loads = [float(x) for x in re.findall(r"load (\S+)", open(os.path.join(folder, "log.txt")).read())]
    print(f"Load average (1 min) before the runs: min {min(loads):.2f}, median {st.median(loads):.2f}, "
          f"max {max(loads):.2f} ({os.cpu_count()} cores).\n")
    print(f"| configuration (N=2, B=4, T=64, {precision_label(folder)}) | runs | tokens/s median | min | max | vs peer (paired median) "
          "| peak RSS per rank (MB) | ledger model states per rank (MB) | ledger peak per rank (MB) | loss at last step |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    data = {prefix: runs(folder, prefix) for _, prefix, _ in configs}
    for name, prefix, peer in configs:
        r = data[prefix]
        if not r:
            continue
        tps = [x["tps"] for x in r.values()]
        ratio = "1.00 (baseline)" if peer is None else "-"
        if peer and data[peer]:
            paired = [r[k]["tps"] / data[peer][k]["tps"] for k in r if k in data[peer]]
            ratio = f"{st.median(paired):.2f}x {'DDP' if peer == 'torch-ddp' else 'DDP+ZeRO-1'}"
        first = r[min(r)]
        print(f"| {name} | {len(r)} | {st.median(tps):.0f} | {min(tps):.0f} | {max(tps):.0f} | {ratio} "
              f"| {st.median(x['rss'] for x in r.values()) / MB:,.0f} | {fmt_mb(first['states'])} "
              f"| {fmt_mb(first['peak_ledger'])} | {first['loss'][-1]:.6f} |")

    n1 = runs(folder, "scale-n1")
    n2 = data["zerodp-thread-s3"]
    if n1:
        print("\n**Stage 3 scaling** (thread backend; N=1 is one rank alone, where every stage does the same "
              "work; N=4 runs 2 steps, for its memory only: on a machine of fewer than 4 cores it is "
              "oversubscribed)\n")
        print("| N | tokens/s in all (median, min-max) | ledger model states per rank (MB) | peak RSS per rank (MB) |")
        print("|---|---|---|---|")
    for n, r in ((1, n1), (2, n2 if n1 else {})):
        if r:
            tps = [x["tps"] for x in r.values()]
            print(f"| {n} | {st.median(tps):.0f} ({min(tps):.0f}-{max(tps):.0f}) | {fmt_mb(r[min(r)]['states'])} "
                  f"| {st.median(x['rss'] for x in r.values()) / MB:,.0f} |")
    for backend in ("thread", "mpi"):
        p = os.path.join(folder, f"scale-n4-{backend}.jsonl")
        if os.path.exists(p):
            x = zerodp_run(p)
            print(f"| 4 ({backend}) | 2 steps, not timed | {fmt_mb(x['states'])} | {x['rss'] / MB:,.0f} |")

    tp, zp = os.path.join(folder, "loss-torch-ddp.json"), os.path.join(folder, "loss-zerodp-s0.jsonl")
    if os.path.exists(tp) and os.path.exists(zp):
        a, b = torch_run(tp)["loss"], zerodp_run(zp)["loss"]
        print(f"\n**Loss, step by step, same weights and batches** (PyTorch DDP vs zerodp stage 0, {len(a)} steps; "
              f"max |difference| {max(abs(x - y) for x, y in zip(a, b)):.2e})\n")
        print("| step | PyTorch DDP | zerodp stage 0 | difference |")
        print("|---|---|---|---|")
        for s in sorted({1, 2, 5, 10, 15, 20, 25, 30, len(a)}):
            if s <= min(len(a), len(b)):
                print(f"| {s} | {a[s - 1]:.6f} | {b[s - 1]:.6f} | {b[s - 1] - a[s - 1]:+.2e} |")

    comm = os.path.join(folder, "comm.txt")
    if os.path.exists(comm):
        print("\n**Collectives** (`zerodp bench comm --ranks 2 --max-bytes 64M --quick`)\n\n```")
        print(open(comm).read().rstrip())
        print("```")

    targets(folder, data, n1)


def paired(a, b):
    """Median over the rounds both have of a's tokens/s over b's."""
    keys = [k for k in a if k in b]
    return st.median(a[k]["tps"] / b[k]["tps"] for k in keys) if keys else None


def all_reduce_vs_memcpy(path):
    """{bytes: vs_memcpy} of the all_reduce table in bench comm's text output."""
    out, section = {}, None
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for line in open(path):
        if line.startswith("# "):
            section = line[2:].strip()
            continue
        m = re.match(r"\s*(\d+)(B|KiB|MiB|GiB)\s.*\s(\d+\.\d+)x\s*$", line)
        if section == "all_reduce" and m:
            out[int(m.group(1)) * units[m.group(2)]] = float(m.group(3))
    return out


def targets(folder, data, n1):
    """The issue-17 targets, each as measured in this folder's runs."""
    rows = []

    def row(what, value, goal, fmt, ok):
        rows.append((what, "-" if value is None else fmt.format(value), goal,
                     "-" if value is None else ("yes" if ok(value) else "**no**")))

    row("stage 0 (thread) vs PyTorch DDP, paired", paired(data["zerodp-thread-s0"], data["torch-ddp"]),
        ">= 1.5x", "{:.2f}x", lambda v: v >= 1.5)
    row("stage 1 (thread) vs DDP + ZeroRedundancyOptimizer, paired",
        paired(data["zerodp-thread-s1"], data["torch-zero1"]), ">= 1.8x", "{:.2f}x", lambda v: v >= 1.8)
    medians = {s: st.median(x["tps"] for x in data[f"zerodp-thread-s{s}"].values())
               for s in range(4) if data[f"zerodp-thread-s{s}"]}
    spread = max(medians.values()) / min(medians.values()) - 1 if len(medians) > 1 else None
    slowest = min(medians, key=medians.get) if medians else None
    row(f"slowest stage's step time over the fastest's (thread; slowest: {slowest})", spread, "<= +5%", "{:+.1%}",
        lambda v: v <= 0.05)
    row("stage 1 at N=2 (thread) over one rank's tokens/s, paired", paired(data["zerodp-thread-s1"], n1) if n1 else None,
        ">= 1.9x", "{:.2f}x", lambda v: v >= 1.9)
    model = os.path.join(folder, "model.json")
    step = fb = None
    if os.path.exists(model):
        try:
            m = json.load(open(model))
            step = m["positions_per_s"] / m["bound_positions_per_s"]
            fb = m["gflops_fwd_bwd"] / m["sgemm_gflops"]
        except (ValueError, KeyError, ZeroDivisionError):
            pass
    row("one rank: the whole step against the sgemm bound (bench model, CPU time)", step, ">= 75%", "{:.0%}",
        lambda v: v >= 0.75)
    row("one rank: forward + backward against the sgemm rate", fb, ">= 85%", "{:.0%}", lambda v: v >= 0.85)
    comm = os.path.join(folder, "comm.txt")
    ar = all_reduce_vs_memcpy(comm) if os.path.exists(comm) else {}
    row("all-reduce (N=2) vs memcpy at 1 MiB", ar.get(1 << 20), ">= 0.3x", "{:.2f}x", lambda v: v >= 0.3)
    big = [v for b, v in ar.items() if b >= 16 << 20]
    row("all-reduce (N=2) vs memcpy at 16 MiB and up, the worst size", min(big) if big else None, ">= 0.6x",
        "{:.2f}x", lambda v: v >= 0.6)
    for stage, peer in ((0, "torch-ddp"), (1, "torch-zero1")):
        z, t = data[f"zerodp-thread-s{stage}"], data[peer]
        ratio = (st.median(x["rss"] for x in z.values()) / st.median(x["rss"] for x in t.values())
                 if z and t else None)
        row(f"stage {stage} peak RSS per rank (thread) over PyTorch's", ratio, "<= 1.00", "{:.2f}", lambda v: v <= 1.0)
    print("\n**Targets (issue 17)**\n")
    print("| target | measured | goal | met |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()

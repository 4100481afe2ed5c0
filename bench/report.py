#!/usr/bin/env python3
"""Markdown tables for bench/run.sh: reads the raw files a run left under OUT and prints the
throughput-efficiency, memory-per-VU, open-model pacing and coordinated-omission tables.
Also writes OUT/summary.json with every parsed run.

Usage: python3 bench/report.py OUT

Per-run files (as anchors.sh): BASE.time (/usr/bin/time -v), BASE.rc, BASE.server_cpu, BASE.stat
(/proc/stat before/after), BASE.out/.err, and for pado the result directory BASE.pado/
(summary.json, timeline.jsonl). Peer tools (wrk, k6, oha) are parsed with the parsers of
../shared/bench/anchors_report.py beside the repository (ANCHORS env var), so their numbers are read exactly as the
peers' reference numbers were.
"""
import base64
import glob
import json
import math
import os
import re
import statistics
import struct
import sys
import zlib

ANCHORS = os.environ.get(
    "ANCHORS",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench"),
)
sys.dont_write_bytecode = True  # never leave a __pycache__ in the read-only shared folder
sys.path.insert(0, ANCHORS)
import anchors_report as ar  # noqa: E402  (parse_time, parse_wrk, parse_k6, parse_oha, fmt, ...)

fmt, fmt_ms, med, read = ar.fmt, ar.fmt_ms, ar.med, ar.read


# ----------------------------------------------------------------------------- pado parsing
def hdr_decode(s):
    """HdrHistogram V2 compressed base64 ('HISTF...') -> {value: count} (value = bucket's low end)."""
    b = base64.b64decode(s)
    _cookie, ln = struct.unpack(">ii", b[:8])
    d = zlib.decompress(b[8:8 + ln])
    _c, plen, _off, digits, lowest, _hi, _ratio = struct.unpack(">iiiiqqd", d[:40])
    p = d[40:40 + plen]
    counts, i, idx = {}, 0, 0
    while i < len(p):
        v, shift = 0, 0
        while True:  # LEB128, at most 9 bytes
            byte = p[i]
            i += 1
            if shift == 56:
                v |= byte << shift
                break
            v |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        v = (v >> 1) ^ -(v & 1)  # ZigZag
        if v < 0:
            idx += -v
        else:
            if v:
                counts[idx] = v
            idx += 1
    sbc_mag = max(int(math.ceil(math.log2(2 * 10 ** digits))), 1)
    shm = sbc_mag - 1
    shc = 1 << shm
    unit = int(math.floor(math.log2(max(lowest, 1))))
    out = {}
    for i, c in counts.items():
        bi, sbi = (i >> shm) - 1, (i & (shc - 1)) + shc
        if bi < 0:
            sbi -= shc
            bi = 0
        out[sbi << (bi + unit)] = out.get(sbi << (bi + unit), 0) + c
    return out


def pado_slow_frac(rdir, thr_us=100_000):
    """Share of http_req_duration samples > 100 ms, from timeline.jsonl (histograms in us)."""
    try:
        tot = slow = 0
        with open(os.path.join(rdir, "timeline.jsonl")) as f:
            for line in f:
                for s in json.loads(line).get("series", []):
                    h = s.get("hist", {}).get("duration")
                    if not h:
                        continue
                    for v, c in hdr_decode(h).items():
                        tot += c
                        slow += c if v > thr_us else 0
        return slow / tot if tot else None
    except Exception:  # noqa: BLE001 — an optional column; never break the report over it
        return None


def parse_pado(base, slow=False):
    try:
        j = json.load(open(base + ".pado/summary.json"))
    except (OSError, ValueError):
        return None
    lat = j.get("latency_ms", {})
    d = {"requests": j.get("requests"), "duration_s": j.get("duration_s"), "rps": j.get("rps"),
         "errors": j.get("failed", 0), "error_kinds": j.get("errors", {}),
         "dropped": j.get("dropped_iterations", 0), "late": j.get("late_iterations", 0),
         "vus_max": j.get("vus_max"), "interrupted": j.get("interrupted")}
    for k in ("p50", "p90", "p95", "p99", "p99_9", "max", "mean", "min"):
        if lat.get(k) is not None:
            d[k.replace("_", "") + "_ms"] = lat[k]
    if slow:
        d["slow_frac"] = pado_slow_frac(base + ".pado")
    return d


def other_cpu(base, d):
    """Cores busy with something else than generator and server during the run (compiles etc.)."""
    st = read(base + ".stat").splitlines()
    sc = read(base + ".server_cpu").split()
    if len(st) < 2 or len(sc) != 5 or "cpu_s" not in d:
        return None
    a, b = ([int(x) for x in line.split()[1:]] for line in st[:2])
    busy = lambda v: sum(v[:8]) - v[3] - v[4]  # noqa: E731  all but idle and iowait (no guest)
    hz, wall = float(sc[4]), float(sc[3]) - float(sc[2])
    if wall <= 0:
        return None
    return max(0.0, (busy(b) - busy(a)) / hz - d["cpu_s"] - d.get("server_cpu_s", 0.0)) / wall


def parse_run(base, tool, slow=False):
    if tool in ("pado", "pado_base"):
        d = parse_pado(base, slow) or {}
    else:
        d = ar.parse_generic(base) or ar.PARSERS.get(tool, lambda b: None)(base) or {}
    d.update(ar.parse_time(base))
    if d.get("requests") and d.get("cpu_s"):
        d["req_per_cpu_s"] = d["requests"] / d["cpu_s"]
    d["other_cores"] = other_cpu(base, d)
    return d


def runs(phase_dir):
    """{name: [base, ...]} for files NAME-R.time in phase_dir (in first-seen order)."""
    out = {}
    for f in sorted(glob.glob(os.path.join(phase_dir, "*.time")),
                    key=lambda p: (p.rsplit("-", 1)[0], int(re.sub(r"\D", "", p.rsplit("-", 1)[1]) or 0))):
        base = f[:-5]
        name = os.path.basename(base).rpartition("-")[0]
        out.setdefault(name, []).append(base)
    return out


def pct(v, nd=0):
    return fmt(v * 100 if v is not None else None, nd, "%")


def steady_rps(rdir, dur):
    """Mean completed requests per 1-s timeline bucket, leaving out the first and the last second."""
    try:
        per = {}
        with open(os.path.join(rdir, "timeline.jsonl")) as f:
            for line in f:
                j = json.loads(line)
                per[j["t"]] = per.get(j["t"], 0) + sum(x.get("requests", 0) for x in j.get("series", []))
        keep = [v for t, v in per.items() if 1 <= t < (dur or 0) - 1]
        return sum(keep) / len(keep) if keep else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def signed_pct(v):
    return "n/a" if v is None else f"{v * 100:+.2f} %"


def reference_section(title_start):
    """Table rows of REFERENCE.md's section whose heading starts with title_start."""
    rows, on = [], False
    for line in read(os.path.join(ANCHORS, "REFERENCE.md")).splitlines():
        if line.startswith("### "):
            on = line[4:].startswith(title_start)
            continue
        if on and line.startswith("| ") and not line.startswith("| run ") and not line.startswith("| tool "):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


# ----------------------------------------------------------------------------- tables
def table_eff(out, vers, allruns):
    rows = runs(os.path.join(out, "eff"))
    if not rows:
        return ""
    m = re.search(r"DUR=(\d+)", vers.get("params", ""))
    lines = ["### Throughput efficiency (nginx on CPU 0, generator on CPU 1, 64 conns/VUs, {} s; median of "
             "runs)".format(m.group(1) if m else "?"), "",
             "| tool | version | runs | req/s | gen CPU s (user+sys) | gen CPU util | req per gen CPU-s "
             "| (min–max) | peak RSS MiB | p50 ms | p99 ms | errors | nginx CPU util | other load (cores) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    res, effm, rpsm = [], {}, {}
    for name, bases in rows.items():
        rs = [parse_run(b, name) for b in bases]
        allruns["eff/" + name] = rs
        ok = [r for r in rs if r.get("requests")]
        if not ok:
            res.append((0, f"| {name} | {ar.short_version(name, vers)} | {len(rs)} | failed |" + " |" * 10))
            continue
        util = med([r["cpu_s"] / r["wall_s"] for r in ok if r.get("wall_s") and r.get("cpu_s") is not None])
        eff = med([r.get("req_per_cpu_s") for r in ok])
        effm[name], rpsm[name] = eff, med([r.get("rps") for r in ok])
        effs = [r["req_per_cpu_s"] for r in ok if r.get("req_per_cpu_s")]
        res.append((eff or 0, "| {} | {} | {} | {} | {} | {} | **{}** | {} | {} | {} | {} | {} | {} | {} |".format(
            name, ar.short_version(name, vers), len(ok), fmt(rpsm[name], 0),
            fmt(med([r.get("cpu_s") for r in ok]), 2), pct(util),
            fmt(eff, 0), f"{min(effs):,.0f}–{max(effs):,.0f}" if effs else "n/a",
            fmt(med([r.get("rss_kb", 0) / 1024 for r in ok]), 1),
            fmt_ms(med([r.get("p50_ms") for r in ok])), fmt_ms(med([r.get("p99_ms") for r in ok])),
            fmt(med([r.get("errors", 0) for r in ok]), 0), pct(med([r.get("server_util") for r in ok])),
            fmt(med([r.get("other_cores") for r in ok]), 2))))
    lines += [r for _, r in sorted(res, key=lambda x: -x[0])]
    if effm.get("pado"):
        lines += ["", "| ratio (medians) | req per gen CPU-s | req/s |", "|---|---:|---:|"]
        for peer in ("pado_base", "wrk", "k6", "oha"):
            if effm.get(peer):
                lines.append("| pado / {} | **{:.2f}×** | {:.2f}× |".format(
                    peer, effm["pado"] / effm[peer], (rpsm["pado"] or 0) / (rpsm[peer] or 1)))
        missing = [p for p in ("wrk", "k6", "oha") if p not in effm]
        if missing:
            lines.append("")
            lines.append("Not in this run (not installed): " + ", ".join(missing) + ".")
    return "\n".join(lines) + "\n"


MEM_WHAT = {"pado_1vu_think": "pado VU, get + think 1 s (baseline)",
            "pado_1000vu_think": "pado VUs, get + think 1 s", "pado_5000vu_think": "pado VUs, get + think 1 s",
            "pado_1000vu_nothink": "pado VUs, no think time", "wrk_1000c": "wrk connections, no think time",
            "k6_1000vu": "k6 VUs: get + sleep(1)"}


def table_mem(out, vers, allruns):
    rows = runs(os.path.join(out, "mem"))
    if not rows:
        return ""
    m = re.search(r"MEM_DUR=(\d+)", vers.get("params", ""))
    lines = ["### Memory per virtual user ({} s runs against nginx, generator on CPU 1; median of runs)".format(
             m.group(1) if m else "?"), "",
             "| run | users | what a user is | peak RSS MiB | KiB per user (RSS/N) | KiB per user above "
             "1-VU run | req/s | gen CPU s | errors |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    rss = {}
    parsed = {}
    for name, bases in rows.items():
        tool = name.split("_")[0]
        rs = [parse_run(b, tool) for b in bases]
        allruns["mem/" + name] = rs
        parsed[name] = rs
        rss[name] = med([r.get("rss_kb") for r in rs])
    base1 = rss.get("pado_1vu_think")

    def users(name):
        m = re.search(r"_(\d+)(vu|c|u)", name)
        return int(m.group(1)) if m else None

    order = sorted(rows, key=lambda n: (0 if n.startswith("pado") else 1, "nothink" in n, users(n) or 0))
    for name in order:
        n, r = users(name), rss[name]
        above = None
        if name.startswith("pado") and base1 and r and n and n > 1:
            above = (r - base1) / n
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            name, n, MEM_WHAT.get(name, "?"), fmt(r / 1024 if r else None, 1),
            fmt(r / n if r and n else None, 1), fmt(above, 1),
            fmt(med([x.get("rps") for x in parsed[name]]), 0), fmt(med([x.get("cpu_s") for x in parsed[name]]), 2),
            fmt(med([x.get("errors", 0) for x in parsed[name]]), 0)))
    notes = []
    if rss.get("pado_1000vu_think") and rss.get("pado_5000vu_think"):
        notes.append("pado marginal cost per extra VU (5000 vs 1000 VUs, think 1 s): {:.1f} KiB".format(
            (rss["pado_5000vu_think"] - rss["pado_1000vu_think"]) / 4000))
    ref = reference_section("Memory per virtual user")
    if ref:
        notes += ["", "Reference, not this run (REFERENCE.md, anchors.sh on this kind of machine):", "",
                  "| run | users | what a user is | peak RSS MiB | KiB per user | req/s | gen CPU s |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        notes += ["| " + " | ".join(r) + " |" for r in ref]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def table_pace(out, vers, allruns):
    rows = runs(os.path.join(out, "pace"))
    if not rows:
        return ""
    lines = ["### Open-model pacing (pado --rate R, nginx on CPU 0, pado on CPU 1; median of runs)", "",
             "| requested /s | planned s | runs | requests | achieved /s (req / planned s) | error | "
             "req / duration_s | error | steady /s (s 1 to end-1) | duration_s | dropped | late | p50 ms | p99 ms | max ms | VUs used "
             "| gen CPU util | nginx CPU util | errors |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in sorted(rows, key=lambda n: int(re.sub(r"\D", "", n) or 0)):
        bases = rows[name]
        rs = [parse_run(b, "pado") for b in bases]
        plan = read(bases[0] + ".plan").split()
        rate, dur = (float(plan[0]), float(plan[1])) if len(plan) == 2 else (None, None)
        for r in rs:
            if r.get("requests") is not None and rate and dur:
                r["achieved_planned"] = r["requests"] / dur
                r["err_planned"] = r["achieved_planned"] / rate - 1
                if r.get("duration_s"):
                    r["achieved_actual"] = r["requests"] / r["duration_s"]
                    r["err_actual"] = r["achieved_actual"] / rate - 1
        for r, b in zip(rs, bases):
            r["steady_rps"] = steady_rps(b + ".pado", dur)
        allruns["pace/" + name] = rs
        util = med([r["cpu_s"] / r["wall_s"] for r in rs if r.get("wall_s") and r.get("cpu_s") is not None])
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            fmt(rate, 0), fmt(dur, 0), len(rs), fmt(med([r.get("requests") for r in rs]), 0),
            fmt(med([r.get("achieved_planned") for r in rs]), 1),
            signed_pct(med([r.get("err_planned") for r in rs])),
            fmt(med([r.get("achieved_actual") for r in rs]), 1),
            signed_pct(med([r.get("err_actual") for r in rs])),
            fmt(med([r.get("steady_rps") for r in rs]), 0),
            fmt(med([r.get("duration_s") for r in rs]), 3),
            fmt(med([r.get("dropped") for r in rs]), 0), fmt(med([r.get("late") for r in rs]), 0),
            fmt_ms(med([r.get("p50_ms") for r in rs])), fmt_ms(med([r.get("p99_ms") for r in rs])),
            fmt_ms(med([r.get("max_ms") for r in rs])), fmt(med([r.get("vus_max") for r in rs]), 0),
            pct(util), pct(med([r.get("server_util") for r in rs])), fmt(med([r.get("errors", 0) for r in rs]), 0)))
    return "\n".join(lines) + "\n"


CO_DESC = {"pado_r200": ("pado", "open, --rate 200 --max-vus 400"),
           "k6_car200": ("k6", "open, constant-arrival-rate 200/s"),
           "wrk_closed": ("wrk", "closed, 64 conns (post-hoc CO correction)")}


def table_co(out, vers, allruns):
    rows = runs(os.path.join(out, "co"))
    if not rows:
        return ""
    lines = ["### Coordinated-omission test (stall server: ~1 ms normally, ALL responses stalled 1 s every "
             "5 s; 15 s runs; median of runs)", "",
             "| run | model | runs | requests | p50 ms | p90 ms | p99 ms | max ms | share > 100 ms "
             "| server saw stalled | dropped | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
             "| *truth for an open 200 req/s schedule* | 20 % of time stalled | | 3000 | ~1–2 | ~500 | ~950 "
             "| ~1000 | ~18 % | ~20 % | | |"]
    for name in sorted(rows, key=lambda n: list(CO_DESC).index(n) if n in CO_DESC else 99):
        bases = rows[name]
        tool, model = CO_DESC.get(name, (name.split("_")[0], "?"))
        rs = [parse_run(b, tool, slow=True) for b in bases]
        for r, b in zip(rs, bases):
            try:
                r["server"] = json.load(open(b + ".server.json"))
            except (OSError, ValueError):
                pass
        allruns["co/" + name] = rs
        p90, p99 = med([r.get("p90_ms") for r in rs]), med([r.get("p99_ms") for r in rs])
        slow = med([r.get("slow_frac") for r in rs])
        srv = med([r["server"]["stalled_requests"] / r["server"]["requests"]
                   for r in rs if r.get("server", {}).get("requests")])
        if slow is not None:
            good = 0.12 <= slow <= 0.25 and (p99 or 0) >= 700
        else:
            good = (p99 or 0) >= 700 and (p90 or 0) >= 200
        verdict = "close to truth" if good else "under-reports (coordinated omission)"
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            name, model, len(rs), fmt(med([r.get("requests") for r in rs]), 0),
            fmt_ms(med([r.get("p50_ms") for r in rs])), fmt_ms(p90), fmt_ms(p99),
            fmt_ms(med([r.get("max_ms") for r in rs])), fmt(slow * 100 if slow is not None else None, 1, " %"),
            fmt(srv * 100 if srv is not None else None, 1, " %"),
            fmt(med([r.get("dropped") for r in rs]), 0), verdict))
    return "\n".join(lines) + "\n"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/pado-bench-out"
    vers = ar.versions(out)
    allruns = {}
    parts = [table_eff(out, vers, allruns), table_mem(out, vers, allruns),
             table_pace(out, vers, allruns), table_co(out, vers, allruns)]
    load = []
    for ph in ("eff", "mem", "pace", "co"):
        vals = [r.get("other_cores") for k, rs in allruns.items() if k.startswith(ph + "/") for r in rs]
        vals = [v for v in vals if v is not None]
        if vals:
            load.append("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {} |".format(
                ph, len(vals), statistics.median(vals), min(vals), max(vals), sum(v > 0.3 for v in vals)))
    if load:
        parts.append("### Other load during the runs (CPU cores busy with neither the generator nor the server, "
                     "from /proc/stat; 2 cores in all)\n\n| phase | runs | median | min | max | runs > 0.3 |\n"
                     "|---|---:|---:|---:|---:|---:|\n" + "\n".join(load) + "\n")
    if vers:
        parts.append("### Versions and machine\n\n" + "\n".join(f"- {k}: {v}" for k, v in vers.items()) + "\n")
    print("\n".join(p for p in parts if p))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(allruns, f, indent=1, default=str)


if __name__ == "__main__":
    main()

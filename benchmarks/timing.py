"""What the benchmark scripts share: how a call is timed, and which host it ran on."""

import os
import platform
import statistics
import time


def time_call(fn, repeats, min_seconds=0.0, max_seconds=3.0):
    """Median seconds of one call, after a warm-up call (tracing, allocation), and the number of
    calls timed: at least `repeats` calls and `min_seconds`, except that slow methods stop after
    about `max_seconds` (5 calls minimum)."""
    begin = time.perf_counter()
    result = fn()
    if hasattr(result, "numpy"):
        result.numpy()
    first = time.perf_counter() - begin
    repeats = max(min(repeats, 5), int(min(repeats, max_seconds / max(first, 1e-9))))
    samples = []
    start = time.perf_counter()
    while len(samples) < repeats or (
        time.perf_counter() - start < min_seconds and len(samples) < 20 * repeats
    ):
        begin = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - begin)
    return statistics.median(samples), len(samples)


def time_pair(fn, peer, repeats, min_seconds=0.0):
    """Median seconds of one call of `fn` and of `peer`, their calls alternated (after a warm-up
    call of each), so that a shared host's slow spells fall on both: for the ratio of the two.
    Returns (fn's median, peer's median, calls of each)."""
    for f in (fn, peer):
        result = f()
        if hasattr(result, "numpy"):
            result.numpy()
    samples = ([], [])
    start = time.perf_counter()
    while len(samples[0]) < repeats or (
        time.perf_counter() - start < min_seconds and len(samples[0]) < 20 * repeats
    ):
        for f, times in zip((fn, peer), samples, strict=True):
            begin = time.perf_counter()
            f()
            times.append(time.perf_counter() - begin)
    return statistics.median(samples[0]), statistics.median(samples[1]), len(samples[0])


def host():
    """The CPU model and its widest vector extension, as /proc/cpuinfo names them: ratios measured
    on one host do not carry over to another."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    vector = next((v for v in ("avx512f", "avx2", "avx", "sse4_2") if v in flags), "baseline")
    return {"cpu": model, "vector_extension": vector, "cpus": os.cpu_count()}

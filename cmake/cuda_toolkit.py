#!/usr/bin/env python3
"""Lays out a CUDA toolkit folder for clang's --cuda-path from NVIDIA's PyPI packages:

    python cmake/cuda_toolkit.py OUT_DIR

needs nvidia-cuda-nvcc-cu12 (ptxas, libdevice, crt headers), nvidia-cuda-runtime-cu12 (runtime
headers, libcudart.so.12) and nvidia-cuda-cccl-cu12 (<nv/target>, which cuda_fp16.h includes)
installed in this Python. Everything is a symlink into those packages, except `bin/fatbinary`
(cmake/fatbinary.py: the packages have none) and an empty `curand_mtgp32_kernel.h` (clang's
CUDA wrapper includes it; only cuRAND ships it, and nothing here uses it). Prints the CUDA
version (e.g. 12.5) on success; exits 1 naming what is missing otherwise.
"""

import importlib.util
import os
import re
import shutil
import stat
import sys
from pathlib import Path

PACKAGES = {
    "nvidia.cuda_nvcc": "nvidia-cuda-nvcc-cu12",
    "nvidia.cuda_runtime": "nvidia-cuda-runtime-cu12",
    "nvidia.cuda_cccl": "nvidia-cuda-cccl-cu12",
}


def package_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def link(target: Path, link_path: Path) -> None:
    link_path.parent.mkdir(parents=True, exist_ok=True)
    if link_path.is_symlink() or link_path.exists():
        link_path.unlink()
    link_path.symlink_to(target)


def main(out: Path) -> int:
    found = {module: package_dir(module) for module in PACKAGES}
    missing = [PACKAGES[module] for module, path in found.items() if path is None]
    if missing:
        print(f"missing Python packages: {' '.join(missing)}", file=sys.stderr)
        return 1
    nvcc, runtime, cccl = (found[m] for m in PACKAGES)
    ptxas = nvcc / "bin" / "ptxas"
    libcudart = runtime / "lib" / "libcudart.so.12"
    for needed in (ptxas, nvcc / "nvvm" / "libdevice", runtime / "include" / "cuda.h", libcudart):
        if not needed.exists():
            print(f"missing {needed}", file=sys.stderr)
            return 1
    # Wheels do not keep the exec bit on every installer.
    ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    if out.exists():
        shutil.rmtree(out)
    link(ptxas, out / "bin" / "ptxas")
    link(nvcc / "nvvm" / "libdevice", out / "nvvm" / "libdevice")
    headers = [runtime / "include", nvcc / "include", cccl / "include"]
    for folder in headers:
        for entry in folder.iterdir():
            if entry.name not in ("__init__.py", "__pycache__"):
                link(entry, out / "include" / entry.name)
    (out / "include" / "curand_mtgp32_kernel.h").write_text("// empty: see cmake/cuda_toolkit.py\n")
    link(libcudart, out / "lib64" / "libcudart.so.12")
    link(Path("libcudart.so.12"), out / "lib64" / "libcudart.so")

    fatbinary = out / "bin" / "fatbinary"
    writer = Path(__file__).resolve().parent / "fatbinary.py"
    fatbinary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{writer}" "$@"\n')
    fatbinary.chmod(0o755)

    header = (runtime / "include" / "cuda.h").read_text(errors="replace")
    version = int(re.search(r"#define CUDA_VERSION (\d+)", header).group(1))
    print(f"{version // 1000}.{version % 1000 // 10}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(os.path.abspath(sys.argv[1]))))

#!/usr/bin/env python3
"""A stand-in for CUDA's `fatbinary` tool, as clang calls it when it compiles CUDA:

    fatbinary -64 --create OUT --image=profile=sm_70,file=a.cubin --image=profile=compute_90,file=b.s

NVIDIA's PyPI packages for CUDA 12 ship `ptxas` but not `fatbinary`; this writes the same
container (uncompressed) so a CUDA 12 toolkit assembled from PyPI is complete. Each image gets an
entry header followed by its bytes: a cubin as is, PTX text NUL-terminated and padded to 16 bytes.
tests/test_gpu.py compares its cubin entries byte for byte with NVIDIA's tool where one exists.
"""

import re
import struct
import sys

MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
ENTRY_VERSION = 0x0101
FLAGS = 0x11  # 64-bit addresses, Linux host
ELF_HEADER_BYTES, PTX_HEADER_BYTES = 64, 80
PTX_OPTIONS_OFFSET = 64  # the PTX entry's header holds an (empty) options block at this offset
PTX_OPTIONS_MARKER = 0x48


def entry(profile: str, payload: bytes) -> bytes:
    kind, _, number = profile.partition("_")
    arch = int(re.match(r"\d+", number).group())
    if kind == "sm":
        if payload[:4] != b"\x7fELF":
            raise SystemExit(f"fatbinary: {profile} image is not a cubin (ELF)")
        abi = payload[8]  # e_ident[EI_ABIVERSION] of the CUDA ELF
        header = struct.pack("<HHIQII", KIND_ELF, ENTRY_VERSION, ELF_HEADER_BYTES, len(payload), 0, 0)
        header += struct.pack("<HHI", abi, 1, arch) + struct.pack("<QQQQ", 0, FLAGS, 0, 0)
        assert len(header) == ELF_HEADER_BYTES
        return header + payload
    if kind == "compute":
        version = re.search(rb"^\s*\.version\s+(\d+)\.(\d+)", payload, re.MULTILINE)
        if not version:
            raise SystemExit(f"fatbinary: {profile} image has no .version directive (not PTX)")
        major, minor = int(version.group(1)), int(version.group(2))
        text = payload + b"\0" * (16 - len(payload) % 16)
        header = struct.pack(
            "<HHIQII", KIND_PTX, ENTRY_VERSION, PTX_HEADER_BYTES, len(text), 0, PTX_OPTIONS_OFFSET
        )
        header += struct.pack("<HHI", minor, major, arch) + struct.pack("<QQQQ", 0, FLAGS, 0, 0)
        header += struct.pack("<QQ", PTX_OPTIONS_MARKER, 0)
        assert len(header) == PTX_HEADER_BYTES
        return header + text
    raise SystemExit(f"fatbinary: unknown profile {profile!r}")


def main(argv: list[str]) -> int:
    output, images = None, []
    arguments = iter(argv)
    for argument in arguments:
        if argument == "--create":
            output = next(arguments)
        elif argument.startswith("--image=profile="):
            profile, _, path = argument[len("--image=profile=") :].partition(",file=")
            images.append((profile, path))
        elif argument != "-64":
            raise SystemExit(f"fatbinary: unsupported argument {argument!r}")
    if output is None or not images:
        raise SystemExit("usage: fatbinary -64 --create OUT --image=profile=sm_NN,file=F ...")
    body = b""
    for profile, path in images:
        with open(path, "rb") as image:
            body += entry(profile, image.read())
    with open(output, "wb") as out:
        out.write(struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

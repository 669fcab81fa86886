"""This boot's identity, apart from :mod:`.repo` so the lease readers need no libgit2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def boot_id() -> str:
    """Something that changes at every boot, so monotonic readings are never compared across one.

    Linux says it directly; BSDs and macOS give the boot time; elsewhere the
    wall-clock time of boot is derived (rounded, so a restart of the process
    does not change it; a spurious change only delays a take-over).
    """
    try:
        text = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        if text:
            return text
    except OSError:
        pass
    try:
        proc = subprocess.run(
            ["sysctl", "-n", "kern.boottime"], capture_output=True, text=True, timeout=5, check=False
        )
        if proc.returncode == 0 and proc.stdout.strip():
            return "boottime:" + proc.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    booted = time.time() - time.monotonic()
    return f"derived:{int(booted // 600)}"

"""What the host machine offers: the one memory probe of the package.

Bottom layer: no torch, no ``sklearn_ltr`` import. The training memory check asks it for
the host's free memory (CUDA memory is torch's to report) and the command line for the
physical memory before it densifies a file.
"""

from __future__ import annotations

import os

__all__ = ["available_host_memory", "physical_memory"]


def available_host_memory():
    """Bytes of host memory available now, or ``None`` where the platform does not say.

    ``MemAvailable`` of ``/proc/meminfo`` on Linux (what can be allocated without
    swapping, page cache included), else the free physical pages.
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def physical_memory():
    """Bytes of physical memory, or ``None`` where the platform does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None
